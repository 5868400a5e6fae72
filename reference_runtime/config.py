"""Runtime configuration: the registry of every key the runtime reads, parsed once (spec CFG-1 … CFG-5).

A config map (the agent's ``config`` merged with ``Runner(config=...)``) also carries the agent's own keys
and, often, keys of other systems (a whole Flink config). :func:`parse_settings` reads the keys of
:data:`KEYS` into a frozen :class:`RuntimeSettings`, refuses a bad value with one :class:`ConfigError`, and
warns (:class:`UnknownConfigKeyWarning`) about a key that looks meant for the runtime but is not one of its
keys: any unknown key under a prefix the runtime owns (:data:`OWNED_PREFIXES`), and elsewhere only a near
miss of a known key, so foreign keys stay silent (spec CFG-4).
"""

from __future__ import annotations

import difflib
import enum
import functools
import os
import sys
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from .errors import ConfigError, UnknownConfigKeyWarning
from .limits import safe_repr

__all__ = [
    "ACTION_KEY",
    "ACTION_PREFIX",
    "KEYS",
    "OWNED_PREFIXES",
    "ConfigError",
    "ConfigKey",
    "RuntimeSettings",
    "UnknownConfigKeyWarning",
    "markdown_table",
    "parse_bool",
    "parse_settings",
]

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_BOOL_TEXT = "a boolean (true/false, 1/0, yes/no, on/off)"

Kind = Literal["bool", "int", "duration-ms", "enum", "mapping"]

#: Per-action config: ``action.<name>`` maps an action's name to the mapping its ``ctx.action_config`` reads.
ACTION_PREFIX = "action."

#: Key prefixes only the runtime uses: any unknown key under one of them warns (spec CFG-4).
OWNED_PREFIXES = ("tool-call.", "durable-execution.", "flink-agents.", ACTION_PREFIX)

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

#: How alike an unknown key and a known one must be (``difflib`` ratio) to count as a misspelling.
_NEAR_MISS = 0.8


def _error(key: str, value: object, expected: str, example: str) -> ConfigError:
    return ConfigError(
        f"config {key!r} must be {expected}, got {safe_repr(value)}; set e.g. {{{key!r}: {example}}} "
        f"or leave the key out for its default (see docs/configuration.md)",
        key=key,
        value=value,
        expected=expected,
    )


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
    raise _error(key, value, _BOOL_TEXT, "False")


def _parse_int(value: object, key: str, minimum: int | None) -> int:
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            number = None
    if number is None or (minimum is not None and number < minimum):
        expected = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise _error(key, value, expected, "4" if minimum is not None else "500")
    return number


@dataclass(frozen=True)
class ConfigKey:
    """One key of the registry: its name, kind, accepted values, what it does and its clause; its default is
    that of its :class:`RuntimeSettings` field (:attr:`default`)."""

    name: str
    kind: Kind
    #: The field of :class:`RuntimeSettings` the parsed value goes to; its default is the key's default.
    attr: str
    description: str
    clause: str
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    #: How the docs show a default computed at parse time (``None``: ``repr``-like text of ``default``).
    default_text: str | None = None
    allowed_text: str | None = None
    #: A ``Runner`` keyword that is another name for this key: it feeds the same value, parsed the same way,
    #: and wins over the config map (``None``: none). Kept for options documented before the key existed.
    alias: str | None = None

    def parse(self, value: object) -> Any:
        """``value`` (from a config map) as this key's type; a bad value raises :class:`ConfigError`."""
        if self.kind == "bool":
            return parse_bool(value, self.name)
        if self.kind in ("int", "duration-ms"):
            return _parse_int(value, self.name, self.minimum)
        if self.kind == "enum":
            if isinstance(value, enum.Enum):
                value = value.value  # a Flink Agents option value (e.g. ShortTermMemoryTtlUpdate) is its name
            text = value.strip() if isinstance(value, str) else value
            if text not in self.choices:
                raise _error(self.name, value, "one of " + ", ".join(map(repr, self.choices)), repr(self.choices[0]))
            return text
        raise AssertionError(f"unhandled kind {self.kind!r}")  # the registry below uses only the kinds above

    @property
    def default(self) -> Any:
        """The value of an absent key: the default of its :class:`RuntimeSettings` field, the one place
        defaults are written."""
        return getattr(_DEFAULTS, self.attr)

    @property
    def default_doc(self) -> str:
        if self.default_text is not None:
            return self.default_text
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return f"`{self.default}`" if isinstance(self.default, str) else str(self.default)

    @property
    def allowed_doc(self) -> str:
        if self.allowed_text is not None:
            return self.allowed_text
        if self.kind == "bool":
            return "true/false, 1/0, yes/no, on/off"
        if self.choices:
            return ", ".join(f"`{c}`" for c in self.choices)
        return "any integer" if self.minimum is None else f">= {self.minimum}"


