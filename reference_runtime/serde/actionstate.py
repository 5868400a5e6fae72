"""``ActionState`` records exactly as Java's ``ActionStateSerde`` writes and reads them (spec SER-1..SER-8).

:class:`JavaActionState` mirrors the Java object, including what the runtime model drops (nullable lists,
status-less legacy call results, Java value types of memory values), so a record read here writes back to
the same bytes. :func:`to_runtime` / :func:`from_runtime` convert to and from the runtime's
:class:`~reference_runtime.records.ActionState`.

The reader follows HEAD's verdicts (vectors ``actionstate_deserialize.jsonl``) with one deliberate
difference: by default it accepts ``"objectCreation": true`` on memory updates, which PR #1030 adds and this
runtime writes for ``new_object`` (the fix for #1029). ``dialect="head"`` refuses it as HEAD and 0.3.1 do.
"""

from __future__ import annotations

import base64
import binascii
import math
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import EventClassError, KryoDecodeError, Location, WireFormatError
from ..events import Event, builtin_class, rebuild_event
from ..records import ActionState, CallResult, CallStatus, MemoryUpdate
from . import kryo
from .jackson import dumps, jackson_string, loads
from .tagged import decode_value, encode_value

EVENT = "org.apache.flink.agents.api.Event"
INPUT_EVENT = "org.apache.flink.agents.api.InputEvent"
OUTPUT_EVENT = "org.apache.flink.agents.api.OutputEvent"
#: Event classes known to the reader; a typed event writes ``type`` after ``attributes``.
EVENT_CLASSES = frozenset({EVENT, INPUT_EVENT, OUTPUT_EVENT})
_TYPED_DEFAULT_TYPE = {INPUT_EVENT: "_input_event", OUTPUT_EVENT: "_output_event"}
_STATUSES = ("PENDING", "SUCCEEDED", "FAILED")  # Java enum order: ordinals 0, 1, 2
Dialect = Literal["pr1030", "head"]


@dataclass
class JavaEvent:
    java_class: str
    id: str | None
    type: str | None
    attributes: dict[str, Any]
    upstream_event_id: str | None = None
    upstream_action_name: str | None = None


@dataclass
class JavaMemoryUpdate:
    path: str | None
    value: kryo.JavaValue | None
    object_creation: bool = False


@dataclass
class JavaCallResult:
    function_id: str | None
    args_digest: str | None
    result_payload: bytes | None = None
    exception_payload: bytes | None = None
    status: str | None = "SUCCEEDED"

    @property
    def effective_status(self) -> str:
        if self.status is not None:
            return self.status
        return "FAILED" if self.exception_payload is not None else "SUCCEEDED"


@dataclass
class JavaActionState:
    task_event: JavaEvent | None = None
    sensory_memory_updates: list[JavaMemoryUpdate] | None = field(default_factory=list)
    short_term_memory_updates: list[JavaMemoryUpdate] | None = field(default_factory=list)
    output_events: list[JavaEvent] | None = field(default_factory=list)
    call_results: list[JavaCallResult] | None = field(default_factory=list)
    completed: bool = False


# -- writing ----------------------------------------------------------------------------------------------


def _b64(data: bytes | None) -> str:
    return "null" if data is None else '"' + base64.b64encode(data).decode("ascii") + '"'


def _str(s: str | None) -> str:
    return "null" if s is None else jackson_string(s)


def write_event(e: JavaEvent) -> str:
    parts = [f'"@class":{jackson_string(e.java_class)}', f'"id":{_str(e.id)}']
    typed = e.java_class != EVENT
    if not typed:
        parts.append(f'"type":{_str(e.type)}')
    parts.append(f'"attributes":{dumps(e.attributes)}')
    if typed:
        parts.append(f'"type":{_str(e.type)}')
    if e.upstream_event_id is not None:
        parts.append(f'"upstreamEventId":{jackson_string(e.upstream_event_id)}')
    if e.upstream_action_name is not None:
        parts.append(f'"upstreamActionName":{jackson_string(e.upstream_action_name)}')
    return "{" + ",".join(parts) + "}"


def envelope(value: kryo.JavaValue | None) -> str:
    if value is None:
        return "null"
    payload = base64.b64encode(kryo.encode(value)).decode("ascii")
    return '{"serde":"kryo","version":1,"payload":"' + payload + '"}'


