"""P13: what an unrelated project pays for having the package installed: a 200-test project that uses no
durable fixture, marker or option, run by pytest with and without the package's pytest plugins, side by
side (PLG-19).

Every run is a fresh ``python -m pytest -q`` process on the same project, with every plugin installed in
this environment loaded as pytest loads them (entry points):

* ``without the package``: ``-p no:durable -p no:hypothesispytest`` blocks the two plugins installing the
  package brings (its own and Hypothesis', a dependency): what the project pays where the package is not
  installed;
* ``with the package``: nothing blocked;
* ``Hypothesis' plugin alone``: ``-p no:durable``, what Hypothesis' plugin costs when nothing skips its
  idle summary: the price the package paid before PLG-19.

Interpreter start-up is in every figure. The configurations alternate within each round, and the cost is
the median over the rounds of the paired difference, so machine load drifting between rounds cancels.
The output of the run with the package must hold no ``durable`` line.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._util import table

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


def run(root: Path, extra: list[str]) -> tuple[float, str]:
    """(wall seconds, output) of one pytest process on the project."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
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
    return elapsed, done.stdout


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="p13-") as tmp:
        root = Path(tmp)
        make_project(root)
        times: dict[str, list[float]] = {name: [] for name in CONFIGS}
        for _ in range(ROUNDS):
            for name, extra in CONFIGS.items():
                elapsed, out = run(root, extra)
                times[name].append(elapsed)
                if name == "with the package":
                    lines = [line for line in out.splitlines() if line.startswith("durable")]
                    assert not lines, f"an unrelated project saw {lines}"
    base = times["without the package"]
    rows = [["configuration", "median s", "best s", "paired cost s (median)"]]
    for name, ts in times.items():
        cost = statistics.median(t - b for t, b in zip(ts, base, strict=True))
        rows.append([name, f"{statistics.median(ts):.3f}", f"{min(ts):.3f}", "-" if ts is base else f"{cost:+.3f}"])
    print(f"{TESTS} trivial tests, {ROUNDS} rounds, each a fresh pytest process")
    print(table(rows))
    cost = statistics.median(t - b for t, b in zip(times["with the package"], base, strict=True))
    verdict = "met" if cost <= TARGET else "NOT met"
    print(f"with the package: {cost:+.3f} s per run, no durable line (target <= {TARGET} s: {verdict})")


if __name__ == "__main__":
    main()
