"""P12: every example agent the installed flink_agents package ships (``tests/flink_agents/shipped_examples.py``:
the quickstart review agents as a class, over table rows and from YAML, the ReAct agent, product suggestion,
math, parallel chat, RAG, ...), swept at every fault point with its services faked through ``resources``, on
the memory store. Per agent: one crash-free run (best of three, fresh fakes each), the whole sweep, and the
sweep's cost per scenario against that run. Target: a scenario <= 2x a crash-free run of the same agent; the
total is reported too.

Needs the real package and apache-flink's ``pyflink`` (``scripts/flink-agents-venv.sh`` makes a venv with
both, ~1.3 GB); without them the benchmark says so and measures nothing.
"""

from __future__ import annotations

import importlib.util
import time

from ._util import table


def main() -> list[tuple[str, ...]]:
    missing = [m for m in ("flink_agents", "pyflink") if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"P12 not measured: {' and '.join(missing)} not installed (run scripts/flink-agents-venv.sh and "
            "`python -m benchmarks p12` with its python)"
        )
        return []
    from reference_runtime import Runner
    from reference_runtime.exploration.sweep import sweep
    from reference_runtime.stores.memory import InMemoryStore
    from tests.flink_agents.shipped_examples import EXAMPLES

    rows: list[tuple[str, ...]] = [("P12 example", "points", "crash-free ms", "sweep s", "ms/scenario", "x crash-free")]
    total_sweep, total_points = 0.0, 0
    for example in EXAMPLES:
        agent = example.build()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            Runner(agent, resources=example.fakes()).run(example.inputs)
            best = min(best, time.perf_counter() - start)
        start = time.perf_counter()
        outcomes = sweep(agent, example.inputs, InMemoryStore, resources=example.fakes())
        elapsed = time.perf_counter() - start
        per = elapsed / max(1, len(outcomes))
        total_sweep += elapsed
        total_points += len(outcomes)
        rows.append(
            (
                example.name,
                str(len(outcomes)),
                f"{best * 1e3:.2f}",
                f"{elapsed:.2f}",
                f"{per * 1e3:.2f}",
                f"{per / best:.2f}",
            )
        )
    rows.append(("all examples", str(total_points), "", f"{total_sweep:.2f}", "", ""))
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
