"""P6: wall time of a full certification of the SQLite store (``durable certify``, the embedded default)
in one process and on two pytest-xdist workers (``-n 2``), measured side by side in the same run, and
beside it the kit's mutation score: the share of the broken backends of tests/conformance/mutants that a
check citing the violated clause kills (the mutation suite, run once on two workers).

Each certification is a fresh ``python -m pytest_durable.cli certify`` process (what ``durable certify`` runs),
so interpreter start-up and, with ``-n 2``, worker start-up are included. Same seed for both modes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

from ._util import BURN_SUITE, MET, judge, record, table

REPEATS = 3
SEED = "1"


_FORCED = "from conformance import factory_from_url\n\n\ndef make():\n    return factory_from_url('sqlite:')\n"


def certify(workers: int | None, forced: bool = False) -> tuple[float, int]:
    """One certification: (wall seconds, number of checks in the report). ``forced`` names the SQLite store
    through a ``--backend`` factory, so ``-n`` really starts workers (an in-process store ignores it)."""
    with tempfile.TemporaryDirectory(prefix="p6-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pytest_durable.cli", "certify", "--report", str(report), "--seed", SEED]
        if forced:
            (Path(tmp) / "forced.py").write_text(_FORCED)
            cmd += ["--backend", "forced:make"]
        if workers:
            cmd += ["-n", str(workers)]
        start = time.perf_counter()
        subprocess.run(
            cmd,
            check=True,
            capture_output=True,
            cwd=tmp,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), tmp])},
        )
        elapsed = time.perf_counter() - start
        doc = json.loads(report.read_text())
        assert doc["level"] == "FULL", doc["level"]
        return elapsed, len(doc["checks"])


ROOT = Path(__file__).resolve().parents[1]


def same_command() -> bool:
    """Whether ``durable certify -n 2`` of the embedded default runs pytest with exactly the arguments of one
    process (CONF-7: the in-process store's suite stays in the certifying process): then it cannot be slower
    but by the noise between two runs of one command, which the timed ratio below measures."""
    from conformance.certification import Backend, _pytest_args
    from reference_runtime.stores.factory import StoreFactory

    with tempfile.TemporaryDirectory(prefix="p6-args-") as tmp:
        backend = Backend.of("sqlite:", Path(tmp))
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # the note saying -n is ignored
                two = _pytest_args(backend, 2, int(SEED), None, None, 0)
            one = _pytest_args(backend, None, int(SEED), None, None, 0)
        finally:
            if isinstance(backend.factory, StoreFactory):
                backend.factory.cleanup()
    return one == two


class Run(NamedTuple):
    wall: float
    cpu: float
    """CPU seconds of the pytest process and its workers (user + system)."""
    cases: list[tuple[str, float, bool]]
    """(test, seconds, passed) from its JUnit report."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _pytest(args: list[str], cwd: Path) -> Run:
    """Run pytest in a fresh process and wait for it."""
    with tempfile.TemporaryDirectory(prefix="p6-") as tmp:
        junit = Path(tmp) / "report.xml"
        cpu = _children_cpu()
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pytest", *args, "-q", "-p", "no:randomly", f"--junitxml={junit}"],
            capture_output=True,
            cwd=cwd,
        )
        elapsed = time.perf_counter() - start
        cpu = _children_cpu() - cpu
        cases = [
            (
                case.get("name", ""),
                float(case.get("time", 0)),
                not any(c.tag in ("failure", "error", "skipped") for c in case),
            )
            for case in ET.parse(junit).getroot().iter("testcase")
        ]
        return Run(elapsed, cpu, cases)


_MUTANTS = ["tests/conformance/test_mutants.py", "-k", "killed_by_a_check"]


def mutation_suite(workers: int, dist: str = "load") -> Run:
    """The kit's mutation suite (one nested pytest session per broken backend) in one process or on
    ``workers`` pytest-xdist workers with ``--dist dist``: (wall seconds, per-test results)."""
    parallel = ["-n", str(workers), "--dist", dist] if workers > 1 else []
    return _pytest([*_MUTANTS, *parallel], ROOT)


def startup(workers: int) -> Run:
    """Wall seconds of the same command collecting the suite and running nothing: interpreter, plugins,
    collection and, with workers, starting them (what a parallel run pays before its first test)."""
    parallel = ["-n", str(workers)] if workers > 1 else []
    return _pytest([*_MUTANTS, "-k", "killed_by_a_check and not killed_by_a_check", *parallel], ROOT)


