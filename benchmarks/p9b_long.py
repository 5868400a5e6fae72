"""P9b: a full sweep of a long agent, one action making N = 5 000 durable calls (15 003 fault points), on the
memory store. CPU time of this process. Target: <= 10 s, verdicts unchanged.

Each scenario starts from a snapshot (PLG-16), shares its recovery with the points whose store is the same
(COST-4: N + 1 recoveries) and stops where its recovery converges on the crash-free run (COST-7), right
after re-running the crashed call. What is left cannot be skipped: the agent's code cannot be resumed
mid-function, so the recovery of a crash at call c replays calls 0 .. c-1 before it gets there, and a sweep
replays N (N + 1) / 2 calls in all (12.5 million at N = 5 000). The floor row is that many replays at the
rate this runtime replays a recorded call (a recovery that replays all N calls and completes), plus one
crash-free run per recovery's re-run call; ``python -m benchmarks p9b`` takes a few minutes.
"""

from __future__ import annotations

import time

from pytest_durable.sweep import sweep
from reference_runtime import Runner
from reference_runtime.exploration import snapshot_start as snap
from reference_runtime.faults import Phase
from reference_runtime.stores.memory import InMemoryStore

from ._util import table
from .p9_sweep import Many

CALLS = 5000


def replay_per_call(calls: int) -> float:
    """CPU seconds per replayed call: a recovery from the store holding all ``calls`` records (the crash-free
    run's store just before its action completes)."""
    ref = snap.record(Many, [("k", calls)], InMemoryStore, None, {})
    before_complete = next(m for p, m in ref.injector.marks.items() if p.phase is Phase.BEFORE_COMPLETE)
    best = float("inf")
    for _ in range(3):
        store = InMemoryStore()
        ref.log.replay(store, before_complete.store)
        runner = Runner(Many, store)
        runner.fail_over()
        start = time.process_time()
        runner.run([("k", calls)])
        best = min(best, time.process_time() - start)
    return best / calls


def main() -> list[tuple[str, ...]]:
    replay = replay_per_call(CALLS)
    start = time.process_time()
    Runner(Many, InMemoryStore()).run([("k", CALLS)])
    run = time.process_time() - start
    start = time.process_time()
    outcomes = sweep(Many, [("k", CALLS)], InMemoryStore)
    elapsed = time.process_time() - start
    assert all(o.ok for o in outcomes), [o.violations for o in outcomes if not o.ok][:1]
    replays = CALLS * (CALLS + 1) // 2
    floor = replays * replay + run
    rows: list[tuple[str, ...]] = [
        ("P9b full sweep", "calls", "points", "CPU s", "x floor"),
        (
            "sweep (snapshots, shared, converging)",
            str(CALLS),
            str(len(outcomes)),
            f"{elapsed:.1f}",
            f"{elapsed / floor:.2f}",
        ),
        (f"floor: {replays:,} replays at {replay * 1e6:.2f} µs + a run", str(CALLS), "", f"{floor:.1f}", "1.00"),
        ("one crash-free run", str(CALLS), "", f"{run:.3f}", ""),
    ]
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
