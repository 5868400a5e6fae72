"""Python events as Flink Agents 0.2.0 carries them in a ``PythonEvent`` (spec WIRE-10, WIRE-11).

0.2.0 wraps every event of a Python agent in the Java class ``PythonEvent``: ``event`` is
``cloudpickle.dumps`` of the pydantic event object (``flink_agents.api.events.event.InputEvent`` or
``OutputEvent``), ``eventType`` its class path and ``eventJsonStr`` a JSON text for logs. The event's ``id``
is content-based: a version-3 UUID over the MD5 of ``model_dump_json(exclude={"id"})``. The state key names
the event by ``UUID.nameUUIDFromBytes(event pickle)``, so a writer that wants the engine to find its states
must produce the engine's pickle byte for byte. This module builds those bytes without importing
``flink_agents`` or pydantic: the pickle has a fixed shape (checked against the captured records and, in
``tests/engine020``, against the real 0.2.0 package) and only the field value varies.

Only ``InputEvent`` and ``OutputEvent`` are written: other 0.2.0 events are pydantic models whose pickles
depend on their class definitions. Their values must be JSON data (None, bool, int, float, str, list, tuple,
dict with str keys); anything else raises :class:`LegacyFormatError`.
"""

from __future__ import annotations

import copyreg
import hashlib
import io
import json
import math
import pickle
import uuid
from typing import Any

PYTHON_EVENT = "org.apache.flink.agents.runtime.python.event.PythonEvent"
_EVENTS_MODULE = "flink_agents.api.events.event"
#: The runtime's event type → (0.2.0 class name, the pydantic field that holds the value).
EVENT_CLASSES_020 = {"_input_event": ("InputEvent", "input"), "_output_event": ("OutputEvent", "output")}
#: Built-in event types as 0.2.0 names them in an action's trigger list (its ``listenEventTypes``).
TRIGGER_CLASSES_020 = {
    "_input_event": f"{_EVENTS_MODULE}.InputEvent",
    "_output_event": f"{_EVENTS_MODULE}.OutputEvent",
    "_chat_request_event": "flink_agents.api.events.chat_event.ChatRequestEvent",
    "_chat_response_event": "flink_agents.api.events.chat_event.ChatResponseEvent",
    "_tool_request_event": "flink_agents.api.events.tool_event.ToolRequestEvent",
    "_tool_response_event": "flink_agents.api.events.tool_event.ToolResponseEvent",
}


class LegacyFormatError(ValueError):
    """Something the 0.2.0 format cannot carry: an event of another type, an extra attribute, a value that is not
    JSON data, a PENDING call, a ``new_object`` memory update."""


# -- pydantic's JSON, for the content-based id -------------------------------------------------------------


def _pydantic_float(x: float) -> str:
    """A finite double as pydantic-core writes it (Rust ``ryu``: shortest digits, ``1e20``, ``1.5e-7``)."""
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    raw = whole + frac
    # ``point``: where the decimal point sits relative to the start of ``digits`` (ryu's ``kk``).
    point = len(whole) + int(exp_text or 0) - (len(raw) - len(raw.lstrip("0")))
    digits = raw.strip("0") or "0"
    n = len(digits)
    if n <= point <= 16:
        text = digits + "0" * (point - n) + ".0"
    elif 0 < point <= 16:
        text = digits[:point] + "." + digits[point:]
    elif -5 < point <= 0:
        text = "0." + "0" * -point + digits
    elif n == 1:
        text = f"{digits}e{point - 1}"
    else:
        text = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return sign + text


def _pydantic_string(s: str) -> str:
    # serde_json's escaping, which pydantic-core uses, is the stdlib's without ensure_ascii: short escapes,
    # lowercase ``\u00xx`` for other control characters, everything else raw.
    return json.dumps(s, ensure_ascii=False)


def pydantic_json(value: Any, path: str = "value") -> str:
    """``value`` as pydantic-core's ``model_dump_json`` writes it: compact, raw UTF-8, NaN and infinities as
    ``null``. Only JSON data is accepted (LegacyFormatError names the path of anything else)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _pydantic_float(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return _pydantic_string(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(pydantic_json(v, f"{path}[{i}]") for i, v in enumerate(value)) + "]"
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise LegacyFormatError(f"{path} has the key {k!r}: a 0.2.0 event holds dicts with str keys only")
            items.append(f"{_pydantic_string(k)}:{pydantic_json(v, f'{path}[{k!r}]')}")
        return "{" + ",".join(items) + "}"
    raise LegacyFormatError(
        f"{path} is a {type(value).__name__}: a 0.2.0 event holds JSON data only "
        "(None, bool, int, float, str, list, dict with str keys)"
    )


def content_id(field: str, value: Any) -> uuid.UUID:
    """The id 0.2.0's ``Event`` gives itself: MD5 of its JSON without ``id``, as a version-3 UUID."""
    digest = hashlib.md5(f"{{{_pydantic_string(field)}:{pydantic_json(value, field)}}}".encode()).digest()
    return uuid.UUID(bytes=digest, version=3)


