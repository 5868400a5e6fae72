"""The flink-agents format's call-result rewrites re-encode only the call results (``StateText``); these tests
hold them to the bytes of re-serialising the whole Java model after the same change, which is how the store
wrote every delta before (WIRE-2: the record stays the whole state, byte for byte). No broker."""

from __future__ import annotations

import pytest

from reference_runtime.errors import StoreError
from reference_runtime.records import CallResult, CallStatus
from reference_runtime.serde.actionstate import JavaActionState, JavaCallResult, write_action_state
from reference_runtime.stores.kafka_flink_format import (
    java_model,
    set_call_results,
    state_text,
    truncate_call_results,
)
from tests.vectors import captured_records, cases


def slow_set(java: JavaActionState, index: int, results: list[CallResult]) -> bytes:
    """The whole model edited and re-serialised: what the store wrote for a call-result write before."""
    calls = java.call_results if java.call_results is not None else []
    calls[index : index + len(results)] = [
        JavaCallResult(c.function_id, c.args_digest, c.result_payload, c.exception_payload, c.status and c.status.value)
        for c in results
    ]
    java.call_results = calls
    return write_action_state(java)


def slow_truncate(java: JavaActionState, index: int) -> bytes | None:
    calls = java.call_results or []
    if index >= len(calls):
        return None
    java.call_results = calls[: max(0, index)]
    return write_action_state(java)


#: Call-result writes and truncations, in order: appends, an overwrite in the middle, several at once,
#: a truncation that drops nothing, one that drops some, one below zero, then appends again.
EDITS: list[tuple[str, int, list[CallResult]]] = [
    ("set", 0, [CallResult.pending("tools:search", "d0")]),
    ("set", 0, [CallResult.succeeded("tools:search", "d0", b"\x80\x05K\x01.")]),
    ("set", 1, [CallResult.failed("tools:fetch \u00e9\U0001f600\x01", "d1", b"boom")]),
    ("set", 2, [CallResult.succeeded("f", "d2", b""), CallResult("g", "d3", None, None, None)]),
    ("set", 1, [CallResult.succeeded("h", "d1", b"again")]),
    ("truncate", 9, []),
    ("truncate", 3, []),
    ("set", 3, [CallResult.pending("i", "d4")]),
    ("truncate", -1, []),
    ("set", 0, [CallResult("j", "d5", b"x", b"y", CallStatus.FAILED)]),
]


def starting_values() -> list[bytes]:
    """Record values of every shape the vectors hold: each serialize vector (events of every class, memory
    updates, null lists, completed states) and the records a real 0.2.0 job wrote (upgraded on rewrite)."""
    values = [case["json"].encode("utf-8") for case in cases("actionstate_serialize.jsonl")]
    values += [rec["value_bytes"] for rec in captured_records() if rec["value"] is not None]
    values.append(b'{"taskEvent":null,"callResults":null,"completed":false}')
    return values


@pytest.mark.parametrize("value", starting_values())
def test_call_result_rewrites_give_the_bytes_of_the_whole_model_reserialised(value: bytes) -> None:
    """Every edit of EDITS, applied to the parts and to the whole Java model, gives the same record bytes;
    the parts before an edit are left as they were (the store keeps them until the write is acknowledged)."""
    java = java_model(value)
    text = state_text(value)
    assert text.value() == write_action_state(java)
    for kind, index, results in EDITS:
        before = text.value()
        if kind == "set":
            new = set_call_results(text, index, results)
            want: bytes | None = slow_set(java, index, results)
            assert new.value() == want
        else:
            cut = truncate_call_results(text, index)
            want = slow_truncate(java, index)
            assert (cut.value() if cut is not None else None) == want
            new = cut if cut is not None else text
        assert text.value() == before
        text = new
        # What a restarted store parses back from the record gives the same parts.
        assert state_text(text.value()).value() == text.value()


def test_a_gap_is_refused_and_changes_nothing() -> None:
    """STORE-5: a call index past the end raises, as the whole-model write did."""
    text = state_text(b'{"taskEvent":null,"callResults":[],"completed":false}')
    with pytest.raises(StoreError, match="call index 1 leaves a gap after 0 records"):
        set_call_results(text, 1, [CallResult.pending("f", "d")])
    assert text.calls == []
