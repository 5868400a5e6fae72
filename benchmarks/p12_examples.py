"""P12: every example agent the installed flink_agents package ships (``tests/flink_agents/shipped_examples.py``:
the quickstart review agents as a class, over table rows and from YAML, the ReAct agent, product suggestion,
math, parallel chat, RAG, ...), swept at every fault point with its services faked through ``resources``, on
the memory store. Target: a sweep's cost per scenario <= 2x a crash-free run of the same agent; the total is
reported too.

Measured in CPU time (``time.process_time``: the runner's thread and its async pool's threads, which the wall
clock of a shared machine blurs), in interleaved rounds: per round and example, crash-free runs (fresh fakes;
the median of three), the sweep as it runs by default, and the sweep forced to re-execute every scenario
(``re_execute=True``), one after another; each figure is the median over five rounds, and each ratio is taken
within a round. The
examples' own prints (the quickstart's shipping tool prints every time it runs) are silenced.

``floor x`` is what a scenario cannot go below, in crash-free runs: re-executed, the run up to the crash and
the recovery together run every action at least once, plus the sweep's own crash-free run shared out
(1 + 1/points); from snapshots, the checks every such sweep runs first (two crash-free runs and the sampled
point run both ways: at least three runs) shared out (3/points), since a recovery that converges at once costs
next to nothing.

Needs the real package and apache-flink's ``pyflink`` (``scripts/flink-agents-venv.sh`` makes a venv with
both, ~1.3 GB); without them the benchmark says so and measures nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import statistics
import time
from collections.abc import Callable
from typing import Any

from ._util import judge, table, unmeasured

TARGET = "P12 shipped examples, scenario / crash-free run"
BOUND = 2.0  # a sweep's scenario against a crash-free run of the same agent, at most

#: Interleaved rounds per example; each figure is the median over them.
ROUNDS = 5
#: Crash-free runs per round and example, of which the median is the round's crash-free run.
RUNS = 3


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def main() -> list[tuple[str, ...]]:
    missing = [m for m in ("flink_agents", "pyflink") if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"P12 not measured: {' and '.join(missing)} not installed (run scripts/flink-agents-venv.sh: then "
            "`python -m benchmarks` hands P12 to its python, .venv-flink-agents or $DURABLE_FLINK_AGENTS_VENV)"
        )
        unmeasured(TARGET, BOUND, f"{' and '.join(missing)} missing")
        return []
    from reference_runtime import Runner
    from reference_runtime.exploration.sweep import sweep
    from reference_runtime.stores.memory import InMemoryStore
    from tests.flink_agents.shipped_examples import EXAMPLES

    agents = {e.name: e.build() for e in EXAMPLES}
    runs: dict[str, list[float]] = {e.name: [] for e in EXAMPLES}
    sweeps: dict[str, list[float]] = {e.name: [] for e in EXAMPLES}
    ratios: dict[str, list[float]] = {e.name: [] for e in EXAMPLES}
    forced: dict[str, list[float]] = {e.name: [] for e in EXAMPLES}
    walls: list[float] = []
    outcomes: dict[str, list[Any]] = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for example in EXAMPLES:  # warm-up: imports, the examples' plans, first-use caches
            Runner(agents[example.name], resources=example.fakes()).run(example.inputs)
        for _ in range(ROUNDS):
            wall = 0.0
            for example in EXAMPLES:
                agent, inputs = agents[example.name], example.inputs
                run = statistics.median(
                    _cpu(lambda: Runner(agent, resources=example.fakes()).run(inputs))[0]  # noqa: B023
                    for _ in range(RUNS)
                )
                start = time.perf_counter()
                spent, found = _cpu(lambda: sweep(agent, inputs, InMemoryStore, resources=example.fakes()))  # noqa: B023
                wall += time.perf_counter() - start
                again, _ = _cpu(
                    lambda: sweep(agent, inputs, InMemoryStore, re_execute=True, resources=example.fakes())  # noqa: B023
                )
                points = len(found)
                outcomes[example.name] = found
                runs[example.name].append(run)
                sweeps[example.name].append(spent)
                ratios[example.name].append(spent / points / run)
                forced[example.name].append(again / points / run)
            walls.append(wall)
    rows: list[tuple[str, ...]] = [
        (
            "P12 example",
            "points",
            "from snapshots",
            "crash-free ms",
            "sweep s",
            "ms/scenario",
            "x crash-free",
            "floor x",
            "re-executed x",
        )
    ]
    total_cpu, total_points, worst, worst_floor, worst_name = 0.0, 0, 0.0, 0.0, ""
    for example in EXAMPLES:
        name = example.name
        found = outcomes[name]
        points = len(found)
        snapshots = sum(o.start == "snapshot" for o in found)
        spent = statistics.median(sweeps[name])
        ratio = statistics.median(ratios[name])
        floor = 3 / points if snapshots else 1 + 1 / points
        total_cpu += spent
        total_points += points
        if ratio > worst:
            worst, worst_floor, worst_name = ratio, floor, name
        rows.append(
            (
                name,
                str(points),
                f"{snapshots}/{points}",
                f"{statistics.median(runs[name]) * 1e3:.2f}",
                f"{spent:.2f}",
                f"{spent / points * 1e3:.2f}",
                f"{ratio:.2f}",
                f"{floor:.2f}",
                f"{statistics.median(forced[name]):.2f}",
            )
        )
    rows.append(("all examples", str(total_points), "", "", f"{total_cpu:.2f}", "", f"worst {worst:.2f}", "", ""))
    print(table(rows))
    print(f"all sweeps, wall clock: {statistics.median(walls):.2f} s (median of {ROUNDS} rounds; CPU above)")
    judge(f"{TARGET}, worst ({worst_name})", worst, BOUND, floor=worst_floor)
    return rows


if __name__ == "__main__":
    main()
