"""Reading runtime config values. Config maps come from users and files, so a switch may arrive as a
bool or as a string; one parser decides what counts as on and off (spec DE-14)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import DurableError

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class ConfigError(DurableError, ValueError):
    """A config value of the wrong kind; the message names the key, the value and what is accepted."""


def parse_bool(value: object, key: str) -> bool:
    """``value`` as a boolean: a bool, the integers 0 and 1, or one of true/false, 1/0, yes/no, on/off
    (any case, surrounding spaces ignored). Anything else raises :class:`ConfigError` naming ``key``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise ConfigError(f"config {key!r} must be a boolean (true/false, 1/0, yes/no, on/off), got {value!r}")


def config_bool(config: Mapping[str, Any], key: str, default: bool) -> bool:
    """The boolean switch ``key`` of ``config`` (``default`` when absent or None)."""
    value = config.get(key)
    return default if value is None else parse_bool(value, key)
