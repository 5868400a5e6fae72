"""Records of Flink Agents 0.2.0 (``ActionStateKafkaSeder``): reading them (spec SER-7) and writing them
exactly as 0.2.0 does (spec WIRE-10).

HEAD's ``ActionStateSerde`` refuses most of them (``PythonEvent`` no longer exists; memory values are plain
JSON, not Kryo envelopes) and silently drops a Java ``InputEvent``'s ``input``. :func:`read_legacy_020` reads
them all into the runtime model instead:

* memory values are taken as the plain JSON they are. 0.2.0 itself lost Java types this way: a ``byte[]``
  reads back as its base64 string, NaN as the string ``"NaN"``, a small Long as an Integer.
* call results have no ``status``: FAILED iff an exception payload is present (the legacy rule).
* a Java ``InputEvent``/``OutputEvent`` keeps its top-level ``input``/``output`` as the attribute of that name.
* a ``PythonEvent`` becomes an event built from its ``eventJsonStr`` (id, type, fields). Its ``event`` field is
  a pickle of the Python object: it is never loaded (store contents are untrusted, spec PAY-3).

:func:`write_legacy_020` writes what the 0.2.0 engine's own writer does, field for field: events as
``PythonEvent`` with the engine's pickle (:mod:`.legacy_event`), memory values as plain JSON, call results
without ``status``. What 0.2.0 cannot represent is refused with :class:`~.legacy_event.LegacyFormatError`
instead of being written in a form the engine would misread: a PENDING call (0.2.0 would take it for a
success with no result), a ``new_object`` update (0.2.0 replays it as ``set(path, None)``, #1029), a memory
value that is not JSON data (bytes, NaN and the infinities come back as strings), any event but an
``InputEvent`` or ``OutputEvent``.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any

from ..errors import Location, WireFormatError
from ..events import BASE_EVENT_CLASS, Event
from ..records import ActionState, CallResult, CallStatus, MemoryUpdate
from . import kryo
from .actionstate import EVENT_CLASSES, INPUT_EVENT, OUTPUT_EVENT
from .jackson import dumps, jackson_string, loads
from .legacy_event import PYTHON_EVENT, LegacyFormatError, event_class_path, event_json_str, event_pickle, event_value

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
            # A Python event is the base Event in every later format: written back (a delta, a migration),
            # it must not name PythonEvent, which no later engine has (WIRE-12).
            java_class=BASE_EVENT_CLASS,
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


# -- writing ----------------------------------------------------------------------------------------------


def _b64(data: bytes | None) -> str:
    return "null" if data is None else '"' + base64.b64encode(data).decode("ascii") + '"'


def write_python_event(event: Event) -> str:
    """A runtime ``InputEvent``/``OutputEvent`` as the ``PythonEvent`` JSON 0.2.0 writes (fields in Jackson's
    order; ``id`` is the wrapper's own id, which 0.2.0 draws at random and nothing reads back)."""
    event_type, value = event_value(event)
    pickled, content_id = event_pickle(event_type, value)
    wrapper_id = event.id if event.id is not None else content_id
    return (
        f'{{"@class":"{PYTHON_EVENT}","id":"{wrapper_id}","attributes":{{}},'
        f'"event":{_b64(pickled)},"eventType":"{event_class_path(event_type)}",'
        f'"eventJsonStr":{jackson_string(event_json_str(event_type, value, content_id))},"sourceTimestamp":null}}'
    )


def _json_data(value: Any, path: str) -> Any:
    """A memory value as the plain JSON 0.2.0 stores, or LegacyFormatError for one it would not read back."""
    if isinstance(value, kryo.JavaValue):
        value = kryo.to_python(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise LegacyFormatError(f"memory value at {path} is {value}: 0.2.0 would read it back as a string")
        return value
    if isinstance(value, list):
        return [_json_data(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise LegacyFormatError(f"memory value at {path} has the key {k!r}: JSON keys are strings")
            out[k] = _json_data(v, f"{path}[{k!r}]")
        return out
    raise LegacyFormatError(
        f"memory value at {path} is a {type(value).__name__}: 0.2.0 stores memory as plain JSON"
        + (" and would read bytes back as a base64 string" if isinstance(value, bytes | bytearray) else "")
    )


def _write_updates(updates: list[MemoryUpdate], name: str) -> str:
    items = []
    for i, u in enumerate(updates):
        if u.object_creation:
            raise LegacyFormatError(
                f"{name}[{i}] is new_object({u.path!r}): 0.2.0 has no record of object creation and replays it as "
                "set(path, None) (Flink Agents #1029)"
            )
        value = dumps(_json_data(u.value, repr(u.path)))
        items.append(f'{{"path":{jackson_string(u.path)},"value":{value}}}')
    return "[" + ",".join(items) + "]"


def _write_call(c: CallResult, index: int) -> str:
    if c.effective_status is CallStatus.PENDING:
        raise LegacyFormatError(
            f"call {index} ({c.function_id}) is PENDING: 0.2.0 call results have no status and it would read a "
            "PENDING record as a success with no result (reconcilers, batches and two-phase calls need 0.3)"
        )
    if (c.exception_payload is not None) != (c.effective_status is CallStatus.FAILED):
        raise LegacyFormatError(
            f"call {index} ({c.function_id}) is {c.effective_status.value} with "
            f"{'an' if c.exception_payload is not None else 'no'} exception payload: 0.2.0 tells a failure only "
            "by its exception payload"
        )
    return (
        f'{{"functionId":{jackson_string(c.function_id)},"argsDigest":{jackson_string(c.args_digest)},'
        f'"resultPayload":{_b64(c.result_payload)},"exceptionPayload":{_b64(c.exception_payload)}}}'
    )


def write_legacy_020(state: ActionState) -> bytes:
    """The bytes 0.2.0's ``ActionStateKafkaSeder`` writes for ``state``; LegacyFormatError (naming the part)
    for a state 0.2.0 cannot represent."""
    task = "null" if state.task_event is None else write_python_event(state.task_event)
    outputs = ",".join(write_python_event(e) for e in state.output_events)
    calls = ",".join(_write_call(c, i) for i, c in enumerate(state.call_results))
    text = (
        f'{{"taskEvent":{task},'
        f'"sensoryMemoryUpdates":{_write_updates(state.sensory_memory_updates, "sensoryMemoryUpdates")},'
        f'"shortTermMemoryUpdates":{_write_updates(state.short_term_memory_updates, "shortTermMemoryUpdates")},'
        f'"outputEvents":[{outputs}],"callResults":[{calls}],"completed":{"true" if state.completed else "false"}}}'
    )
    return text.encode("utf-8")
