"""Typed events survive recovery (spec EVT-1..EVT-3)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from reference_runtime import CrashAt, Event, FaultInjector, InputEvent, Phase, Runner, ToolResponseEvent
from reference_runtime.errors import EventClassError
from reference_runtime.records import ActionState
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import decode_state, encode_state
from reference_runtime.stores.sqlite import SqliteStore

from .typed_event_agent import Priced, TypedChain

INPUTS = [("k", "book"), ("k", "pen")]


def _store(kind: str, path: Path) -> ActionStateStore:
    return InMemoryStore() if kind == "memory" else SqliteStore(path)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_skipped_action_re_emits_its_events_with_their_classes(kind: str, tmp_path: Path) -> None:
    """EVT-1: after a crash right after `quote` completed, recovery skips `quote` and hands its stored
    output events to `bill` and `answer`: they must still be a Priced and a ToolResponseEvent (before
    the fix they came back as base Event and `event.price` / `event.responses` raised)."""
    baseline = Runner(TypedChain, _store(kind, tmp_path / "a.db")).run(INPUTS)
    injector = FaultInjector([CrashAt(Phase.AFTER_COMPLETE, action="quote")])
    crashed = Runner(TypedChain, _store(kind, tmp_path / "b.db"), injector=injector).run(INPUTS)
    assert injector.fired, "the crash never happened"
    assert crashed.outputs == baseline.outputs
    assert baseline.outputs["k"][0] == {"price": 40, "currency": "EUR"}


def test_stored_events_come_back_with_class_and_fields() -> None:
    """EVT-1: the native encoding gives back the same class, attributes, id and instance fields."""
    events: list[Event] = [
        Priced("book", 40),
        ToolResponseEvent("r", {"a": 1}),
        InputEvent({"x": [1]}),
        Event("plain", {"v": 1}),
    ]
    state = ActionState(task_event=events[2], output_events=events)
    back = decode_state(encode_state(state), _loc())
    for original, restored in zip(events, back.output_events, strict=True):
        assert type(restored) is type(original)
        assert restored == original
        assert vars(restored) if hasattr(restored, "__dict__") else True
    assert isinstance(back.output_events[0], Priced) and back.output_events[0].currency == "EUR"
    assert type(back.task_event) is InputEvent


def _loc():  # type: ignore[no-untyped-def]
    from reference_runtime.errors import Location

    return Location("k", 3, "quote")


def _with_class(path: str) -> bytes:
    doc = json.loads(encode_state(ActionState(output_events=[Priced("book", 40)])))
    doc["outputs"][0]["py"] = path
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    "path, reason",
    [
        ("tests.runtime.no_such_module:Priced", "cannot be imported"),
        ("tests.runtime.typed_event_agent:Gone", "cannot be imported"),
        ("os:system", "not an Event class"),
        ("subprocess:Popen", "not an Event class"),
        ("tests.runtime.typed_event_agent:lookup", "not an Event class"),
        ("not a path", "not a class path"),
        ("antigravity:Event", "never imports a module"),
    ],
)
def test_a_stored_event_class_that_cannot_be_rebuilt_is_a_located_error(path: str, reason: str) -> None:
    """EVT-2, EVT-3: an unimportable class, or a record naming something that is not an Event class
    (a hostile record), fails with the key, seq and action, and nothing named is ever called."""
    with pytest.raises(EventClassError) as info:
        decode_state(_with_class(path), _loc())
    assert reason in str(info.value)
    assert (info.value.key, info.value.seq, info.value.action) == ("k", 3, "quote")
    assert path in str(info.value) or reason == "not a class path"
    assert "antigravity" not in sys.modules, "a record made the runtime import a new package"


def test_built_in_events_are_recorded_by_type_and_old_records_read_typed() -> None:
    """EVT-1: a built-in event needs no class path (its type names it), so records written before classes
    were recorded also give back typed built-in events; a user event without a path reads as Event."""
    doc = json.loads(encode_state(ActionState(output_events=[ToolResponseEvent("r", {"a": 1}), Priced("pen", 3)])))
    assert "py" not in doc["outputs"][0]
    assert doc["outputs"][1]["py"] == "tests.runtime.typed_event_agent:Priced"
    del doc["outputs"][1]["py"], doc["outputs"][1]["fields"]  # as a record from before this change
    back = decode_state(json.dumps(doc).encode(), _loc())
    assert [type(e) for e in back.output_events] == [ToolResponseEvent, Event]
    assert back.output_events[0].responses == {"a": 1}
