"""Events: the unit of communication between actions (flink_agents.api.events)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from .class_lookup import find_named, is_class

#: Java class name written as ``@class`` for events produced by Python agents.
BASE_EVENT_CLASS = "org.apache.flink.agents.api.Event"


class Event:
    """An event with a stable ``id``, a ``type`` string used for routing, and JSON-like ``attributes``.

    Built-in events are thin subclasses that fix ``type`` and expose their attributes as properties.
    ``java_class`` and the two lineage fields only matter for byte-exact Java serialization.
    """

    TYPE: ClassVar[str] = ""

    __slots__ = ("attributes", "id", "java_class", "type", "upstream_action_name", "upstream_event_id")

    def __init__(
        self,
        type: str | None = None,
        attributes: dict[str, Any] | None = None,
        *,
        id: uuid.UUID | None = None,
        java_class: str = BASE_EVENT_CLASS,
        upstream_event_id: str | None = None,
        upstream_action_name: str | None = None,
    ) -> None:
        event_type = type if type is not None else self.TYPE
        if not isinstance(event_type, str) or not event_type:
            raise ValueError("an event needs a non-empty type string")
        self.id: uuid.UUID | None = id if id is not None else uuid.uuid4()
        self.type: str = event_type
        self.attributes: dict[str, Any] = dict(attributes) if attributes else {}
        self.java_class = java_class
        self.upstream_event_id = upstream_event_id
        self.upstream_action_name = upstream_action_name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return (self.id, self.type, self.attributes) == (other.id, other.type, other.attributes)

    def __hash__(self) -> int:
        return hash((self.id, self.type))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(type={self.type!r}, attributes={self.attributes!r}, id={self.id})"

    def record_class(self) -> str | None:
        """``module:qualname`` of the class a store records so recovery rebuilds this class (spec EVT-1);
        ``None`` when the type alone says it: a plain :class:`Event`, or a built-in event of its own type
        (see :func:`builtin_class`). Subclasses that stand for a foreign event override it."""
        cls = type(self)
        if cls is Event or (_BUILTINS.get(self.type) is cls and not self.record_fields()):
            return None
        return f"{cls.__module__}:{cls.__qualname__}"

    def record_fields(self) -> dict[str, Any]:
        """Instance fields besides ``attributes`` that a store keeps with the event (spec EVT-1)."""
        return dict(getattr(self, "__dict__", {}))


class InputEvent(Event):
    """The event the runner sends for each input record."""

    TYPE = "_input_event"
    __slots__ = ()

    def __init__(self, input: Any, *, id: uuid.UUID | None = None) -> None:
        super().__init__(self.TYPE, {"input": input}, id=id)

    @property
    def input(self) -> Any:
        return self.attributes.get("input")


class OutputEvent(Event):
    """An event whose ``output`` is collected as an agent output for the current key."""

    TYPE = "_output_event"
    __slots__ = ()

    def __init__(self, output: Any, *, id: uuid.UUID | None = None) -> None:
        super().__init__(self.TYPE, {"output": output}, id=id)

    @property
    def output(self) -> Any:
        return self.attributes.get("output")


class ToolRequestEvent(Event):
    """A model asks for tool calls: each ``{"id", "function": {"name", "arguments"}}``."""

    TYPE = "_tool_request_event"
    __slots__ = ()

    def __init__(self, model: str, tool_calls: list[dict[str, Any]], *, id: uuid.UUID | None = None) -> None:
        super().__init__(self.TYPE, {"model": model, "tool_calls": tool_calls}, id=id)

    @property
    def model(self) -> str:
        return str(self.attributes.get("model"))

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.attributes.get("tool_calls") or [])


class ToolResponseEvent(Event):
    """Answers a :class:`ToolRequestEvent`, keyed by tool-call id."""

    TYPE = "_tool_response_event"
    __slots__ = ()

    def __init__(
        self,
        request_id: str,
        responses: dict[str, Any],
        external_ids: dict[str, Any] | None = None,
        success: dict[str, bool] | None = None,
        error: dict[str, str | None] | None = None,
        *,
        id: uuid.UUID | None = None,
    ) -> None:
        super().__init__(
            self.TYPE,
            {
                "request_id": request_id,
                "responses": responses,
                "external_ids": external_ids or {},
                "success": success or {},
                "error": error or {},
            },
            id=id,
        )

    @property
    def request_id(self) -> str:
        return str(self.attributes.get("request_id"))

    @property
    def responses(self) -> dict[str, Any]:
        return dict(self.attributes.get("responses") or {})


class ChatRequestEvent(Event):
    """Asks the chat model named ``model`` to answer ``messages``."""

    TYPE = "_chat_request_event"
    __slots__ = ()

    def __init__(
        self, model: str, messages: list[dict[str, Any]], *, id: uuid.UUID | None = None, **extra: Any
    ) -> None:
        super().__init__(self.TYPE, {"model": model, "messages": messages, **extra}, id=id)

    @property
    def model(self) -> str:
        return str(self.attributes.get("model"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.attributes.get("messages") or [])


class ChatResponseEvent(Event):
    """The chat model's answer to a :class:`ChatRequestEvent`."""

    TYPE = "_chat_response_event"
    __slots__ = ()

    def __init__(self, request_id: str, response: Any, *, id: uuid.UUID | None = None, **extra: Any) -> None:
        super().__init__(self.TYPE, {"request_id": request_id, "response": response, **extra}, id=id)

    @property
    def request_id(self) -> str:
        return str(self.attributes.get("request_id"))

    @property
    def response(self) -> Any:
        return self.attributes.get("response")


