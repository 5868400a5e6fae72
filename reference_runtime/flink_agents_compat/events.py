"""``flink_agents`` events on the reference runtime (spec FA-4, FA-8, EVT-1).

A ``flink_agents`` event travels through the runtime as a :class:`WrappedEvent`: its class by import
path and its content as the JSON data a Flink cluster sends between actions (``Event.model_dump_json``:
pydantic models become dicts, a ``pyflink`` ``Row`` becomes ``{"type": "Row", ...}``), so a store keeps
it like any other event. An action receives the event rebuilt from that data the way a cluster rebuilds
it (``Event.from_json``, which turns ``Row`` data back into ``Row``s), as an instance of the class it was
sent as: every delivery builds fresh objects, so an action that edits its event in place never changes
what the runtime keeps, and recovery replays exactly what the crash-free run delivered.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

from flink_agents.api.events.event import Event as FlinkEvent
from flink_agents.api.events.event import InputEvent as FlinkInputEvent
from flink_agents.api.events.event import OutputEvent as FlinkOutputEvent
from pydantic_core import PydanticSerializationError

from ..errors import InvalidValueError
from ..events import Event
from ..limits import safe_repr

_BASE_FIELDS = ("id", "type", "attributes")
#: Built-in flink_agents classes by event type, for events the runtime itself creates (its InputEvent).
_BUILTIN_BY_TYPE: dict[str, type[FlinkEvent]] = {}


def _builtin_classes() -> dict[str, type[FlinkEvent]]:
    if not _BUILTIN_BY_TYPE:
        from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
        from flink_agents.api.events.context_retrieval_event import (
            ContextRetrievalRequestEvent,
            ContextRetrievalResponseEvent,
        )
        from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent

        for cls in (
            FlinkInputEvent,
            FlinkOutputEvent,
            ChatRequestEvent,
            ChatResponseEvent,
            ToolRequestEvent,
            ToolResponseEvent,
            ContextRetrievalRequestEvent,
            ContextRetrievalResponseEvent,
        ):
            _BUILTIN_BY_TYPE[cls.EVENT_TYPE] = cls
    return _BUILTIN_BY_TYPE


class WrappedEvent(Event):
    """A ``flink_agents`` event inside the runtime: ``attributes`` and ``fields`` are JSON data."""

    __slots__ = ("fields", "flink_class")

    def __init__(
        self,
        flink_class: type[FlinkEvent],
        event_type: str,
        attributes: dict[str, Any],
        fields: dict[str, Any],
        *,
        id: uuid.UUID | None,
    ) -> None:
        super().__init__(event_type, attributes, id=id)
        self.flink_class = flink_class
        self.fields = fields

    def record_class(self) -> str:
        return f"{self.flink_class.__module__}:{self.flink_class.__qualname__}"

    def record_fields(self) -> dict[str, Any]:
        return dict(self.fields)

    def __repr__(self) -> str:
        return f"WrappedEvent({self.flink_class.__qualname__}, type={self.type!r}, attributes={self.attributes!r})"


def json_data(model: Any, what: str) -> Any:
    """The JSON data a Flink cluster makes of a ``flink_agents`` pydantic object (an event): its
    ``model_dump_json``, read back. Content JSON cannot carry is one :class:`InvalidValueError`."""
    try:
        return json.loads(model.model_dump_json())
    except PydanticSerializationError as exc:
        raise InvalidValueError(
            f"{what} cannot be sent as JSON, which is how Flink Agents carries events between actions "
            f"({exc}); give it plain data, a pydantic model or a pyflink Row"
        ) from None


def wrap(event: FlinkEvent, sender: str = "") -> WrappedEvent:
    """The runtime form of a ``flink_agents`` event (its JSON data, as a cluster sends it); ``sender`` says
    where it was sent from, for the error about content JSON cannot carry."""
    data = json_data(event, f"the {event.type!r} event ({type(event).__qualname__}){sender}")
    fields = {k: v for k, v in data.items() if k not in _BASE_FIELDS}
    return WrappedEvent(type(event), event.type, dict(data.get("attributes") or {}), fields, id=event.id)


def input_data(value: Any) -> Any:
    """An input as a cluster hands it to the agent: ``InputEvent(input=value)`` as JSON data, its ``input``
    (a pydantic model becomes its dict, a ``Row`` its JSON form). Used by the runner for every input of a
    ``flink_agents`` agent (spec FA-8)."""
    return json_data(FlinkInputEvent(input=value), f"input {safe_repr(value, 80)}")["attributes"]["input"]


def cluster_value(value: Any) -> Any:
    """``value`` (JSON data held by the runtime, e.g. an output) as a cluster's job hands it on: rebuilt
    by ``Event.from_json``, so ``Row`` data becomes a ``pyflink`` ``Row`` again."""
    carrier = FlinkEvent.from_json(json.dumps({"type": FlinkOutputEvent.EVENT_TYPE, "attributes": {"v": value}}))
    return carrier.attributes["v"]


def unwrap(event: Event, *, base: bool = False) -> FlinkEvent:
    """The ``flink_agents`` event an action receives for a runtime event: of the class it was sent as, or
    with ``base`` a plain ``flink_agents`` ``Event`` with the same data, as a Flink cluster delivers it.
    Always new objects: nothing the action changes reaches the runtime's copy."""
    fields = event.fields if isinstance(event, WrappedEvent) else {}
    if base:
        return _from_json(event.id, event.type, event.attributes, fields)
    if isinstance(event, WrappedEvent):
        cls: type[FlinkEvent] = event.flink_class
    else:
        cls = _builtin_classes().get(event.type, FlinkEvent)
    return build(cls, event.id, event.type, event.attributes, fields)