# -- the pickle ------------------------------------------------------------------------------------------


class _ClassName:
    """A class named by module and name, pickled by reference without importing it."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name


class _Model:
    """Stands for a pydantic model instance: pickles as pydantic's ``__reduce_ex__`` does."""

    def __init__(self, cls: _ClassName, state: dict[str, Any]) -> None:
        self._cls = cls
        self._state = state

    @property  # type: ignore[misc]  # save_reduce checks ``obj.__class__ is args[0]``
    def __class__(self) -> Any:
        return self._cls

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_NEWOBJ, (self._cls,), self._state)


#: The pure-Python pickler (typeshed does not describe it) and pydantic's reconstructor.
_PurePickler: Any = getattr(pickle, "_Pickler")  # noqa: B009
_NEWOBJ: Any = getattr(copyreg, "__newobj__")  # noqa: B009


class _EventPickler(_PurePickler):  # type: ignore[misc]
    """The pure-Python pickler (the same bytes as the C one CPython and cloudpickle use for these objects),
    with class references written as ``STACK_GLOBAL`` without the importability check."""

    dispatch = dict(_PurePickler.dispatch)

    def _save_class_name(self, obj: _ClassName) -> None:
        self.save(obj.module)
        self.save(obj.name)
        self.write(pickle.STACK_GLOBAL)
        self.memoize(obj)

    dispatch[_ClassName] = _save_class_name


def event_pickle(event_type: str, value: Any) -> tuple[bytes, uuid.UUID]:
    """``cloudpickle.dumps`` of the 0.2.0 event of ``event_type`` (``_input_event`` or ``_output_event``) whose
    field holds ``value``, and the event's id. ``value`` is first copied through pickle so that shared and
    cached objects (CPython shares one-character strings) are memoized exactly as the engine's copy is."""
    class_name, field = _spec(event_type)
    event_id = content_id(field, value)
    engine_copy = pickle.loads(pickle.dumps(value, protocol=5))
    state = {
        "__dict__": {"id": event_id, field: engine_copy},
        "__pydantic_extra__": {},
        "__pydantic_fields_set__": {field},
        "__pydantic_private__": None,
    }
    out = io.BytesIO()
    _EventPickler(out, protocol=5).dump(_Model(_ClassName(_EVENTS_MODULE, class_name), state))
    return out.getvalue(), event_id


def event_json_str(event_type: str, value: Any, event_id: uuid.UUID) -> str:
    """The ``eventJsonStr`` 0.2.0 writes for logs: ``json.dumps`` of the event's JSON with its class path."""
    class_name, field = _spec(event_type)
    payload = {"id": str(event_id), field: json.loads(pydantic_json(value, field))}
    payload["eventType"] = f"{_EVENTS_MODULE}.{class_name}"
    payload["attributes"] = {}
    return json.dumps(payload)


def event_class_path(event_type: str) -> str:
    """``eventType`` of a ``PythonEvent``: the 0.2.0 class path of a built-in event type."""
    return f"{_EVENTS_MODULE}.{_spec(event_type)[0]}"


def event_value(event: Any) -> tuple[str, Any]:
    """(type, value) of a runtime event the 0.2.0 format can carry: an ``InputEvent``/``OutputEvent`` whose
    attributes are exactly its one field and whose class its type names (no recorded class, EVT-1)."""
    class_name, field = _spec(event.type)
    if set(event.attributes) != {field} or event.record_class() is not None:
        raise LegacyFormatError(
            f"a {event.type!r} event with attributes {sorted(event.attributes)} cannot be written in the 0.2.0 "
            f"format: its {class_name} holds exactly one field, {field!r}"
        )
    return event.type, event.attributes[field]


def _spec(event_type: str) -> tuple[str, str]:
    try:
        return EVENT_CLASSES_020[event_type]
    except KeyError:
        raise LegacyFormatError(
            f"a {event_type!r} event cannot be written in the 0.2.0 format: it carries only InputEvent and "
            "OutputEvent (0.2.0's other events are pydantic models of their own)"
        ) from None