def _write_updates(updates: list[JavaMemoryUpdate] | None) -> str:
    if updates is None:
        return "null"
    items = []
    for u in updates:
        extra = ',"objectCreation":true' if u.object_creation else ""
        items.append(f'{{"path":{_str(u.path)},"value":{envelope(u.value)}{extra}}}')
    return "[" + ",".join(items) + "]"


def _write_call(c: JavaCallResult) -> str:
    return (
        f'{{"functionId":{_str(c.function_id)},"argsDigest":{_str(c.args_digest)},'
        f'"resultPayload":{_b64(c.result_payload)},"exceptionPayload":{_b64(c.exception_payload)},'
        f'"status":{_str(c.status)}}}'
    )


@dataclass
class StateText:
    """The bytes :func:`write_action_state` writes, in three parts: what precedes the call results, each call
    result (None for ``"callResults":null``), and what follows them. A writer that changes only call results
    re-encodes only those: the Kafka store's flink-agents format rewrites the whole state on every durable
    call, as Flink Agents does, and re-encoding all of it grew with the calls in the action (benchmark P10)."""

    head: bytes
    calls: list[bytes] | None
    tail: bytes

    def value(self) -> bytes:
        calls = b"null" if self.calls is None else b"[" + b",".join(self.calls) + b"]"
        return b"".join((self.head, calls, self.tail))


def _utf8(text: str) -> bytes:
    # surrogatepass encodes code point by code point, so encoding the parts apart gives the bytes of the whole.
    return text.encode("utf-8", "surrogatepass")


def write_call_result(c: JavaCallResult) -> bytes:
    """One element of ``callResults`` as ``ActionStateSerde.serialize`` writes it."""
    return _utf8(_write_call(c))


def write_state_text(state: JavaActionState) -> StateText:
    """:func:`write_action_state`'s bytes in parts (``write_state_text(s).value() == write_action_state(s)``)."""
    task = "null" if state.task_event is None else write_event(state.task_event)
    outputs = "null" if state.output_events is None else "[" + ",".join(map(write_event, state.output_events)) + "]"
    head = (
        f'{{"taskEvent":{task},"sensoryMemoryUpdates":{_write_updates(state.sensory_memory_updates)},'
        f'"shortTermMemoryUpdates":{_write_updates(state.short_term_memory_updates)},'
        f'"outputEvents":{outputs},"callResults":'
    )
    calls = None if state.call_results is None else [write_call_result(c) for c in state.call_results]
    return StateText(_utf8(head), calls, _utf8(f',"completed":{"true" if state.completed else "false"}}}'))


def write_action_state(state: JavaActionState) -> bytes:
    """The exact bytes ``ActionStateSerde.serialize`` writes (JDK 19+ double digits)."""
    return write_state_text(state).value()


# -- reading ----------------------------------------------------------------------------------------------


