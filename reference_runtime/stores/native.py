"""The native record encoding used by the embedded stores (memory, SQLite, Redis).

Tagged JSON: a state header (everything but call results) and one small document per call result, so a
durable call is persisted as a delta. Every decode failure is a :class:`CorruptRecordError` that names
the location and the JSON path that failed.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from typing import Any

from ..errors import CorruptRecordError, EventClassError, Location, RecordLimitError, WriteLimitError
from ..events import BASE_EVENT_CLASS, Event, builtin_class, rebuild_event
from ..limits import decode_limits, json_over_budget, parse_json, parses_within, safe_repr
from ..records import ActionState, CallResult, CallStatus, MemoryUpdate, StateRef
from ..serde.tagged import MAX_VALUE_DEPTH, decode_base64, decode_value, encode_value

FORMAT_VERSION = 1


def _field(obj: dict[str, Any], name: str, kind: type | tuple[type, ...], path: str, loc: Location) -> Any:
    if name not in obj:
        raise CorruptRecordError(f"missing field {path}.{name}", loc)
    value = obj[name]
    if not isinstance(value, kind):
        raise CorruptRecordError(f"field {path}.{name} has type {type(value).__name__}", loc)
    return value


def encode_event(event: Event) -> dict[str, Any]:
    doc = {
        "class": event.java_class,
        "id": str(event.id) if event.id is not None else None,
        "type": event.type,
        "attributes": encode_value(event.attributes, "attributes"),
        "upstream": [event.upstream_event_id, event.upstream_action_name],
    }
    # The Python class by import path, never a pickle: recovery rebuilds it from data (spec EVT-1, EVT-3).
    py = event.record_class()
    if py is not None:
        doc["py"] = py
        fields = event.record_fields()
        if fields:
            doc["fields"] = encode_value(fields, f"fields of {py}")
    return doc


def decode_event(obj: Any, path: str, loc: Location) -> Event:
    if not isinstance(obj, dict):
        raise CorruptRecordError(f"{path} is not an object", loc)
    unknown = set(obj) - {"class", "id", "type", "attributes", "upstream", "py", "fields"}
    if unknown:
        raise CorruptRecordError(f"unknown fields {sorted(unknown)} in {path}", loc)
    raw_id = obj.get("id")
    try:
        event_id = uuid.UUID(raw_id) if raw_id is not None else None
    except (ValueError, TypeError, AttributeError) as exc:
        raise CorruptRecordError(f"{path}.id is not a UUID", loc) from exc
    etype = _field(obj, "type", str, path, loc)
    attributes = decode_value(obj.get("attributes", {"$map": {}}), f"{path}.attributes", loc, -1)
    if not isinstance(attributes, dict):
        raise CorruptRecordError(f"{path}.attributes is not a map", loc)
    upstream = obj.get("upstream", [None, None])
    if not (isinstance(upstream, list) and len(upstream) == 2):
        raise CorruptRecordError(f"{path}.upstream is malformed", loc)
    java_class = obj.get("class", BASE_EVENT_CLASS)
    if not isinstance(java_class, str) or not etype:
        raise CorruptRecordError(f"{path} has a bad class or type", loc)
    if "py" not in obj:
        # A plain Event, a built-in event (its type says which), or a record from before classes were recorded.
        cls = builtin_class(etype)
        event = cls.__new__(cls)
        Event.__init__(
            event,
            etype,
            attributes,
            java_class=java_class,
            upstream_event_id=upstream[0],
            upstream_action_name=upstream[1],
        )
        event.id = event_id
        return event
    event = Event(
        etype, attributes, java_class=java_class, upstream_event_id=upstream[0], upstream_action_name=upstream[1]
    )
    event.id = event_id
    py = obj["py"]
    fields = decode_value(obj.get("fields", {"$map": {}}), f"{path}.fields", loc, -1)
    if not isinstance(fields, dict):
        raise CorruptRecordError(f"{path}.fields is not a map", loc)
    try:
        return rebuild_event(py, event, fields)
    except (LookupError, TypeError, ValueError) as exc:
        raise EventClassError(f"cannot rebuild the event at {path} (type {etype!r}): {exc}", loc) from None


def _enc_updates(updates: list[MemoryUpdate], name: str) -> list[Any]:
    return [[u.path, encode_value(u.value, f"{name}[{i}].value"), u.object_creation] for i, u in enumerate(updates)]


def _dec_updates(raw: Any, path: str, loc: Location) -> list[MemoryUpdate]:
    if not isinstance(raw, list):
        raise CorruptRecordError(f"{path} is not a list", loc)
    out = []
    for i, item in enumerate(raw):
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str) and isinstance(item[2], bool)):
            raise CorruptRecordError(f"{path}[{i}] is not a memory update", loc)
        out.append(MemoryUpdate(item[0], decode_value(item[1], f"{path}[{i}].value", loc), item[2]))
    return out


def encode_state(state: ActionState, *, with_signature: bool = True, ref: StateRef | None = None) -> bytes:
    """The state without its call results (those are stored one by one). Given the ``ref`` it is written
    under, a state that :func:`decode_state` would refuse under the current decode limits raises
    :class:`~reference_runtime.errors.WriteLimitError` instead (spec LIM-9)."""
    doc: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "taskEvent": encode_event(state.task_event) if state.task_event is not None else None,
        "sensory": _enc_updates(state.sensory_memory_updates, "sensory"),
        "shortTerm": _enc_updates(state.short_term_memory_updates, "shortTerm"),
        "outputs": [encode_event(e) for e in state.output_events],
        "completed": state.completed,
    }
    if with_signature and state.signature is not None:
        doc["sig"] = base64.b64encode(state.signature).decode("ascii")
    data = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
    if ref is not None and not parses_within(data, decode_limits(), MAX_VALUE_DEPTH):
        loc = Location(ref.key, ref.seq, ref.action.name)
        try:
            decode_state(data, loc)  # the reader itself: what it refuses is refused now, nothing else
        except CorruptRecordError as exc:
            raise _unreadable("action state", len(data), exc, loc) from None
    return data


def _unreadable(what: str, size: int, exc: CorruptRecordError, loc: Location) -> WriteLimitError:
    return WriteLimitError(
        f"the {what} ({size} bytes encoded) is refused: recovery could not read it back ({exc.reason}); make it "
        "smaller, or raise the limit for writer and reader alike with set_decode_limits",
        loc,
    )


#: JSON levels of an action state around its values (state, outputs, event, attributes map); a map value
#: takes two levels (``{"$map": {...}}``), so a state holding values of ``max_depth`` nests about twice that.
_FRAMING_DEPTH = 8


def _parse(data: bytes, what: str, loc: Location) -> Any:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CorruptRecordError(f"{what} is a {type(data).__name__}, not bytes", loc)

    def fail(message: str) -> CorruptRecordError:
        return (RecordLimitError if "max_" in message else CorruptRecordError)(message, loc)

    limits = decode_limits()
    # The values' own nesting is checked against max_depth as they are decoded (decode_value).
    return parse_json(bytes(data), limits, fail, what, max_depth=2 * limits.max_depth + _FRAMING_DEPTH)


def decode_state(data: bytes, location: Location) -> ActionState:
    loc = location
    doc = _parse(data, "action state", loc)
    if not isinstance(doc, dict):
        raise CorruptRecordError("action state is not a JSON object", loc)
    unknown = set(doc) - {"v", "taskEvent", "sensory", "shortTerm", "outputs", "completed", "sig"}
    if unknown:
        raise CorruptRecordError(f"unknown fields {sorted(unknown)} in action state", loc)
    if doc.get("v") != FORMAT_VERSION:
        raise CorruptRecordError(f"unsupported action state format version {safe_repr(doc.get('v'))}", loc)
    task = doc.get("taskEvent")
    outputs = doc.get("outputs", [])
    if not isinstance(outputs, list):
        raise CorruptRecordError("$.outputs is not a list", loc)
    completed = doc.get("completed", False)
    if not isinstance(completed, bool):
        raise CorruptRecordError("$.completed is not a boolean", loc)
    return ActionState(
        task_event=decode_event(task, "$.taskEvent", loc) if task is not None else None,
        sensory_memory_updates=_dec_updates(doc.get("sensory", []), "$.sensory", loc),
        short_term_memory_updates=_dec_updates(doc.get("shortTerm", []), "$.shortTerm", loc),
        output_events=[decode_event(e, f"$.outputs[{i}]", loc) for i, e in enumerate(outputs)],
        call_results=[],
        completed=completed,
        signature=decode_base64(doc["sig"], "$.sig", loc) if "sig" in doc else None,
    )


#: JSON string literal of a str, escaped as ``json.dumps`` escapes it (ASCII only; the C implementation).
_quote = json.encoder.encode_basestring_ascii


def _b64_or_null(data: bytes | None) -> str:
    # binascii's encoder is what base64.b64encode calls; its output needs no JSON escaping.
    return "null" if data is None else '"' + _b64(data, newline=False).decode("ascii") + '"'


_b64 = binascii.b2a_base64
#: Each record status as its JSON literal: a lookup, not an enum attribute and a quote, per durable call.
_STATUS_JSON: dict[CallStatus | None, str] = {None: "null", **{status: _quote(status.value) for status in CallStatus}}


def encode_call_result(result: CallResult, ref: StateRef | None = None, index: int = 0) -> bytes:
    """The record ``json.dumps({"f", "d", "r", "e", "s"}, separators=(",", ":"))`` would write, byte for
    byte (a test compares the two), put together directly: it runs on every durable call, and building the
    dict and walking it costs three times as much. Given the ``ref`` and call ``index`` it is written at, a
    record :func:`decode_call_result` would refuse raises
    :class:`~reference_runtime.errors.WriteLimitError` instead (spec LIM-9)."""
    function_id, digest, payload, error, status = result  # one unpacking, not five attribute reads
    body = (
        f'{{"f":{_quote(function_id)},"d":{_quote(digest)},"r":{_b64_or_null(payload)},'
        f'"e":{_b64_or_null(error)},"s":{_STATUS_JSON[status]}}}'
    ).encode("ascii")
    if ref is not None:
        # Strings only, one level deep: the reader can refuse such a record for its size or memory only.
        limits = decode_limits()
        if len(body) > limits.max_payload_bytes:
            reason = f"call result of {len(body)} bytes exceeds max_payload_bytes={limits.max_payload_bytes}"
        elif (cost := json_over_budget(body, limits)) is not None:
            reason = (
                f"call result may use {cost} bytes once parsed, more than max_memory_bytes={limits.max_memory_bytes}"
            )
        else:
            return body
        loc = Location(ref.key, ref.seq, ref.action.name, index)
        raise _unreadable(f"record of {result.function_id}", len(body), RecordLimitError(reason, loc), loc)
    return body


def decode_call_result(data: bytes, location: Location) -> CallResult:
    loc = location
    doc = _parse(data, "call result", loc)
    if not isinstance(doc, dict) or set(doc) != {"f", "d", "r", "e", "s"}:
        raise CorruptRecordError("call result does not have exactly the fields f, d, r, e, s", loc)
    if not isinstance(doc["f"], str) or not isinstance(doc["d"], str):
        raise CorruptRecordError("call result function id / digest must be strings", loc)
    status = doc["s"]
    try:
        parsed_status = CallStatus(status) if status is not None else None
    except ValueError as exc:
        raise CorruptRecordError(f"unknown call status {safe_repr(status)}", loc) from exc
    return CallResult(
        doc["f"],
        doc["d"],
        decode_base64(doc["r"], "$.r", loc) if doc["r"] is not None else None,
        decode_base64(doc["e"], "$.e", loc) if doc["e"] is not None else None,
        parsed_status,
    )
