"""``flink_agents`` events on the reference runtime (spec FA-4, EVT-1).

A ``flink_agents`` event travels through the runtime as a :class:`WrappedEvent`: its class by import
path and its content as JSON data (what a Flink cluster sends between actions), so a store keeps it like
any other event. An action always receives the event rebuilt from that data, as an instance of the
class it was sent as, in the crash-free run and after recovery alike.
"""

from __future__ import annotations

import uuid
from typing import Any

from flink_agents.api.events.event import Event as FlinkEvent
from flink_agents.api.events.event import InputEvent as FlinkInputEvent
from flink_agents.api.events.event import OutputEvent as FlinkOutputEvent

from ..events import Event

_BASE_FIELDS = ("id", "type", "attributes")
#: Built-in flink_agents classes by event type, for events the runtime itself creates (its InputEvent).
_BUILTIN_BY_TYPE: dict[str, type[FlinkEvent]] = {}


def _builtin_classes() -> dict[str, type[FlinkEvent]]:
    if not _BUILTIN_BY_TYPE:
        from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
        from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent

        for cls in (
            FlinkInputEvent,
            FlinkOutputEvent,
            ChatRequestEvent,
            ChatResponseEvent,
            ToolRequestEvent,
            ToolResponseEvent,
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


def wrap(event: FlinkEvent) -> WrappedEvent:
    """The runtime form of a ``flink_agents`` event (its JSON data, as a cluster would send it)."""
    data = event.model_dump(mode="json", fallback=_unknown)
    fields = {k: v for k, v in data.items() if k not in _BASE_FIELDS}
    return WrappedEvent(type(event), event.type, dict(data.get("attributes") or {}), fields, id=event.id)


def _unknown(value: Any) -> Any:
    raise TypeError(
        f"event content {type(value).__name__} is not JSON data; Flink Agents sends events as "
        "JSON, so give it plain data or a pydantic model"
    )


def unwrap(event: Event, *, base: bool = False) -> FlinkEvent:
    """The ``flink_agents`` event an action receives for a runtime event: of the class it was sent as, or
    with ``base`` a plain ``flink_agents`` ``Event`` with the same data, as a Flink cluster delivers it."""
    if base:
        fields = event.fields if isinstance(event, WrappedEvent) else {}
        return FlinkEvent.model_validate(
            {"id": event.id, "type": event.type, "attributes": dict(event.attributes), **fields}
        )
    if isinstance(event, WrappedEvent):
        cls: type[FlinkEvent] = event.flink_class
        fields = event.fields
    else:
        cls = _builtin_classes().get(event.type, FlinkEvent)
        fields = {}
    return build(cls, event.id, event.type, event.attributes, fields)


def build(
    cls: type[FlinkEvent],
    event_id: uuid.UUID | None,
    event_type: str,
    attributes: dict[str, Any],
    fields: dict[str, Any],
) -> FlinkEvent:
    """An instance of ``cls`` from JSON data, as a typed event is rebuilt from a base one in Flink Agents:
    through ``cls.from_event`` where the class defines one (built-ins rebuild their messages), otherwise by
    validating the data into ``cls`` (without calling a custom ``__init__``, whose parameters are the
    user's, not the event's fields)."""
    data = {"id": event_id, "type": event_type, "attributes": dict(attributes), **fields}
    if "from_event" in _own_overrides(cls):
        base = FlinkEvent.model_validate(data)
        event = cls.from_event(base)
        if event.id != event_id and event_id is not None:
            event.id = event_id
        return event
    if getattr(cls, "__pydantic_custom_init__", False):
        FlinkEvent.model_validate(data)  # the base fields must still be valid
        return cls.model_construct(**data)
    return cls.model_validate(data)


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