class _Read:
    def __init__(self, location: Location | None, dialect: Dialect, event_classes: frozenset[str]) -> None:
        self.location = location
        self.dialect = dialect
        self.event_classes = event_classes

    def fail(self, message: str, path: str) -> WireFormatError:
        return WireFormatError(message, path=path, location=self.location)

    def obj(self, raw: Any, path: str, known: tuple[str, ...], ignored: tuple[str, ...] = ()) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise self.fail(f"expected an object, found {_kind(raw)}", path)
        for name in raw:
            if name not in known and name not in ignored:
                raise self.fail(f"unknown field {name!r} (known: {', '.join(known)})", f"{path}.{name}")
        return raw

    def string(self, raw: Any, path: str) -> str | None:
        if raw is None or isinstance(raw, str):
            return raw
        raise self.fail(f"expected a string, found {_kind(raw)}", path)

    def array(self, raw: Any, path: str) -> list[Any] | None:
        if raw is None or isinstance(raw, list):
            return raw
        raise self.fail(f"expected an array, found {_kind(raw)}", path)

    def payload(self, raw: Any, path: str) -> bytes | None:
        if raw is None:
            return None
        if isinstance(raw, str):
            try:
                return base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError):
                raise self.fail("not padded standard base64", path) from None
        if isinstance(raw, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in raw):
            if all(-128 <= b <= 255 for b in raw):
                return bytes(b & 0xFF for b in raw)
            raise self.fail("byte array element out of range", path)
        raise self.fail(f"expected base64 bytes, found {_kind(raw)}", path)

    def state(self, raw: Any) -> JavaActionState | None:
        if raw is None:
            return None
        o = self.obj(
            raw,
            "$",
            ("taskEvent", "sensoryMemoryUpdates", "shortTermMemoryUpdates", "outputEvents", "callResults", "completed"),
        )
        s = JavaActionState()
        if o.get("taskEvent") is not None:
            s.task_event = self.event(o["taskEvent"], "$.taskEvent")
        for name, attr in (
            ("sensoryMemoryUpdates", "sensory_memory_updates"),
            ("shortTermMemoryUpdates", "short_term_memory_updates"),
        ):
            if name in o:
                items = self.array(o[name], f"$.{name}")
                setattr(
                    s, attr, None if items is None else [self.update(u, f"$.{name}[{i}]") for i, u in enumerate(items)]
                )
        if "outputEvents" in o:
            items = self.array(o["outputEvents"], "$.outputEvents")
            s.output_events = (
                None if items is None else [self.event(e, f"$.outputEvents[{i}]") for i, e in enumerate(items)]
            )
        if "callResults" in o:
            items = self.array(o["callResults"], "$.callResults")
            s.call_results = (
                None if items is None else [self.call(c, f"$.callResults[{i}]") for i, c in enumerate(items)]
            )
        s.completed = self.boolean(o.get("completed"), "$.completed")
        return s

    def boolean(self, raw: Any, path: str) -> bool:
        if raw is None:
            return False
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, int):
            return raw != 0
        if raw in ("true", "false"):
            return bool(raw == "true")
        raise self.fail(f"expected a boolean, found {_kind(raw)}", path)

    def call(self, raw: Any, path: str) -> JavaCallResult:
        o = self.obj(raw, path, ("functionId", "argsDigest", "resultPayload", "exceptionPayload", "status"))
        status = o.get("status")
        if isinstance(status, int) and not isinstance(status, bool):
            if not 0 <= status < len(_STATUSES):
                raise self.fail(f"status ordinal {status} out of range 0..{len(_STATUSES) - 1}", f"{path}.status")
            status = _STATUSES[status]
        elif status is not None and status not in _STATUSES:
            raise self.fail(f"unknown status {status!r} (known: {', '.join(_STATUSES)})", f"{path}.status")
        return JavaCallResult(
            self.string(o.get("functionId"), f"{path}.functionId"),
            self.string(o.get("argsDigest"), f"{path}.argsDigest"),
            self.payload(o.get("resultPayload"), f"{path}.resultPayload"),
            self.payload(o.get("exceptionPayload"), f"{path}.exceptionPayload"),
            status,
        )

    def update(self, raw: Any, path: str) -> JavaMemoryUpdate:
        known = ("path", "value", "objectCreation") if self.dialect == "pr1030" else ("path", "value")
        o = self.obj(raw, path, known)
        value = self.envelope(o.get("value"), f"{path}.value")
        return JavaMemoryUpdate(
            self.string(o.get("path"), f"{path}.path"),
            value,
            self.boolean(o.get("objectCreation"), f"{path}.objectCreation"),
        )

    def envelope(self, raw: Any, path: str) -> kryo.JavaValue | None:
        if raw is None:
            return None
        if not isinstance(raw, dict) or "serde" not in raw:
            raise self.fail(f"expected a Kryo envelope {{serde, version, payload}}, found {_kind(raw)}", path)
        if raw["serde"] != "kryo":
            raise self.fail(f"unsupported envelope serde {raw['serde']!r}", f"{path}.serde")
        version = raw.get("version")
        if version is None:
            raise self.fail("envelope has no version", f"{path}.version")
        if version not in (1, "1") or isinstance(version, bool):
            raise self.fail(f"unsupported envelope version {version!r}", f"{path}.version")
        text = raw.get("payload")
        if not isinstance(text, str):
            raise self.fail(f"envelope payload must be base64 text, found {_kind(text)}", f"{path}.payload")
        try:
            data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise self.fail("envelope payload is not base64", f"{path}.payload") from None
        if not data:
            raise self.fail("empty Kryo payload", f"{path}.payload")
        try:
            return kryo.decode(data)
        except KryoDecodeError as exc:
            raise WireFormatError(
                f"bad Kryo payload: {exc.reason}", path=f"{path}.payload", offset=exc.offset, location=self.location
            ) from None

    def event(self, raw: Any, path: str) -> JavaEvent:
        if not isinstance(raw, dict):
            raise self.fail(f"expected an event object, found {_kind(raw)}", path)
        cls = raw.get("@class")
        if not isinstance(cls, str):
            raise self.fail("event has no @class type id", path)
        if cls not in self.event_classes:
            raise self.fail(f"@class {cls!r} is not a known Event class", f"{path}.@class")
        ignored = ("sourceTimestamp",) + (
            ("input",) if cls == INPUT_EVENT else ("output",) if cls == OUTPUT_EVENT else ()
        )
        o = self.obj(
            raw, path, ("@class", "id", "type", "attributes", "upstreamEventId", "upstreamActionName"), ignored
        )
        raw_id = o.get("id")
        if raw_id is None:
            event_id = str(uuid.uuid4())  # HEAD's Event constructor mints a random id (0.3.1 kept null)
        else:
            if not isinstance(raw_id, str):
                raise self.fail(f"event id must be a UUID string, found {_kind(raw_id)}", f"{path}.id")
            try:
                event_id = str(uuid.UUID(raw_id))
            except ValueError:
                raise self.fail(f"event id {raw_id!r} is not a UUID", f"{path}.id") from None
        etype = self.string(o.get("type"), f"{path}.type")
        if not etype:
            etype = _TYPED_DEFAULT_TYPE.get(cls)
            if etype is None:
                raise self.fail("event type is missing or empty", f"{path}.type")
        attributes = o.get("attributes")
        if attributes is None:
            attributes = {}
        if not isinstance(attributes, dict):
            raise self.fail(f"attributes must be an object, found {_kind(attributes)}", f"{path}.attributes")
        return JavaEvent(
            cls,
            event_id,
            etype,
            attributes,
            self.string(o.get("upstreamEventId"), f"{path}.upstreamEventId"),
            self.string(o.get("upstreamActionName"), f"{path}.upstreamActionName"),
        )