#: Every key the runtime reads (spec CFG-1). ``action.<name>`` is the one family of keys (:data:`ACTION_KEY`).
KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "num-async-threads", "int", "num_async_threads",
        "Threads of the pool async durable work runs on (`Runner(async_threads=...)` is an alias that overrides it).",
        "RUN-17", minimum=1, alias="async_threads",
    ),
    ConfigKey(
        "tool-call.parallelism", "int", "tool_call_parallelism",
        "Calls of one batch (`durable_execute_all_async`) that run at once.",
        "BAT-3", minimum=1, default_text="the CPU count",
    ),
    ConfigKey(
        "tool-call.batch.timeout.ms", "duration-ms", "tool_call_batch_timeout_ms",
        "Deadline of a batch in milliseconds on the runtime's clock; <= 0: no deadline.",
        "BAT-6",
    ),
    ConfigKey(
        "tool-call.async", "bool", "tool_call_async",
        "The built-in tool-call action runs tools off the runner's thread; off: one at a time on it.",
        "TOOL-3",
    ),
    ConfigKey(
        "tool-call.parallel", "bool", "tool_call_parallel",
        "The built-in tool-call action runs a request's tools as one parallel batch; off: one at a time.",
        "TOOL-3",
    ),
    ConfigKey(
        "chat.async", "bool", "chat_async",
        "The built-in chat action asks the model off the runner's thread (`durable_execute_async`).",
        "TOOL-5",
    ),
    ConfigKey(
        "durable-execution.reconcilers", "bool", "reconcilers",
        "Test switch: false ignores every reconciler, as if no call had one.",
        "DE-14",
    ),
    ConfigKey(
        "flink-agents.event-delivery", "enum", "event_delivery",
        "A `flink_agents` agent's actions get events of the class they were sent as (`typed`) or base `Event`s.",
        "FA-4", choices=("typed", "base"),
    ),
    ConfigKey(
        "short-term-memory.state-ttl.ms", "duration-ms", "memory_ttl_ms",
        "Short-term memory state TTL in milliseconds on the runtime's clock; <= 0: values never expire.",
        "MEM-14",
    ),
    ConfigKey(
        "short-term-memory.state-ttl.update-type", "enum", "memory_ttl_update",
        "What refreshes a short-term memory value's TTL: writes only, or reads and writes.",
        "MEM-14", choices=("ON_READ_AND_WRITE", "ON_CREATE_AND_WRITE"),
    ),
    ConfigKey(
        "short-term-memory.state-ttl.visibility", "enum", "memory_ttl_visibility",
        "Whether an expired short-term memory value reads as absent or, never cleaned up in-process, as before.",
        "MEM-14", choices=("NEVER_RETURN_EXPIRED", "RETURN_EXPIRED_IF_NOT_CLEANED_UP"),
    ),
)  # fmt: skip

#: The ``action.<name>`` family: the action config of action ``<name>`` (a mapping).
ACTION_KEY = ConfigKey(
    "action.<name>", "mapping", "action_configs",
    "What `ctx.action_config` / `get_action_config_value` of action `<name>` read.",
    "FA-6", default_text="`{}`", allowed_text="a mapping; `<name>` an action of the agent",
)  # fmt: skip

_BY_NAME = {k.name: k for k in KEYS}
_BY_ALIAS = {k.alias: k for k in KEYS if k.alias is not None}
_NAMES = sorted(_BY_NAME)


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    """The runtime's config, parsed once from a config map by :func:`parse_settings`; modules read these
    attributes, never the map (spec CFG-2). Each field is the key of :data:`KEYS` with the same ``attr``,
    and its default here is that key's default: the one table of defaults (the registry reads it)."""

    #: Not Flink Agents' twice the CPU count: durable work is mostly I/O-bound, and the pool must not be what
    #: caps ``tool-call.parallelism`` (spec RUN-17 and its deviation).
    num_async_threads: int = 32
    #: ``None``: the CPU count, read when a batch starts (:attr:`batch_parallelism`).
    tool_call_parallelism: int | None = None
    tool_call_batch_timeout_ms: int = -1
    tool_call_async: bool = True
    tool_call_parallel: bool = True
    chat_async: bool = True
    reconcilers: bool = True
    event_delivery: str = "typed"
    memory_ttl_ms: int = 0
    memory_ttl_update: str = "ON_READ_AND_WRITE"
    memory_ttl_visibility: str = "NEVER_RETURN_EXPIRED"
    action_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def batch_parallelism(self) -> int:
        """How many calls of a batch run at once: ``tool-call.parallelism``, else the CPU count (spec BAT-3)."""
        return self.tool_call_parallelism or os.cpu_count() or 1

    def action_config(self, action: str) -> Mapping[str, Any]:
        """The ``action.<action>`` mapping (empty when the config has none)."""
        return self.action_configs.get(action, _EMPTY)


