"""States and comparisons the store checks share: the kit's state references, type-exact comparison of
action states, and tagged sample states."""

from __future__ import annotations

import unicodedata
import uuid
from typing import Any

from reference_runtime.events import Event, InputEvent
from reference_runtime.records import ActionRef, ActionState, CallResult, MemoryUpdate, StateRef
from reference_runtime.state_keys import java_state_key
from reference_runtime.stores.base import ActionStateStore

ACTION = ActionRef("work", "conformance", "Agent.work", ("_input_event",))
OTHER = ActionRef("other", "conformance", "Agent.other", ("_input_event",))

#: ``café`` composed (NFC, 4 code points) and decomposed (NFD, 5): canonically equivalent, distinct keys.
CAFE_NFC = unicodedata.normalize("NFC", "café")
CAFE_NFD = unicodedata.normalize("NFD", "café")
#: Business keys that break naive stores: prefixes of one another, separators, SQL/glob wildcards,
#: non-ASCII and astral characters, canonically equivalent spellings, an empty key.
AWKWARD_KEYS = ("a", "ab", "a_0", "a|0", "a%", "a*", "A", "ключ", "键🔑", "a b", CAFE_NFC, CAFE_NFD, "")


def ref(key: str, seq: int, action: ActionRef = ACTION) -> StateRef:
    return StateRef(key, seq, action, InputEvent(f"{key}/{seq}"), f"{key}|{seq}|{action.name}")


def java_ref(key: str, seq: int, action: ActionRef = ACTION) -> StateRef:
    """:func:`ref` with the state key a runtime files the state under (``{key}_{seq}_{event}_{action}``,
    spec KEY-1): a business key holding ``_`` makes it ambiguous to split, which a store must never do."""
    event = InputEvent(f"{key}/{seq}")
    return StateRef(key, seq, action, event, java_state_key(key, seq, action, event))


def typed(value: Any) -> Any:
    """A comparable form that keeps what ``==`` forgets: ``True`` is not ``1``, ``1.0`` is not ``1``,
    ``-0.0`` is not ``0.0``, ``b"x"`` is not ``"x"``, a tuple is not a list, NaN equals NaN."""
    if value is None or isinstance(value, bool | int | str | bytes):
        return (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, list | tuple):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", sorted(((typed(k), typed(v)) for k, v in value.items()), key=repr))
    if isinstance(value, Event):
        return (
            "event",
            value.type,
            str(value.id),
            typed(value.attributes),
            value.java_class,
            value.upstream_event_id,
            value.upstream_action_name,
        )
    if isinstance(value, MemoryUpdate):
        return ("update", typed(value.path), typed(value.value), value.object_creation)
    if isinstance(value, CallResult):
        return (
            "call",
            typed(value.function_id),
            typed(value.args_digest),
            typed(value.result_payload),
            typed(value.exception_payload),
            None if value.status is None else value.status.value,
        )
    if isinstance(value, ActionState):
        return {
            "task_event": typed(value.task_event),
            "sensory_memory_updates": typed(value.sensory_memory_updates),
            "short_term_memory_updates": typed(value.short_term_memory_updates),
            "output_events": typed(value.output_events),
            "call_results": typed(value.call_results),
            "completed": value.completed,
        }
    return ("other", repr(value))


def same_state(cid: str, where: str, expected: ActionState, got: ActionState | None) -> None:
    """Fail with ``cid`` and the first differing field unless ``got`` equals ``expected`` type-exactly."""
    assert got is not None, f"{cid}: {where}: expected the stored state, got None (a miss)"
    want, have = typed(expected), typed(got)
    for field in want:
        if want[field] != have[field]:
            raise AssertionError(
                f"{cid}: {where}: field {field} differs\n  expected {getattr(expected, field)!r}"
                f"\n  got      {getattr(got, field)!r}"
            )


def calls_of(cid: str, where: str, got: ActionState | None) -> list[tuple[str, str, bytes | None, str]]:
    assert got is not None, f"{cid}: {where}: expected the stored state, got None (a miss)"
    return [(c.function_id, c.args_digest, c.result_payload, c.effective_status.value) for c in got.call_results]


def present(cid: str, store: ActionStateStore, r: StateRef, expected: bool, why: str) -> None:
    got = store.get(r)
    assert (got is not None) == expected, (
        f"{cid}: ({r.key!r}, seq {r.seq}, {r.action.name}) {why}: expected "
        f"{'the state' if expected else 'a miss (None)'}, got {'None' if got is None else 'a state'}"
    )


def tagged(tag: str, calls: int = 1) -> ActionState:
    """A small state whose every part names ``tag``, so a mix-up between states is visible."""
    return ActionState(
        task_event=InputEvent(tag, id=uuid.uuid5(uuid.NAMESPACE_URL, tag)),
        short_term_memory_updates=[MemoryUpdate("tag", tag)],
        call_results=[CallResult.succeeded(f"f{i}", tag, tag.encode()) for i in range(calls)],
    )


def fidelity_values() -> dict[str, Any]:
    """Values memory may hold (MEM-2), chosen to break lossy encodings."""
    return {
        "bool": True,
        "false": False,
        "one": 1,
        "one_float": 1.0,
        "zero": 0,
        "neg_zero": -0.0,
        "big": 2**64 + 1,
        "neg_big": -(2**63) - 1,
        "huge": 10**40,
        "pi": 3.141592653589793,
        "tiny": 5e-324,
        "max": 1.7976931348623157e308,
        "inf": float("inf"),
        "ninf": float("-inf"),
        "none": None,
        "empty_str": "",
        "empty_bytes": b"",
        "empty_list": [],
        "empty_dict": {},
        "str_not_bytes": "abc",
        "bytes_not_str": b"abc",
        "all_bytes": bytes(range(256)),
        "unicode": "ünïcödé ключ 键 🔑 \u0301e \u200d",
        "nul": "a\x00b",
        "newline": "l1\nl2\r\n\t",
        "quotes": "\"\\'{}[]",
        "int_like": "1",
        "float_like": "1.0",
        "null_like": "null",
        "nested": {"a": [1, [2, [3, {"b": None}]]], "1": "int-like key", "": "empty key", "ä.b": [b"\xff"]},
        "list_of_mixed": [True, 1, 1.0, "1", b"1", None, [], {}],
    }
