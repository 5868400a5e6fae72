"""The runtime's observer hook (``reference_runtime.observe``), which crash coverage reads (COV-3, COV-4, COV-8)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from reference_runtime import (
    ActionState,
    Agent,
    CrashAt,
    Event,
    FaultInjector,
    FaultPoint,
    InputEvent,
    JournalEntry,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    StateRef,
    action,
    observe,
)


def double(x: int) -> int:
    return 2 * x


class Two(Agent):
    @action(InputEvent)
    @staticmethod
    def first(event: Event, ctx: RunnerContext) -> None:
        value = ctx.durable_execute(double, event.attributes["input"], reconciler=lambda: -1)
        ctx.short_term_memory.set("doubled", value)
        ctx.send_event(Event(type="Next", attributes={"value": value}))

    @action("Next")
    @staticmethod
    def second(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(double, event.attributes["value"])))


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def action_started(self, agent: type[Agent], ref: StateRef, recovery: bool, after: FaultPoint | None) -> None:
        self.events.append(("started", ref.action.name, recovery, after.label() if after else None))

    def action_ended(self, agent: type[Agent], ref: StateRef, journal: Sequence[JournalEntry]) -> None:
        self.events.append(("ended", ref.action.name, [e.source for e in journal]))

    def action_completed(self, agent: type[Agent], ref: StateRef, state: ActionState) -> None:
        self.events.append(("completed", ref.action.name, [u.path for u in state.short_term_memory_updates]))

    def action_replayed(self, agent: type[Agent], ref: StateRef, state: ActionState) -> None:
        self.events.append(("replayed", ref.action.name, [u.path for u in state.short_term_memory_updates]))

    def reconciler_given(self, ref: StateRef, index: int, function_id: str, reconciler: Callable[[], Any]) -> None:
        self.events.append(("reconciler", ref.action.name, index, function_id.rpartition(".")[2]))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    seen = Recorder()
    previous = observe.watch(seen)
    try:
        yield seen
    finally:
        observe.watch(previous)


def test_a_re_entered_action_is_a_recovery_and_a_completed_one_is_replayed(recorder: Recorder) -> None:
    """COV-3, COV-4: a crash inside `second` re-enters it as a recovery after that crash; `first`, completed, is
    replayed with its memory writes, not started again; the reconciler is reported where the call is made."""
    crash = FaultInjector([CrashAt(Phase.AFTER_EFFECT, action="second", call_index=0)])
    Runner(Two, injector=crash).run([("k", 1)])
    assert recorder.events == [
        ("started", "first", False, None),
        ("reconciler", "first", 0, "double"),
        ("ended", "first", ["executed"]),
        ("completed", "first", ["doubled"]),
        ("started", "second", False, None),
        ("ended", "second", ["executed"]),
        ("replayed", "first", ["doubled"]),
        ("started", "second", True, "call0:after-effect"),
        ("ended", "second", ["executed"]),
        ("completed", "second", []),
    ]


def test_a_reconciled_call_is_journaled_as_such(recorder: Recorder) -> None:
    """COV-4: a crash after the reserved PENDING record re-enters `first`, whose reconciler answers."""
    crash = FaultInjector([CrashAt(Phase.AFTER_PENDING, action="first", call_index=0)])
    Runner(Two, injector=crash).run([("k", 1)])
    recovery = recorder.events.index(("started", "first", True, "call0:after-pending"))
    assert recorder.events[recovery + 2] == ("ended", "first", ["reconciled"])


def test_without_an_observer_nothing_is_called() -> None:
    """COV-8: no observer is set by default, and watch() hands back the previous one."""
    assert observe.current is None
    seen = Recorder()
    assert observe.watch(seen) is None
    assert observe.watch(None) is seen
    Runner(Two).run([("k", 1)])
    assert seen.events == []