def _kind(raw: Any) -> str:
    if raw is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(raw), type(raw).__name__
    )


def read_action_state(
    data: bytes | str,
    *,
    location: Location | None = None,
    dialect: Dialect = "pr1030",
    event_classes: frozenset[str] = EVENT_CLASSES,
) -> JavaActionState | None:
    """Parse a record as ``ActionStateSerde.deserialize`` does; ``None`` for the input ``null``. Every
    refusal is a :class:`~reference_runtime.errors.WireFormatError` with the JSON path (and byte offset for
    malformed JSON or Kryo) plus ``location`` when given."""
    try:
        raw = loads(data)
    except WireFormatError as exc:
        raise WireFormatError(
            exc.reason.rsplit(" at ", 1)[0], path=exc.path, offset=exc.offset, location=location
        ) from None
    if raw is not None and not isinstance(raw, dict):
        raise WireFormatError(f"expected an ActionState object, found {_kind(raw)}", location=location)
    return _Read(location, dialect, event_classes).state(raw)


# -- runtime conversion -----------------------------------------------------------------------------------


#: The attribute under which a Flink Agents format record keeps the Python class and instance fields of an
#: event whose type alone does not say its class (spec EVT-1, WIRE-9). Java reads it as an ordinary attribute.
PY_CLASS_ATTRIBUTE = "__durable_py__"


def _json_plain(value: Any) -> bool:
    """Whether Jackson writes ``value`` and reads it back as the same Python value."""
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if type(value) is list:
        return all(_json_plain(v) for v in value)
    if type(value) is dict:
        return all(isinstance(k, str) and _json_plain(v) for k, v in value.items())
    return False