def _from_json(event_id: uuid.UUID | None, event_type: str, attributes: dict[str, Any], fields: dict[str, Any]) -> Any:
    data = {"type": event_type, "attributes": attributes, **fields}
    if event_id is not None:
        data["id"] = str(event_id)
    return FlinkEvent.from_json(json.dumps(data))


def build(
    cls: type[FlinkEvent],
    event_id: uuid.UUID | None,
    event_type: str,
    attributes: dict[str, Any],
    fields: dict[str, Any],
) -> FlinkEvent:
    """An instance of ``cls`` from JSON data, as a typed event is rebuilt from a base one in Flink Agents:
    the base event by ``Event.from_json`` (as a cluster builds it), then ``cls.from_event`` where the class
    defines one (built-ins rebuild their messages), otherwise the base event's data validated into ``cls``
    (without calling a custom ``__init__``, whose parameters are the user's, not the event's fields)."""
    check_schema_modules(attributes, f"the {event_type!r} event")
    base = _from_json(event_id, event_type, attributes, fields)
    if cls is FlinkEvent:
        return base  # type: ignore[no-any-return]
    if "from_event" in _own_overrides(cls):
        event = cls.from_event(base)
        if event.id != event_id and event_id is not None:
            event.id = event_id
        return event
    data = {"id": base.id, "type": base.type, "attributes": base.attributes, **(base.model_extra or {})}
    if getattr(cls, "__pydantic_custom_init__", False):
        return cls.model_construct(**data)
    return cls.model_validate(data)


def check_schema_modules(value: Any, what: str, depth: int = 3) -> None:
    """Refuse an output schema reference (``{"output_schema": {"module": m, ...}}``, what Flink Agents writes
    for a chat request's ``OutputSchema``) naming a module this process has not imported: Flink Agents
    imports that module when it reads the reference back, and a stored record (an event, a memory value
    replayed on recovery) must never make it load a new one (spec EVT-3, FA-8). Dicts are searched
    ``depth`` levels deep, where Flink Agents puts them (attributes, tool-request context in memory)."""
    if not isinstance(value, dict) or depth < 0:
        return
    schema = value.get("output_schema")
    if isinstance(schema, dict):
        inner = schema.get("output_schema", schema)
        module = inner.get("module") if isinstance(inner, dict) else None
        if module is not None and module not in sys.modules:
            raise InvalidValueError(
                f"{what} names the output schema module {safe_repr(module, 80)}, which is not loaded; a stored "
                "record never loads a new module (import the schema's module first, e.g. from the agent module)"
            )
    for item in value.values():
        if isinstance(item, dict):
            check_schema_modules(item, what, depth - 1)


def _own_overrides(cls: type) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is FlinkEvent:
            break
        names.update(vars(klass))
    return names


def rebuild_stored(cls: type[FlinkEvent], base: Event, fields: dict[str, Any]) -> WrappedEvent:
    """The runtime form of a stored ``flink_agents`` event of class ``cls`` (spec EVT-1), validated now, so
    a record the class refuses fails where it is read (spec EVT-2)."""
    try:
        build(cls, base.id, base.type, base.attributes, fields)
    except Exception as exc:  # pydantic errors, from_event's assertions: any refusal of the data
        raise ValueError(f"{cls.__qualname__} refuses the stored data: {type(exc).__name__}: {exc}") from None
    return WrappedEvent(cls, base.type, base.attributes, fields, id=base.id)