def synthetic(workers: int, count: int, seconds: float) -> float:
    """The floor: a CPU-bound suite of ``count`` tests of ``seconds`` of CPU each, in one process or on
    ``workers`` workers; its speedup is the best a suite of that length gets on this machine."""
    with tempfile.TemporaryDirectory(prefix="p6-floor-") as tmp:
        (Path(tmp) / "test_floor.py").write_text(BURN_SUITE.format(count=count, seconds=seconds))
        (Path(tmp) / "conftest.py").write_text("")
        parallel = ["-n", str(workers)] if workers > 1 else []
        return _pytest(["-p", "no:cacheprovider", "test_floor.py", *parallel], Path(tmp)).wall


def mutation_rows() -> list[tuple[str, ...]]:
    """The mutation suite in one process and on 2 workers (two distribution modes) beside its start-up and
    the synthetic floor, interleaved as one block so load hits them alike."""
    one = mutation_suite(1)
    two = mutation_suite(2)
    steal = mutation_suite(2, "worksteal")
    start1, start2 = startup(1), startup(2)
    count = len(one.cases)
    # The floor does the same CPU work as the suite's tests (its CPU beyond start-up), spread evenly.
    work = max(one.cpu - start1.cpu, 0.1)
    floor1 = synthetic(1, count, work / count)
    floor2 = synthetic(2, count, work / count)
    killed = sum(ok for _, _, ok in two.cases)
    longest = max(one.cases, key=lambda c: c[1])
    in_tests = sum(t for _, t, _ in one.cases)
    best2 = min(two.wall, steal.wall)
    print(
        f"mutation score: {killed}/{len(two.cases)} mutants killed by a check citing their clause "
        f"({100 * killed / max(len(two.cases), 1):.0f} %)"
    )
    rows: list[tuple[str, ...]] = [
        ("P6 the kit's mutation suite", "wall s", "x one process"),
        (f"one process ({count} tests: {in_tests:.1f} s in tests, {one.cpu:.1f} s CPU)", f"{one.wall:.1f}", "1.00"),
        ("-n 2 (--dist load)", f"{two.wall:.1f}", f"{one.wall / two.wall:.2f}"),
        ("-n 2 --dist worksteal", f"{steal.wall:.1f}", f"{one.wall / steal.wall:.2f}"),
        ("start-up, no test run: one process / -n 2", f"{start1.wall:.1f} / {start2.wall:.1f}", ""),
        (f"longest test ({longest[0].split('[')[-1].rstrip(']')})", f"{longest[1]:.1f}", ""),
        (f"floor: synthetic CPU-bound suite, {count} tests, {work:.1f} s CPU, one process", f"{floor1:.1f}", "1.00"),
        ("floor: the same on -n 2", f"{floor2:.1f}", f"{floor1 / floor2:.2f}"),
        ("ours (best -n 2) / floor, speedup over speedup", "", f"{(one.wall / best2) / (floor1 / floor2):.2f}"),
    ]
    print(table(rows))
    judge(
        "P6 kit mutation suite, mutants killed",
        100 * killed / max(len(two.cases), 1),
        100,
        " %",
        at_least=True,
        digits=0,
    )
    return rows


def main() -> None:
    one: list[float] = []
    two: list[float] = []
    forced: list[float] = []
    checks = 0
    for _ in range(REPEATS):  # interleaved, so drifting machine load hits both modes alike
        t, checks = certify(None)
        one.append(t)
        t, _ = certify(2)
        two.append(t)
        t, _ = certify(2, forced=True)
        forced.append(t)
    best_one, best_two, best_forced = min(one), min(two), min(forced)
    rows = [
        ("mode", "best wall (s)", "all runs (s)"),
        ("durable certify", f"{best_one:.2f}", " ".join(f"{t:.2f}" for t in one)),
        ("durable certify -n 2 (runs in-process, CONF-7)", f"{best_two:.2f}", " ".join(f"{t:.2f}" for t in two)),
        ("the same checks forced onto 2 workers", f"{best_forced:.2f}", " ".join(f"{t:.2f}" for t in forced)),
    ]
    print(f"SQLite store in a temporary directory, {checks} checks, best of {REPEATS}, {os.cpu_count()} CPUs")
    print(table(rows))
    judge("P6 durable certify of SQLite", best_one, 60, " s")
    same = same_command()
    if same:
        # One command run twice: the ratio is their noise, so the target is judged on the command (CONF-7).
        verdict = "the same pytest command as one process, so never slower: met (the ratio is their noise)"
        record("P6 certify -n 2 / one process", "never slower", f"{best_one / best_two:.2f}x, the same command", MET)
    else:
        verdict = judge("P6 certify -n 2 / one process", best_one / best_two, 1, at_least=True)
    print(
        f"-n 2 against one process: {best_one / best_two:.2f}x (target: never below 1; {verdict}); forced onto "
        f"workers {best_one / best_forced:.2f}x (worker start-up outweighs a suite this short)"
    )
    mutation_rows()


if __name__ == "__main__":
    main()
