"""P13: what an unrelated project pays for having the package installed: a 200-test project that uses no
durable fixture, marker or option, run by pytest with and without the package's pytest plugins, side by
side (PLG-21).

Every run is a fresh ``python -m pytest -q`` process on the same project, with every plugin installed in
this environment loaded as pytest loads them (entry points):

* ``without the package``: ``-p no:durable -p no:hypothesispytest`` blocks the two plugins installing the
  package brings (its own and Hypothesis', a dependency): what the project pays where the package is not
  installed;
* ``with the package``: nothing blocked;
* ``Hypothesis' plugin alone``: ``-p no:durable``, what Hypothesis' plugin costs when nothing skips its
  idle summary: the price the package paid before PLG-21.

Interpreter start-up is in every figure. Each run's CPU time (user + system of the pytest process) is what
it pays; its wall time is shown beside it, but on a shared machine waiting for a core swamps a difference of
tens of milliseconds, so the verdict is on CPU time. The configurations alternate within each round, and
the cost is the median over the rounds of the paired difference, so load drifting between rounds cancels.
The output of the run with the package must hold no ``durable`` line.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._util import judge, table

TESTS = 200
ROUNDS = 15
TARGET = 0.05  # seconds over the run without the package

CONFIGS = {
    "without the package": ["-p", "no:durable", "-p", "no:hypothesispytest"],
    "with the package": [],
    "Hypothesis' plugin alone": ["-p", "no:durable"],
}


def make_project(root: Path) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    body = "\n".join(f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n" for i in range(TESTS))
    (root / "test_unrelated.py").write_text(body)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(root: Path, extra: list[str]) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, output) of one pytest process on the project."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    assert done.returncode == 0 and f"{TESTS} passed" in done.stdout, done.stdout + done.stderr
    return _children_cpu() - cpu, elapsed, done.stdout


def _paired(ts: list[float], base: list[float]) -> float:
    return statistics.median(t - b for t, b in zip(ts, base, strict=True))


def main() -> None:
    cpu: dict[str, list[float]] = {name: [] for name in CONFIGS}
    wall: dict[str, list[float]] = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="p13-") as tmp:
        root = Path(tmp)
        make_project(root)
        for _ in range(ROUNDS):
            for name, extra in CONFIGS.items():
                spent, elapsed, out = run(root, extra)
                cpu[name].append(spent)
                wall[name].append(elapsed)
                if name == "with the package":
                    lines = [line for line in out.splitlines() if line.startswith("durable")]
                    assert not lines, f"an unrelated project saw {lines}"
    base = "without the package"
    rows = [["configuration", "CPU s (median)", "paired CPU cost s", "wall s (median)", "paired wall cost s"]]
    for name in CONFIGS:
        same = name == base
        rows.append(
            [
                name,
                f"{statistics.median(cpu[name]):.3f}",
                "-" if same else f"{_paired(cpu[name], cpu[base]):+.3f}",
                f"{statistics.median(wall[name]):.3f}",
                "-" if same else f"{_paired(wall[name], wall[base]):+.3f}",
            ]
        )
    print(f"{TESTS} trivial tests, {ROUNDS} rounds, each a fresh pytest process")
    print(table(rows))
    cost = _paired(cpu["with the package"], cpu[base])
    verdict = judge("P13 unrelated project with the package installed, CPU", cost, TARGET, " s", digits=3)
    print(f"with the package: {cost:+.3f} s CPU per run, no durable line (target <= {TARGET} s: {verdict})")


if __name__ == "__main__":
    main()