def event_type_of(spec: str | type[Event]) -> str:
    """Normalise an ``@action`` trigger (a type string or an Event subclass) to its type string."""
    if isinstance(spec, str):
        if not spec:
            raise ValueError("event type must be a non-empty string")
        return spec
    if isinstance(spec, type) and issubclass(spec, Event) and spec.TYPE:
        return spec.TYPE
    raise TypeError(f"@action expects event type strings or built-in Event classes, got {spec!r}")


_BUILTINS: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (InputEvent, OutputEvent, ToolRequestEvent, ToolResponseEvent, ChatRequestEvent, ChatResponseEvent)
}


def builtin_class(event_type: str) -> type[Event]:
    """The class a stored event without a recorded class is rebuilt as: the built-in event of that type
    (so records written before classes were recorded come back typed too), else :class:`Event`."""
    return _BUILTINS.get(event_type, Event)


_CLASS_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")

#: Rebuilders for event classes that are not :class:`Event` subclasses (e.g. ``flink_agents`` events):
#: (is this family's class?, rebuild from the stored base event and fields).
_FAMILIES: list[tuple[Callable[[type], bool], Callable[[type, Event, dict[str, Any]], Event]]] = []


def register_event_family(
    owns: Callable[[type], bool], rebuild: Callable[[type, Event, dict[str, Any]], Event]
) -> None:
    """Let a store rebuild events of classes outside :class:`Event`. The ``flink_agents`` adapter's family
    is registered when ``reference_runtime`` is imported (this module never imports the adapter)."""
    _FAMILIES.append((owns, rebuild))


def resolve_event_class(path: str) -> type:
    """The class a record names as ``module:qualname``. Raises ``LookupError`` (not found) or ``TypeError``
    (not an event class); a record may name anything, so nothing but a class that is an event class of a known
    family is ever returned, nothing named is called, and no module is imported unless the user allowed it
    with :func:`~reference_runtime.set_record_imports` (spec EVT-3, EVT-4)."""
    if not isinstance(path, str) or not _CLASS_PATH.fullmatch(path):
        raise TypeError(f"{path!r} is not a class path module:qualname")
    module_name, _, qualname = path.partition(":")
    try:
        obj = find_named(module_name, qualname)
    except LookupError as exc:
        raise LookupError(f"event class {path} cannot be imported: {exc}") from None
    except ImportError as exc:  # an allowed module that fails to import
        raise LookupError(f"event class {path} cannot be imported ({type(exc).__name__}: {exc})") from None
    if is_class(obj) and (issubclass(obj, Event) or any(owns(obj) for owns, _ in _FAMILIES)):
        return obj
    raise TypeError(f"{path} is not an Event class")


def rebuild_event(path: str, base: Event, fields: dict[str, Any]) -> Event:
    """The event of class ``path`` equal to ``base`` with ``fields`` (spec EVT-1). The class's
    ``__init__`` is not called: the stored attributes and fields are set as they were."""
    cls = resolve_event_class(path)
    if issubclass(cls, Event):
        event = cls.__new__(cls)
        Event.__init__(
            event,
            base.type,
            base.attributes,
            id=base.id,
            java_class=base.java_class,
            upstream_event_id=base.upstream_event_id,
            upstream_action_name=base.upstream_action_name,
        )
        event.id = base.id
        if fields:
            if not hasattr(event, "__dict__"):
                raise TypeError(f"{path} has no instance fields, but the record has {sorted(fields)}")
            event.__dict__.update(fields)
        return event
    for owns, rebuild in _FAMILIES:
        if owns(cls):
            return rebuild(cls, base, fields)
    raise TypeError(f"{path} is not an Event class")  # unreachable: resolve_event_class checked it
