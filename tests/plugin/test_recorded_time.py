"""Recorded values are the reference (PLG-25): an agent that records the time through a durable call passes
a sweep on a clock that moves between runs and across failovers, and one that leaks the time into a call's
arguments still fails it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action
from reference_runtime.exploration.harness import DurableHarness, DurableInvariantError
from reference_runtime.exploration.sweep import sweep
from reference_runtime.stores.memory import InMemoryStore

pytest_plugins = ["pytester"]


def now() -> float:
    return time.time()


def stamp(order: str, at: float) -> str:
    return f"{order} at {at}"


class RecordsTheTime(Agent):
    """Reads the time through a durable call, so recovery replays the reading it recorded."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        at = ctx.durable_execute(now)
        ctx.short_term_memory.set("at", at)
        ctx.send_event(OutputEvent(ctx.durable_execute(stamp, event.attributes["input"], at)))


class LeaksTheTime(Agent):
    """Passes the time it reads itself into a durable call: recovery digests the call differently."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(stamp, event.attributes["input"], time.time())))


INPUTS = [("order-1", "a"), ("order-2", "b")]


@pytest.fixture
def frozen() -> Iterator[DurableHarness]:
    from freezegun import freeze_time

    from reference_runtime.exploration.clock import FrozenClock

    with freeze_time("2026-01-01") as f:
        harness = DurableHarness(InMemoryStore, "memory:", seed=1)
        harness.clock = FrozenClock(f)
        yield harness


@pytest.mark.parametrize("re_execute", [False, True], ids=["snapshot", "re-execute"])
def test_an_agent_recording_the_time_passes_the_sweep_on_the_virtual_clock(
    frozen: DurableHarness, re_execute: bool
) -> None:
    """PLG-25, REC-6: every crash run reads later times than the crash-free run (PLG-13), yet its outputs and
    memory equal those of the crash-free run replaying the values its calls returned: the only points that
    fail are those where the clock was read twice (the crash fell after the reading, before its record), so
    recovery read it again and used the later reading."""
    from reference_runtime.exploration.sweep import sweep as engine_sweep

    assert frozen.clock is not None
    outcomes = engine_sweep(RecordsTheTime, INPUTS, InMemoryStore, re_execute=re_execute, clock=frozen.clock)
    failing = {(o.point.phase.value, o.point.key, o.point.call_index) for o in outcomes if not o.ok}
    assert failing == {("after-effect", "order-1", 0), ("after-effect", "order-2", 0)}
    assert all(v.startswith("REC-6") for o in outcomes for v in o.violations)
    assert any(o.result.outputs != outcomes[0].result.outputs for o in outcomes)  # the times did differ


def test_an_agent_leaking_the_time_still_fails(frozen: DurableHarness) -> None:
    """PLG-25, PLG-13: the replayed values do not excuse a call re-run after its record was persisted."""
    with pytest.raises(DurableInvariantError, match="REC-3: call order-1/0/handle/0 had a persisted record"):
        frozen.sweep(LeaksTheTime, INPUTS)


def test_a_recovery_that_loses_memory_is_still_rec_6(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLG-25, REC-6: the reference replaying the crash run's values is computed by the agent itself, so a
    difference that recovery made (here memory a completed action wrote, dropped on replay) stays REC-6."""
    from reference_runtime.memory import FlatMemory

    apply = FlatMemory.apply

    def forgetful(self: Any, updates: Any) -> None:
        apply(self, [u for u in updates if u.path != "at"])

    monkeypatch.setattr(FlatMemory, "apply", forgetful)
    outcomes = sweep(RecordsTheTime, INPUTS, InMemoryStore, re_execute=True)
    assert any(v.startswith("REC-6: memory differs") for o in outcomes for v in o.violations)


def test_the_sweep_marker_passes_the_agent_recording_the_time_under_durable_clock(pytester: pytest.Pytester) -> None:
    """PLG-25: the durable_sweep marker under durable_clock passes every point of an agent recording the time
    but the two where the clock was read twice."""
    pytester.makepyfile(
        """
        import pytest
        from tests.plugin.test_recorded_time import INPUTS, RecordsTheTime

        @pytest.mark.durable_sweep(RecordsTheTime, INPUTS)
        def test_time(durable, durable_clock):
            durable.run()
        """
    )
    result = pytester.runpytest_inprocess("-q", "-p", "no:randomly")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 5 and outcomes.get("failed") == 2, result.stdout.str()
    failed = [line for line in result.outlines if line.startswith("FAILED")]
    assert all("call0:after-effect" in line for line in failed), failed
