"""P2: replay cost per recorded call at K = 10, 1 000 and 10 000 records; it must stay flat."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.durable import ActionExecution
from reference_runtime.events import InputEvent
from reference_runtime.records import ActionRef, ActionState, StateRef
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.sqlite import SqliteStore

from ._util import judge, point, table

REF = StateRef("k", 0, ActionRef("a", "m", "A.a", ("_input_event",)), InputEvent(0), "k-0-a")


def work(i: int) -> int:
    return i + 1


def per_call_replay(store: Any, k: int) -> float:
    codec = CloudpickleCodec()
    state = ActionState(task_event=REF.event)
    store.put(REF, state)
    ex = ActionExecution(REF, store, codec, state)
    for i in range(k):
        ex.execute(work, (i,), {})
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        loaded = store.get(REF)  # recovery reads the records once, then replays call by call
        replay = ActionExecution(REF, store, codec, loaded)
        for i in range(k):
            replay.execute(work, (i,), {})
        best = min(best, time.perf_counter() - start)
        assert all(e.source == "replayed" for e in replay.journal)
    return best / k


def main() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("P2 replay", "K", "µs/call", "x K=10")]
    with tempfile.TemporaryDirectory() as d:
        for name, make in (
            ("memory", lambda k: InMemoryStore()),
            ("sqlite", lambda k: SqliteStore(Path(d) / f"r{k}.db", synchronous="OFF")),
        ):
            base = None
            for k in (10, 1000, 10000):
                t = per_call_replay(make(k), k)
                base = base or t
                rows.append((name, str(k), f"{t * 1e6:.1f}", f"{t / base:.2f}"))
                point(
                    "P2 replay per call by recorded calls",
                    name,
                    k,
                    t * 1e6,
                    xlabel="recorded calls K",
                    ylabel="µs/call",
                )
            judge(f"P2 replay per call, {name} store, K=10 000 / K=10", t / base, 1.5)
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