_EMPTY: Mapping[str, Any] = MappingProxyType({})
#: The settings of a config without runtime keys, shared: they are immutable (benchmark P4 builds many runners).
#: They are also every key's default (:attr:`ConfigKey.default`).
_DEFAULTS = RuntimeSettings()


def parse_settings(
    config: Mapping[str, Any], *, actions: Iterable[str] | None = None, aliases: Mapping[str, Any] | None = None
) -> RuntimeSettings:
    """Parse ``config`` into :class:`RuntimeSettings`.

    A value of ``None`` stands for an absent key (its default). A bad value raises :class:`ConfigError`
    naming the key, the value, what is accepted and the fix (spec CFG-3). Unknown keys warn by the rule of
    spec CFG-4 (``actions``: the agent's action names, to check ``action.<name>`` keys; ``None``: unchecked).
    ``aliases`` maps a key's :attr:`ConfigKey.alias` (a ``Runner`` keyword) to its value, which wins over
    the key in ``config`` (``None``: not given).
    """
    values: dict[str, Any] = {}
    action_configs: dict[str, Mapping[str, Any]] = {}
    known = None if actions is None else sorted(actions)
    for name, value in config.items():
        key = _BY_NAME.get(name) if isinstance(name, str) else None
        if key is not None:
            if value is not None:
                values[key.attr] = key.parse(value)
        elif isinstance(name, str) and name.startswith(ACTION_PREFIX):
            action = name[len(ACTION_PREFIX) :]
            if value is None:
                continue
            if not isinstance(value, Mapping):
                raise _error(name, value, "a mapping", "{'retries': 2}")
            if known is not None and action not in known:
                _warn(name, _unknown_action(name, action, known))
            action_configs[action] = value
        elif isinstance(name, str):
            hint = _unknown_key_hint(name)
            if hint is not None:
                _warn(name, hint)
    for alias, value in (aliases or {}).items():
        if value is not None:
            values[_BY_ALIAS[alias].attr] = _parse_alias(_BY_ALIAS[alias], alias, value)
    if action_configs:
        values["action_configs"] = MappingProxyType(action_configs)
    return RuntimeSettings(**values) if values else _DEFAULTS


def _parse_alias(key: ConfigKey, alias: str, value: object) -> Any:
    """``value`` given as ``Runner(<alias>=value)``: parsed as the key, an error naming both names."""
    try:
        return key.parse(value)
    except ConfigError as exc:
        raise ConfigError(
            f"{alias}={safe_repr(value)}: {alias} is another name for config {key.name!r}, which must be "
            f"{exc.expected}; pass such a value, or leave {alias} out to use the config's (see docs/configuration.md)",
            key=key.name,
            value=value,
            expected=exc.expected,
        ) from None


def _warn(key: str, message: str) -> None:
    # Point the warning at the first frame outside this package: the user's Runner(...) or parse_settings(...).
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is the frame of sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back  # type: ignore[assignment]
    warnings.warn(UnknownConfigKeyWarning(message, key), stacklevel=level)


@functools.lru_cache(maxsize=1024)
def _unknown_key_hint(name: str) -> str | None:
    """The warning for an unknown key, or ``None`` when the key is none of the runtime's business."""
    close = difflib.get_close_matches(name, _NAMES, n=1, cutoff=_NEAR_MISS)
    if close:
        return f"unknown config key {name!r}: did you mean {close[0]!r}? (the runtime ignores this key)"
    owned = next((p for p in OWNED_PREFIXES if name.startswith(p)), None)
    if owned is None:
        return None  # a key of the agent or of another system
    family = ", ".join(n for n in _NAMES if n.startswith(owned))
    return f"unknown config key {name!r} under {owned!r}, a prefix the runtime owns; its keys: {family}"


def _unknown_action(name: str, action: str, known: list[str]) -> str:
    close = difflib.get_close_matches(action, known, n=1, cutoff=0.6)
    if close:
        return f"config key {name!r} names no action of the agent: did you mean {ACTION_PREFIX + close[0]!r}?"
    return f"config key {name!r} names no action of the agent; its actions: {', '.join(known) or 'none'}"


def markdown_table() -> str:
    """The reference table of docs/configuration.md, generated from :data:`KEYS` (spec CFG-5)."""
    rows = ["| Key | Type | Default | Accepted | Description | Clause |", "|---|---|---|---|---|---|"]
    for key in (*KEYS, ACTION_KEY):
        rows.append(
            f"| `{key.name}` | {key.kind} | {key.default_doc} | {key.allowed_doc} | {key.description} | {key.clause} |"
        )
    return "\n".join(rows)
