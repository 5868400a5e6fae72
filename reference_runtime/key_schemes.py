"""How the runner names action states: the Java scheme by default, collision-free on request (KEY-*).

The Java scheme gives two executions of one action on events with identical attributes in the same
run the same key (Flink Agents #1084), so the second would be skipped as "completed". The runner
therefore files every repeated occurrence under the collision-free key, even in the Java scheme: the
first occurrence keeps the Java key (what a Java job reads and writes), the repeats, which Java
cannot represent, get a key Java never produces.
"""

from __future__ import annotations

from typing import Protocol

from .events import Event
from .records import ActionRef
from .state_keys import collision_free_state_key, java_state_key, legacy_020_state_key


class KeyScheme(Protocol):
    name: str

    def state_key(self, key: str, seq: int, action: ActionRef, event: Event, occurrence: int) -> str: ...


class JavaKeyScheme:
    """``{key}_{seq}_{event uuid}_{action uuid}`` exactly as Flink Agents builds it (KEY-1)."""

    name = "java"

    def state_key(self, key: str, seq: int, action: ActionRef, event: Event, occurrence: int) -> str:
        if occurrence:
            return collision_free_state_key(key, seq, action, event, occurrence)
        return java_state_key(key, seq, action, event)


class Legacy020KeyScheme:
    """The keys a Flink Agents 0.2.0 job uses (WIRE-11): the event named by its pickle, the triggers by their
    0.2.0 class paths. A topic in the 0.2 format asks the runner for it (``store.key_scheme``)."""

    name = "flink-agents-0.2"

    def state_key(self, key: str, seq: int, action: ActionRef, event: Event, occurrence: int) -> str:
        if occurrence:
            return collision_free_state_key(key, seq, action, event, occurrence)
        return legacy_020_state_key(key, seq, action, event)


class CollisionFreeKeyScheme:
    """Unambiguous keys for every execution, at the price of Java compatibility."""

    name = "collision-free"

    def state_key(self, key: str, seq: int, action: ActionRef, event: Event, occurrence: int) -> str:
        return collision_free_state_key(key, seq, action, event, occurrence)


_SCHEMES: dict[str, type[JavaKeyScheme] | type[Legacy020KeyScheme] | type[CollisionFreeKeyScheme]] = {
    "java": JavaKeyScheme,
    "flink-agents-0.2": Legacy020KeyScheme,
    "collision-free": CollisionFreeKeyScheme,
}


def get_key_scheme(name: str) -> KeyScheme:
    try:
        return _SCHEMES[name]()
    except KeyError:
        raise ValueError(f"unknown key scheme {name!r}; choose one of {sorted(_SCHEMES)}") from None
