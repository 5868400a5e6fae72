"""The reconciler test switch (spec DE-14): read from config strings by the one boolean parser, and applied
to every entry point of a durable call."""

from __future__ import annotations

from typing import Any

import pytest

from reference_runtime import (
    ActionFailedError,
    Agent,
    CrashAt,
    DurableCall,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
)
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


# -- DE-14 applied once: every entry point of a durable call sees the switch -------------------------------------

RUNS: list[str] = []
RECONCILES: list[str] = []


def _work(how: str) -> str:
    RUNS.append(how)
    return how


def _reconciler_for(how: str) -> Any:
    def reconcile() -> str:
        RECONCILES.append(how)
        return how

    return reconcile


class EveryEntryPoint(Agent):
    """One reconciled call through each way an action can make one, sync and async."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        out = [ctx.durable_execute(_work, "execute", reconciler=_reconciler_for("execute"))]
        out.append(ctx.durable_call(_work, ("call",), {}, reconciler=_reconciler_for("call")))
        out.append(await ctx.durable_execute_async(_work, "async", reconciler=_reconciler_for("async")))
        out.append(await ctx.durable_call_async(_work, ("call-async",), {}, reconciler=_reconciler_for("call-async")))
        [batch] = await ctx.durable_execute_all_async(
            [DurableCall(_work, ("batch",), reconciler=_reconciler_for("batch"))]
        )
        out.append(batch.unwrap())
        ctx.send_event(OutputEvent(out))


HOWS = ["execute", "call", "async", "call-async", "batch"]


@pytest.mark.parametrize("index", range(len(HOWS)), ids=HOWS)
@pytest.mark.parametrize("reconcilers", [True, False], ids=["on", "off"])
def test_the_switch_reaches_every_entry_point(index: int, reconcilers: bool) -> None:
    """DE-14: a call crashed after its effect is reconciled with the switch on and run again with it off,
    whichever way the action made it (sync, async, tuple-argument form, batch)."""
    RUNS.clear()
    RECONCILES.clear()
    crash = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=index)])
    result = Runner(
        EveryEntryPoint, InMemoryStore(), injector=crash, config={"durable-execution.reconcilers": reconcilers}
    ).run([("k", 1)])
    assert result.outputs == {"k": [HOWS]}
    how = HOWS[index]
    reconciled, runs = list(RECONCILES), RUNS.count(how)
    assert reconciled == ([how] if reconcilers else [])
    assert runs == (1 if reconcilers else 2)


class BadReconciler(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.durable_execute(_work, "x", reconciler=42)  # type: ignore[arg-type]


def test_a_bad_reconciler_is_refused_with_the_switch_off_too() -> None:
    """DE-14, IDN-7: the switch ignores reconcilers, not their checks: a reconciler that is not callable is a
    TypeError either way (with the switch off it used to be dropped unchecked)."""
    for value in (True, False):
        with pytest.raises(ActionFailedError) as info:
            Runner(BadReconciler, config={"durable-execution.reconcilers": value}).run([("k", 1)])
        assert isinstance(info.value.__cause__, TypeError) and "reconciler must be callable" in str(
            info.value.__cause__
        )
