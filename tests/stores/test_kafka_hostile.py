"""Kafka records planted behind the store's back with non-ASCII or oversized digits in their keys and
headers: a typed, located error, never a raw ValueError that stops the whole rebuild (spec LIM-8)."""

from __future__ import annotations

from typing import Any

import pytest

from reference_runtime import InputEvent
from reference_runtime.errors import CorruptRecordError
from reference_runtime.records import ActionRef, ActionState, StateRef

from .test_kafka_store import open_store, part, produce_raw, restart

# The fixture that names a fresh topic per test.
from .test_kafka_store import topic as topic


def ref(key: str = "k", seq: int = 0) -> StateRef:
    return StateRef(key, seq, ActionRef("work", "m", "A.work", ("_input_event",)), InputEvent(1), f"{key}-{seq}")


@pytest.mark.parametrize("index", ["\u00b2", "\u0663", "9" * 5000], ids=["superscript", "arabic", "5000-digits"])
def test_call_record_key_with_bad_digits_is_a_typed_error(tansu: str, topic: str, index: str) -> None:
    """LIM-8: 'C|sk|²' used to raise ValueError from int() during rebuild_state."""
    store = open_store(tansu, topic)
    store.put(ref(), ActionState(task_event=ref().event))
    produce_raw(tansu, topic, [(f"C|{ref().state_key}|{index}", b"{}", part("k"))])
    with pytest.raises(CorruptRecordError, match="unknown keys"):
        restart(store)


@pytest.mark.parametrize("seq", ["\u00b2".encode(), ("9" * 5000).encode()], ids=["superscript", "5000-digits"])
def test_unreadable_state_record_with_bad_seq_header_is_located(tansu: str, topic: str, seq: bytes) -> None:
    """LIM-8: the headers of an unreadable state record locate it; a bad seq header is left out, not fatal."""
    store = open_store(tansu, topic)
    store.put(ref("j"), ActionState(task_event=ref("j").event))
    headers = [("key", b"k"), ("seq", seq), ("action", b"work")]
    produce_raw(tansu, topic, [(f"S|{ref().state_key}", b"not a frame", part("k"))], headers)
    again: Any = restart(store)
    try:
        with pytest.raises(CorruptRecordError, match="unreadable action state record") as info:
            again.get(ref())
        assert info.value.key == "k"
        assert again.get(ref("j")) is not None  # the other state is still readable
    finally:
        again.close()
