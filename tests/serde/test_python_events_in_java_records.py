"""Python event classes in Flink Agents format records (spec EVT-1, EVT-2, WIRE-9)."""

from __future__ import annotations

import pytest

from conformance.store_suite import CheckedEvent
from reference_runtime.errors import EventClassError, Location
from reference_runtime.events import Event, InputEvent, OutputEvent, ToolResponseEvent
from reference_runtime.records import ActionState
from reference_runtime.serde.actionstate import PY_CLASS_ATTRIBUTE, serialize
from reference_runtime.stores.kafka_flink_format import decode_value

LOC = Location("k", 0, "act")


def _round_trip(events: list[Event]) -> list[Event]:
    state = ActionState(task_event=InputEvent(1), output_events=events)
    state.mark_completed()
    got, _ = decode_value(serialize(state), LOC)
    return got.output_events


def test_user_and_builtin_event_classes_come_back() -> None:
    """EVT-1/WIRE-9: a user class and its instance fields travel in one reserved attribute; built-ins and
    plain events need none, so their bytes stay what Flink Agents writes."""
    sent = [
        CheckedEvent(7),
        ToolResponseEvent("req", {"t": 1}, success={"t": True}),
        OutputEvent("o"),
        Event("plain", {"p": 1}),
    ]
    got = _round_trip(sent)
    assert [type(e) for e in got] == [type(e) for e in sent]
    assert isinstance(got[0], CheckedEvent) and got[0].value == 7 and got[0].note == "v7"
    assert got[0].attributes == {"value": 7} and PY_CLASS_ATTRIBUTE not in got[0].attributes
    plain = ActionState(task_event=InputEvent(1), output_events=[OutputEvent("o"), Event("plain", {"p": 1})])
    assert PY_CLASS_ATTRIBUTE.encode() not in serialize(plain)


@pytest.mark.parametrize(
    "recorded",
    [{"class": "os:system", "fields": {}}, {"class": 3}, "x", {"class": "no.such.module:Event", "fields": {}}],
)
def test_a_record_naming_a_non_event_class_is_refused_with_its_location(recorded: object) -> None:
    """EVT-2/EVT-3: the reserved attribute never makes the reader call or import what it names."""
    state = ActionState(task_event=InputEvent(1), output_events=[Event("x", {PY_CLASS_ATTRIBUTE: recorded})])
    with pytest.raises(EventClassError) as err:
        decode_value(serialize(state), LOC)
    assert err.value.location == LOC


def test_attributes_json_cannot_carry_round_trip_and_java_sees_the_nearest_json() -> None:
    """WIRE-9/STORE-1: bytes and non-finite floats in attributes come back exact; the Java-visible
    attributes hold their nearest JSON (base64 text, Jackson's "Infinity")."""
    sent = Event("odd", {"b": b"\x00\xff", "inf": float("inf"), "nested": {"x": [float("-inf"), 1]}})
    (got,) = _round_trip([sent])
    assert type(got) is Event and got.attributes == sent.attributes
    state = ActionState(task_event=InputEvent(1), output_events=[sent])
    text = serialize(state).decode()
    assert '"b":"AP8="' in text and '"inf":"Infinity"' in text
