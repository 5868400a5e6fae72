"""Reading records written by Flink Agents 0.2.0 (``ActionStateKafkaSeder``), spec SER-7.

HEAD's ``ActionStateSerde`` refuses most of them (``PythonEvent`` no longer exists; memory values are plain
JSON, not Kryo envelopes) and silently drops a Java ``InputEvent``'s ``input``. :func:`read_legacy_020` reads
them all into the runtime model instead:

* memory values are taken as the plain JSON they are. 0.2.0 itself lost Java types this way: a ``byte[]``
  reads back as its base64 string, NaN as the string ``"NaN"``, a small Long as an Integer.
* call results have no ``status``: FAILED iff an exception payload is present (the legacy rule).
* a Java ``InputEvent``/``OutputEvent`` keeps its top-level ``input``/``output`` as the attribute of that name.
* a ``PythonEvent`` becomes an event built from its ``eventJsonStr`` (id, type, fields). Its ``event`` field is
  a pickle of the Python object: it is never loaded (store contents are untrusted, spec PAY-3).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any

from ..errors import Location, WireFormatError
from ..events import Event
from ..records import ActionState, CallResult, MemoryUpdate
from .actionstate import EVENT_CLASSES, INPUT_EVENT, OUTPUT_EVENT
from .jackson import loads

PYTHON_EVENT = "org.apache.flink.agents.runtime.python.event.PythonEvent"
#: Python event classes of 0.2.0 and the routing type the runtime gives them.
_PYTHON_TYPES = {
    "flink_agents.api.events.event.InputEvent": "_input_event",
    "flink_agents.api.events.event.OutputEvent": "_output_event",
}
_STATE_FIELDS = (
    "taskEvent",
    "sensoryMemoryUpdates",
    "shortTermMemoryUpdates",
    "outputEvents",
    "callResults",
    "completed",
)


def _fail(message: str, path: str, location: Location | None) -> WireFormatError:
    return WireFormatError(message, path=path, location=location)


def _uuid(raw: Any, path: str, location: Location | None) -> uuid.UUID | None:
    if raw is None:
        return None
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        raise _fail(f"event id {raw!r} is not a UUID", path, location) from None


def _event(raw: Any, path: str, location: Location | None) -> Event:
    if not isinstance(raw, dict):
        raise _fail("expected an event object", path, location)
    cls = raw.get("@class")
    if not isinstance(cls, str):
        raise _fail("event has no @class type id", f"{path}.@class", location)
    if cls == PYTHON_EVENT:
        text = raw.get("eventJsonStr")
        if not isinstance(text, str):
            raise _fail(
                "PythonEvent without eventJsonStr (its pickle is never loaded)", f"{path}.eventJsonStr", location
            )
        try:
            body = loads(text)
        except WireFormatError as exc:
            raise _fail(f"eventJsonStr is not JSON: {exc.reason}", f"{path}.eventJsonStr", location) from None
        if not isinstance(body, dict):
            raise _fail("eventJsonStr is not an object", f"{path}.eventJsonStr", location)
        event_type = body.get("eventType") or raw.get("eventType") or ""
        if not isinstance(event_type, str):
            raise _fail("eventType must be a string", f"{path}.eventType", location)
        attributes = body.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise _fail("attributes must be an object", f"{path}.eventJsonStr.attributes", location)
        attributes = dict(attributes)
        attributes.update({k: v for k, v in body.items() if k not in ("id", "eventType", "attributes")})
        return Event(
            _PYTHON_TYPES.get(event_type, event_type or "_unknown_event"),
            attributes,
            id=_uuid(body.get("id", raw.get("id")), f"{path}.eventJsonStr.id", location),
            java_class=cls,
        )
    if cls not in EVENT_CLASSES:
        raise _fail(f"@class {cls!r} is not an event class 0.2.0 wrote", f"{path}.@class", location)
    attributes = raw.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise _fail("attributes must be an object", f"{path}.attributes", location)
    attributes = dict(attributes)
    if cls == INPUT_EVENT:
        attributes.setdefault("input", raw.get("input"))
        event_type = "_input_event"
    elif cls == OUTPUT_EVENT:
        attributes.setdefault("output", raw.get("output"))
        event_type = "_output_event"
    else:
        event_type = _text(raw.get("type"), f"{path}.type", location) or "_unknown_event"
    return Event(event_type, attributes, id=_uuid(raw.get("id"), f"{path}.id", location), java_class=cls)


def _list(raw: Any, path: str, location: Location | None) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _fail("expected an array", path, location)
    return raw


def _text(raw: Any, path: str, location: Location | None) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise _fail("expected a string", path, location)
    return raw


def _payload(raw: Any, path: str, location: Location | None) -> bytes | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise _fail("payload must be base64 text", path, location)
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise _fail("payload is not padded standard base64", path, location) from None


def read_legacy_020(data: bytes | str, *, location: Location | None = None) -> ActionState:
    """Read a 0.2.0 record into the runtime model (see the module docstring for what each part becomes)."""
    try:
        raw = loads(data)
    except WireFormatError as exc:
        raise WireFormatError(
            exc.reason.rsplit(" at ", 1)[0], path=exc.path, offset=exc.offset, location=location
        ) from None
    if not isinstance(raw, dict):
        raise _fail("expected an ActionState object", "$", location)
    for name in raw:
        if name not in _STATE_FIELDS:
            raise _fail(f"unknown field {name!r}", f"$.{name}", location)
    state = ActionState(completed=bool(raw.get("completed")))
    if raw.get("taskEvent") is not None:
        state.task_event = _event(raw["taskEvent"], "$.taskEvent", location)
    for name, target in (
        ("sensoryMemoryUpdates", state.sensory_memory_updates),
        ("shortTermMemoryUpdates", state.short_term_memory_updates),
    ):
        for i, u in enumerate(_list(raw.get(name), f"$.{name}", location)):
            if not isinstance(u, dict):
                raise _fail("expected a memory update object", f"$.{name}[{i}]", location)
            target.append(MemoryUpdate(_text(u.get("path"), f"$.{name}[{i}].path", location), u.get("value")))
    state.output_events = [
        _event(e, f"$.outputEvents[{i}]", location)
        for i, e in enumerate(_list(raw.get("outputEvents"), "$.outputEvents", location))
    ]
    for i, c in enumerate(_list(raw.get("callResults"), "$.callResults", location)):
        path = f"$.callResults[{i}]"
        if not isinstance(c, dict):
            raise _fail("expected a call result object", path, location)
        state.call_results.append(
            CallResult(
                _text(c.get("functionId"), f"{path}.functionId", location),
                _text(c.get("argsDigest"), f"{path}.argsDigest", location),
                _payload(c.get("resultPayload"), f"{path}.resultPayload", location),
                _payload(c.get("exceptionPayload"), f"{path}.exceptionPayload", location),
                None,
            )
        )
    return state