def _json_view(value: Any) -> Any:
    """The nearest JSON value, as Java sees it: bytes as base64 text, non-finite doubles as Jackson's
    strings, tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list | tuple):
        return [_json_view(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_view(v) for k, v in value.items()}
    return value


def event_to_runtime(e: JavaEvent, location: Location | None = None) -> Event:
    """The runtime event of a Java record's event: the class recorded under :data:`PY_CLASS_ATTRIBUTE`, else
    the built-in event of its type, else a plain :class:`Event` (EVT-1, EVT-2); attributes JSON cannot
    carry come from the lossless copy kept there (WIRE-9)."""
    attributes = e.attributes
    recorded = attributes.get(PY_CLASS_ATTRIBUTE) if isinstance(attributes, dict) else None
    if recorded is not None:
        attributes = {k: v for k, v in attributes.items() if k != PY_CLASS_ATTRIBUTE}
    event_id = uuid.UUID(e.id) if e.id else None
    if recorded is not None and not isinstance(recorded, dict):
        raise EventClassError(
            f"event attribute {PY_CLASS_ATTRIBUTE} must be an object, got {recorded!r:.200}", location
        )
    path = recorded.get("class") if recorded is not None else None
    fields = recorded.get("fields", {}) if recorded is not None else {}
    if recorded is not None and "attributes" in recorded:
        attributes = decode_value(recorded["attributes"], f"$.{PY_CLASS_ATTRIBUTE}.attributes", location or Location())
    if (recorded is not None and "class" in recorded and not isinstance(path, str)) or not isinstance(fields, dict):
        raise EventClassError(
            f'event attribute {PY_CLASS_ATTRIBUTE} must be {{"class": "module:qualname", '
            f'"fields": {{...}}}}, got {recorded!r:.200}',
            location,
        )
    cls = builtin_class(e.type or "") if path is None else Event
    event = cls.__new__(cls)
    Event.__init__(
        event,
        e.type,
        attributes,
        id=event_id,
        java_class=e.java_class,
        upstream_event_id=e.upstream_event_id,
        upstream_action_name=e.upstream_action_name,
    )
    event.id = event_id
    if path is None:
        return event
    try:
        return rebuild_event(path, event, fields)
    except (LookupError, TypeError, ValueError) as exc:
        raise EventClassError(f"cannot rebuild the event of type {e.type!r}: {exc}", location) from None


def event_from_runtime(e: Event) -> JavaEvent:
    attributes = e.attributes
    recorded: dict[str, Any] = {}
    path = e.record_class()
    if path is not None:
        recorded.update({"class": path, "fields": e.record_fields()})
    if not _json_plain(attributes):
        recorded["attributes"] = encode_value(attributes, "attributes")
        attributes = _json_view(attributes)
    if recorded:
        attributes = {**attributes, PY_CLASS_ATTRIBUTE: recorded}
    return JavaEvent(
        e.java_class,
        str(e.id) if e.id is not None else None,
        e.type,
        attributes,
        e.upstream_event_id,
        e.upstream_action_name,
    )


def to_runtime(s: JavaActionState, location: Location | None = None) -> ActionState:
    """The runtime's view of a Java record (memory values as Python data, see :mod:`.kryo`)."""

    def updates(us: list[JavaMemoryUpdate] | None) -> list[MemoryUpdate]:
        return [MemoryUpdate(u.path or "", kryo.to_python(u.value), u.object_creation) for u in us or []]

    return ActionState(
        task_event=None if s.task_event is None else event_to_runtime(s.task_event, location),
        sensory_memory_updates=updates(s.sensory_memory_updates),
        short_term_memory_updates=updates(s.short_term_memory_updates),
        output_events=[event_to_runtime(e, location) for e in s.output_events or []],
        call_results=[
            CallResult(
                c.function_id or "",
                c.args_digest or "",
                c.result_payload,
                c.exception_payload,
                None if c.status is None else CallStatus(c.status),
            )
            for c in s.call_results or []
        ],
        completed=s.completed,
    )


def from_runtime(s: ActionState) -> JavaActionState:
    def updates(us: list[MemoryUpdate]) -> list[JavaMemoryUpdate]:
        return [JavaMemoryUpdate(u.path, kryo.from_python(u.value, u.path), u.object_creation) for u in us]

    return JavaActionState(
        task_event=None if s.task_event is None else event_from_runtime(s.task_event),
        sensory_memory_updates=updates(s.sensory_memory_updates),
        short_term_memory_updates=updates(s.short_term_memory_updates),
        output_events=[event_from_runtime(e) for e in s.output_events],
        call_results=[
            JavaCallResult(
                c.function_id,
                c.args_digest,
                c.result_payload,
                c.exception_payload,
                None if c.status is None else c.status.value,
            )
            for c in s.call_results
        ],
        completed=s.completed,
    )


def serialize(state: ActionState) -> bytes:
    """Runtime state → Java ``ActionStateSerde`` bytes."""
    return write_action_state(from_runtime(state))


def deserialize(data: bytes, *, location: Location | None = None, dialect: Dialect = "pr1030") -> ActionState | None:
    """Java ``ActionStateSerde`` bytes → runtime state (``None`` for ``null``)."""
    java = read_action_state(data, location=location, dialect=dialect)
    return None if java is None else to_runtime(java)
