"""State keys exactly as Flink Agents' Java ``ActionStateUtil.generateKey`` builds them (KEY-1..KEY-3).

``{key}_{seq}_{event_uuid}_{action_uuid}``: the event uuid is a name-based (MD5, version 3, no namespace)
UUID of the event *attributes* written as compact Jackson JSON with map keys sorted; the action uuid is
the same over the decimal string of Java's ``Action.hashCode()``.

Flink Agents 0.2.0 named a Python event differently: by ``UUID.nameUUIDFromBytes`` of the event's pickle, and
listed an action's triggers as Python class paths (``flink_agents.api.events.event.InputEvent``) where later
releases list the type (``_input_event``). :func:`legacy_020_state_key` builds those keys (WIRE-11).

Known flaws, kept for compatibility and documented in docs/wire-format.md: two executions of an action
on events with identical attributes in one run collide (Flink Agents #1084), and a business key that
contains ``_`` makes the key ambiguous to parse. :func:`collision_free_state_key` avoids both.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from typing import Any
from urllib.parse import quote

from .events import Event
from .records import ActionRef
from .serde.jackson import jackson_sorted_json
from .serde.java import utf16_units
from .serde.legacy_event import TRIGGER_CLASSES_020, event_pickle, event_value


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def java_string_hash(s: str) -> int:
    """``String.hashCode``: over UTF-16 code units, 32-bit signed."""
    h = 0
    for unit in utf16_units(s):
        h = (31 * h + unit) & 0xFFFFFFFF
    return _int32(h)


def java_objects_hash(*hashes: int) -> int:
    """``Objects.hash`` (= ``Arrays.hashCode``) of already-hashed elements."""
    h = 1
    for x in hashes:
        h = (31 * h + x) & 0xFFFFFFFF
    return _int32(h)


def java_list_hash(items: list[str]) -> int:
    return java_objects_hash(*(java_string_hash(s) for s in items))


def action_hash(action: ActionRef) -> int:
    """``Action.hashCode() = Objects.hash(name, Objects.hash(module, qualname), triggers.hashCode())``."""
    function_hash = java_objects_hash(java_string_hash(action.module), java_string_hash(action.qualname))
    return java_objects_hash(java_string_hash(action.name), function_hash, java_list_hash(list(action.triggers)))


def name_uuid(data: bytes) -> uuid.UUID:
    """``UUID.nameUUIDFromBytes``: MD5 with version-3 and IETF variant bits, no namespace."""
    digest = bytearray(hashlib.md5(data).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(digest))


def event_uuid(event: Event) -> uuid.UUID:
    return name_uuid(jackson_sorted_json(event.attributes).encode("utf-8"))


@functools.lru_cache(maxsize=1024)
def action_uuid(action: ActionRef) -> uuid.UUID:
    # Cached: a pure function of an immutable ref, computed for every action execution otherwise.
    return name_uuid(str(action_hash(action)).encode("utf-8"))


def java_state_key(key: Any, seq: int, action: ActionRef, event: Event) -> str:
    """The Java state key; ``key`` is written with ``toString`` semantics (str, or int as Long)."""
    return f"{key}_{seq}_{event_uuid(event)}_{action_uuid(action)}"


def legacy_020_event_uuid(event: Event) -> uuid.UUID:
    """0.2.0's event uuid: name-based over the pickle its Python runtime makes of the event (an
    ``InputEvent``/``OutputEvent`` only; ``LegacyFormatError``, a ValueError, for any other)."""
    return name_uuid(event_pickle(*event_value(event))[0])


def legacy_020_action_uuid(action: ActionRef) -> uuid.UUID:
    """0.2.0's action uuid: as :func:`action_uuid`, with built-in trigger types spelled as 0.2.0's classes."""
    triggers = tuple(TRIGGER_CLASSES_020.get(t, t) for t in action.triggers)
    return action_uuid(ActionRef(action.name, action.module, action.qualname, triggers))


def legacy_020_state_key(key: Any, seq: int, action: ActionRef, event: Event) -> str:
    """The state key a Flink Agents 0.2.0 job files this action execution under."""
    return f"{key}_{seq}_{legacy_020_event_uuid(event)}_{legacy_020_action_uuid(action)}"


def collision_free_state_key(key: Any, seq: int, action: ActionRef, event: Event, occurrence: int) -> str:
    """An unambiguous key: the business key is percent-encoded (so ``_`` cannot appear in it) and the
    occurrence of the action on identical attributes within the run is part of the key."""
    safe_key = quote(str(key), safe="").replace("_", "%5F")
    return f"{safe_key}_{seq}_{event_uuid(event)}_{action_uuid(action)}_{occurrence}"
