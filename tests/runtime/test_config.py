"""The reconciler test switch read from config strings (spec DE-14) and the one boolean parser."""

from __future__ import annotations

from typing import Any

import pytest

from reference_runtime import CrashAt, FaultInjector, Phase, Runner
from reference_runtime.config import ConfigError, parse_bool, parse_settings
from reference_runtime.stores.memory import InMemoryStore

from . import agents


def _reconciled_after_crash(value: Any) -> bool:
    """Crash after the effect of the agent's one call and report whether recovery ran its reconciler."""
    agents.reset()
    agents.RECONCILED.clear()
    Runner(
        agents.WithReconciler,
        InMemoryStore(),
        injector=FaultInjector([CrashAt(Phase.AFTER_EFFECT)]),
        config={"durable-execution.reconcilers": value},
    ).run([("k", 1)])
    return bool(agents.RECONCILED)


@pytest.mark.parametrize("value", [False, "false", "False", "FALSE", "0", "no", " off "])
def test_reconcilers_switched_off_by_a_string(value: Any) -> None:
    """DE-14: "false" in a config map turns reconcilers off, like the boolean False."""
    assert not _reconciled_after_crash(value)


@pytest.mark.parametrize("value", [True, "true", "1", "Yes", None])
def test_reconcilers_stay_on(value: Any) -> None:
    """DE-14: true (or absent) keeps reconcilers on."""
    assert _reconciled_after_crash(value)


@pytest.mark.parametrize("value", ["nope", "", 2, 0.0, [], "tru"])
def test_a_bad_switch_is_a_typed_error_naming_the_key(value: Any) -> None:
    """DE-14: a value that is neither true nor false is refused, naming the key and the value."""
    with pytest.raises(ConfigError, match=r"'durable-execution\.reconcilers' must be a boolean") as info:
        _reconciled_after_crash(value)
    assert repr(value) in str(info.value)


def test_parser_accepts_the_documented_spellings() -> None:
    """DE-14: one parser for config switches, case-insensitive."""
    for text in ("true", "TRUE", "1", "yes", "on", 1, True):
        assert parse_bool(text, "k") is True
    for text in ("false", "False", "0", "no", "OFF", 0, False):
        assert parse_bool(text, "k") is False
    assert parse_settings({}).reconcilers is True
    assert parse_settings({"durable-execution.reconcilers": None}).reconcilers is True


def test_tool_switches_use_the_same_parser() -> None:
    """DE-14: the tool-call switches read config strings the same way (``"no"`` is off, not an error)."""
    assert parse_settings({"tool-call.async": "no"}).tool_call_async is False
    assert parse_settings({"tool-call.parallel": "YES", "chat.async": "off"}).tool_call_parallel is True
    assert parse_settings({"chat.async": "off"}).chat_async is False
    with pytest.raises(ConfigError, match=r"tool-call\.async"):
        parse_settings({"tool-call.async": "maybe"})
