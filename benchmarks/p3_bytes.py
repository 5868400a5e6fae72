"""P3: bytes persisted for one action with K = 1 000 durable calls: call records as deltas (ours)
against rewriting the whole state on every call (what a whole-record store such as Flink's Kafka
store does)."""

from __future__ import annotations

from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.durable import ActionExecution
from reference_runtime.events import InputEvent
from reference_runtime.records import ActionRef, ActionState, StateRef
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import encode_call_result, encode_state

from ._util import table

K = 1000
REF = StateRef("k", 0, ActionRef("a", "m", "A.a", ("_input_event",)), InputEvent(0), "k-0-a")


def work(i: int) -> dict[str, int]:
    return {"i": i, "square": i * i}


def whole_state_size(state: ActionState) -> int:
    try:
        from reference_runtime.serde.action_state import serialize_action_state

        return len(serialize_action_state(state))
    except ImportError:
        return len(encode_state(state)) + sum(len(encode_call_result(r)) for r in state.call_results)


def main() -> list[tuple[str, ...]]:
    store = InMemoryStore(count_bytes=True)
    state = ActionState(task_event=REF.event)
    store.put(REF, state)
    start = store.bytes_written
    ex = ActionExecution(REF, store, CloudpickleCodec(), state)
    rewrite = 0
    for i in range(K):
        ex.execute(work, (i,), {})
        rewrite += whole_state_size(state)
    ours = store.bytes_written - start
    rows: list[tuple[str, ...]] = [
        ("P3 bytes for K=1000 calls", "bytes", "ratio"),
        ("delta per call (ours)", f"{ours:,}", "1"),
        ("rewrite whole state per call", f"{rewrite:,}", f"{rewrite / ours:.0f}"),
    ]
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
