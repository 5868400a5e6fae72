"""A crash the test asked for that never happened is an error, not a silent pass (DOC-5)."""

from __future__ import annotations

import pytest

from reference_runtime import (
    Agent,
    CrashAt,
    CrashNotReachedError,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
)


def double(x: int) -> int:
    return 2 * x


class OneCall(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(double, event.attributes["input"])))


def test_a_selector_past_the_last_call_fails_the_run_naming_it_and_the_calls_made() -> None:
    """DOC-5: with one durable call, CrashAt(call_index=1) cannot fire; the run says so instead of passing."""
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=1)])
    with pytest.raises(CrashNotReachedError) as info:
        Runner(OneCall, injector=injector).run([("k", 4)])
    message = str(info.value)
    assert "never fired: CrashAt(after-effect, call_index=1) (0 fired before)" in message
    assert "the run made durable calls with index 0..0" in message
    assert "'call0:after-effect'" in message and "must_fire=False" in message
    assert info.value.unfired == [CrashAt(Phase.AFTER_EFFECT, call_index=1)]
    assert isinstance(info.value, AssertionError), "a test using it fails rather than errors"


def test_a_second_crash_that_recovery_never_reaches_is_reported_after_the_first_fired() -> None:
    """DOC-5: the plan's first crash fires, the second names a key that has no input; the error counts both."""
    plan = [CrashAt(Phase.AFTER_RECORD, call_index=0), CrashAt(Phase.BEFORE_CALL, key="nobody")]
    with pytest.raises(CrashNotReachedError, match=r"CrashAt\(before-call, key='nobody'\) \(1 fired before\)"):
        Runner(OneCall, injector=FaultInjector(plan)).run([("k", 4)])


def test_must_fire_false_lets_an_optional_crash_stay_unfired() -> None:
    """DOC-5: an injector built with must_fire=False finishes the run and leaves the selector pending."""
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=1)], must_fire=False)
    result = Runner(OneCall, injector=injector).run([("k", 4)])
    assert result.outputs == {"k": [8]} and result.failovers == 0
    assert injector.pending == 1 and injector.fired == []


def test_a_selector_that_fires_raises_nothing() -> None:
    """DOC-5: the check only concerns selectors left armed at the end."""
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=0)])
    result = Runner(OneCall, injector=injector).run([("k", 4)])
    assert result.outputs == {"k": [8]} and result.failovers == 1 and injector.pending == 0
