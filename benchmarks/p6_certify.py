"""P6: wall time of a full certification of the SQLite store (``durable certify``, the embedded default)
in one process and on two pytest-xdist workers (``-n 2``), measured side by side in the same run, and
beside it the kit's mutation score: the share of the broken backends of tests/conformance/mutants that a
check citing the violated clause kills (the mutation suite, run once on two workers).

Each certification is a fresh ``python -m conformance.certify`` process (what ``durable certify`` runs),
so interpreter start-up and, with ``-n 2``, worker start-up are included. Same seed for both modes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from ._util import table

REPEATS = 3
SEED = "1"


def certify(workers: int | None) -> tuple[float, int]:
    """One certification: (wall seconds, number of checks in the report)."""
    with tempfile.TemporaryDirectory(prefix="p6-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "conformance.certify", "--report", str(report), "--seed", SEED]
        if workers:
            cmd += ["-n", str(workers)]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=tmp)
        elapsed = time.perf_counter() - start
        doc = json.loads(report.read_text())
        assert doc["level"] == "FULL", doc["level"]
        return elapsed, len(doc["checks"])


ROOT = Path(__file__).resolve().parents[1]


def mutation_score() -> tuple[int, int, float]:
    """(killed, mutants, wall seconds) of the mutation suite on two workers."""
    with tempfile.TemporaryDirectory(prefix="p6-") as tmp:
        junit = Path(tmp) / "mutants.xml"
        cmd = [sys.executable, "-m", "pytest", str(ROOT / "tests" / "conformance" / "test_mutants.py"), "-q",
               "-n", "2", "-p", "no:randomly", "-k", "killed_by_a_check", f"--junitxml={junit}"]
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, cwd=ROOT)
        elapsed = time.perf_counter() - start
        cases = ET.parse(junit).getroot().iter("testcase")
        outcomes = [not any(c.tag in ("failure", "error", "skipped") for c in case) for case in cases]
        return sum(outcomes), len(outcomes), elapsed


def main() -> None:
    one: list[float] = []
    two: list[float] = []
    checks = 0
    for _ in range(REPEATS):  # interleaved, so drifting machine load hits both modes alike
        t, checks = certify(None)
        one.append(t)
        t, _ = certify(2)
        two.append(t)
    best_one, best_two = min(one), min(two)
    rows = [("mode", "best wall (s)", "all runs (s)"),
            ("durable certify", f"{best_one:.2f}", " ".join(f"{t:.2f}" for t in one)),
            ("durable certify -n 2", f"{best_two:.2f}", " ".join(f"{t:.2f}" for t in two))]
    print(f"SQLite store in a temporary directory, {checks} checks, best of {REPEATS}, {os.cpu_count()} CPUs")
    print(table(rows))
    print(f"speed-up with -n 2: {best_one / best_two:.2f}x (below 1: worker start-up outweighs the checks)")
    killed, mutants, wall = mutation_score()
    print(f"mutation score: {killed}/{mutants} mutants killed by a check citing their clause "
          f"({100 * killed / max(mutants, 1):.0f} %), mutation suite {wall:.1f} s on 2 workers")


if __name__ == "__main__":
    main()
