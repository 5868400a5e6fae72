"""Parallel durable batches (spec BAT-1..BAT-6): input-order records, one reservation, a sliding window,
partial-batch recovery, reconcilers, timeouts and mismatch truncation."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_runtime import (
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
    current_call,
)
from reference_runtime.batch import BatchTimeoutError
from reference_runtime.clock import VirtualClock
from reference_runtime.faults import SimulatedCrash
from reference_runtime.records import CallStatus
from reference_runtime.stores.memory import InMemoryStore

RUNS: Counter[int] = Counter()  # executions per slot index
DELAYS: dict[int, float] = {}
#: When set, tools take their delay on this clock (virtual time) instead of sleeping for real.
CLOCK: list[VirtualClock] = []
ACTIVE = {"now": 0, "max": 0}
LOCK = threading.Lock()
THREADS: set[str] = set()


def tool(i: int) -> int:
    with LOCK:
        ACTIVE["now"] += 1
        ACTIVE["max"] = max(ACTIVE["max"], ACTIVE["now"])
        THREADS.add(threading.current_thread().name)
    try:
        if CLOCK:
            CLOCK[0].sleep(DELAYS.get(i, 0.0))
        else:
            time.sleep(DELAYS.get(i, 0.0))
        RUNS[current_call().call_id.call_index] += 1
        if i < 0:
            raise ValueError(f"tool {i} failed")
        return i * 100
    finally:
        with LOCK:
            ACTIVE["now"] -= 1


def reset(delays: dict[int, float] | None = None, clock: VirtualClock | None = None) -> None:
    CLOCK[:] = [clock] if clock is not None else []
    RUNS.clear()
    DELAYS.clear()
    DELAYS.update(delays or {})
    ACTIVE.update(now=0, max=0)
    THREADS.clear()


class Batch(Agent):
    """One action running its input list of tool arguments as a batch."""

    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 4}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        outcomes = await ctx.durable_execute_all_async([DurableCall(tool, (i,)) for i in event.attributes["input"]])
        ctx.send_event(OutputEvent([o.value if o.is_success() else f"error: {o.error}" for o in outcomes]))


class Reconciled(Agent):
    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1}
    RECONCILED: ClassVar[list[int]] = []

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        def check(i: int) -> Any:
            def reconcile() -> int:
                Reconciled.RECONCILED.append(i)
                return i * 100  # the external system says the effect happened

            return reconcile

        calls = [DurableCall(tool, (i,), reconciler=check(i)) for i in event.attributes["input"]]
        outcomes = await ctx.durable_execute_all_async(calls)
        ctx.send_event(OutputEvent([o.value for o in outcomes]))


def run(agent: type[Agent], args: list[int], crash: CrashAt | None = None, **config: Any) -> Any:
    injector = FaultInjector([crash] if crash else [])
    runner = Runner(agent, InMemoryStore(), injector=injector, config=config or None)
    return runner.run([("k", args)])


def test_outcomes_come_back_in_input_order_whatever_the_completion_order() -> None:
    """BAT-1, BAT-4: slot i holds call i; a failing call is a failure outcome, not an action failure."""
    reset({0: 0.15, 1: 0.0, 2: 0.05})
    result = run(Batch, [0, 1, 2, -3])
    assert result.outputs == {"k": [[0, 100, 200, "error: tool -3 failed"]]}
    assert not any(name.startswith("MainThread") for name in THREADS), "BAT-3: work never runs on the runner thread"


def test_the_window_caps_concurrency_at_the_configured_parallelism() -> None:
    """BAT-3: at most tool-call.parallelism calls run at once."""
    reset({i: 0.05 for i in range(8)})
    run(Batch, list(range(8)), **{"tool-call.parallelism": 3})
    assert ACTIVE["max"] == 3


def _pending_written_before_work() -> list[Any]:
    reset()
    store = InMemoryStore()
    runner = Runner(Batch, store, injector=FaultInjector([CrashAt(Phase.AFTER_PENDING)]))
    runner.inputs.append(("k", [1, 2, 3]))
    with pytest.raises(SimulatedCrash):
        runner.process()
    (entry,) = store._entries.values()
    return entry.calls


def test_every_new_slot_is_reserved_in_one_persist_before_any_work() -> None:
    """BAT-2: a crash right after the reservation finds every slot PENDING and no work done."""
    calls = _pending_written_before_work()
    assert [c.status for c in calls] == [CallStatus.PENDING] * 3
    assert sum(RUNS.values()) == 0


@pytest.mark.parametrize(
    ("crash", "rerun"),
    [
        (CrashAt(Phase.BEFORE_CALL, call_index=0), {0: 1, 1: 1, 2: 1}),  # before the reservation
        (CrashAt(Phase.AFTER_PENDING), {0: 1, 1: 1, 2: 1}),  # reserved, nothing ran
        (CrashAt(Phase.AFTER_RECORD, call_index=0), {1: 1, 2: 1}),  # slot 0 finalized
        (CrashAt(Phase.AFTER_RECORD, call_index=1), {2: 1}),  # slots 0 and 1 finalized
        (CrashAt(Phase.AFTER_RECORD, call_index=2), {}),  # all finalized
        (CrashAt(Phase.AFTER_EFFECT, call_index=1), {1: 1, 2: 1}),  # slot 1 ran, its record did not land
    ],
    ids=["before-reserve", "after-reserve", "after-1-finalize", "after-2-finalizes", "after-all", "mid-slot-1"],
)
def test_partial_batch_recovery_reruns_exactly_the_unfinished_slots(crash: CrashAt, rerun: dict[int, int]) -> None:
    """BAT-5: after a crash only slots without a terminal record run again."""
    reset()
    injector = FaultInjector([crash])
    runner = Runner(Batch, InMemoryStore(), injector=injector, config={"tool-call.parallelism": 1})
    first_attempt: Counter[int] = Counter()

    original = runner.fail_over

    def fail_over() -> None:
        first_attempt.update(RUNS)
        RUNS.clear()
        original()

    runner.fail_over = fail_over  # type: ignore[method-assign]
    result = runner.run([("k", [1, 2, 3])])
    assert injector.fired, "the crash point was reached"
    assert dict(RUNS) == rerun
    assert result.outputs == {"k": [[100, 200, 300]]}
    assert all(first_attempt[i] + RUNS[i] <= 2 for i in range(3))


def test_pending_slots_are_reconciled_not_rerun() -> None:
    """BAT-5: a PENDING slot with a reconciler is reconciled; finalized ones replay."""
    reset()
    Reconciled.RECONCILED.clear()
    result = run(Reconciled, [1, 2, 3], CrashAt(Phase.AFTER_EFFECT, call_index=1))
    assert result.outputs == {"k": [[100, 200, 300]]}
    assert Reconciled.RECONCILED == [2, 3]  # slot 1 was in flight, slot 2 never finished either
    assert Counter({0: 1, 1: 1}) == RUNS


class Probe(Agent):
    """Records the outcomes of a four-call batch; the test crashes it before completion to see records."""

    SEEN: ClassVar[list[Any]] = []
    SHIFT: ClassVar[dict[int, int]] = {}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        calls = [DurableCall(tool, (i + Probe.SHIFT.get(i, 0),)) for i in range(event.attributes["input"])]
        Probe.SEEN[:] = await ctx.durable_execute_all_async(calls)


def crashed_before_complete(n: int, clock: VirtualClock | None = None, **config: Any) -> tuple[Runner, InMemoryStore]:
    store = InMemoryStore()
    runner = Runner(Probe, store, config=config, injector=FaultInjector([CrashAt(Phase.BEFORE_COMPLETE)]), clock=clock)
    runner.inputs.append(("k", n))
    with pytest.raises(SimulatedCrash):
        runner.process()
    return runner, store


def test_timeout_on_the_real_clock_stops_waiting_for_a_straggler() -> None:
    """BAT-6 on real time: the loop's timer ends the wait while a started call is still running."""
    reset({1: 0.3})
    Probe.SHIFT.clear()
    _runner, store = crashed_before_complete(3, **{"tool-call.parallelism": 1, "tool-call.batch.timeout.ms": 100})
    seen = Probe.SEEN
    assert seen[0].is_success() and isinstance(seen[1].error, BatchTimeoutError)
    assert "did not finish within 100 ms" in str(seen[1].error)
    (entry,) = store._entries.values()
    assert [c.status for c in entry.calls] == [CallStatus.SUCCEEDED, CallStatus.FAILED, CallStatus.PENDING]


def test_timeout_fails_started_calls_and_leaves_unstarted_pending() -> None:
    """BAT-6, PLG-6: on a virtual clock (no real waiting): finished calls keep their outcome, a call that
    finishes after the deadline fails with a timeout, calls whose turn comes after it never start."""
    clock = VirtualClock()
    reset({1: 0.6}, clock)
    Probe.SHIFT.clear()
    _runner, store = crashed_before_complete(
        4, clock, **{"tool-call.parallelism": 1, "tool-call.batch.timeout.ms": 200}
    )
    assert clock.sleeps == [0.0, 0.6], "slot 1 took 0.6 s of virtual time; slots 2 and 3 never ran"
    seen = Probe.SEEN
    assert seen[0].is_success() and seen[0].value == 0
    assert isinstance(seen[1].error, BatchTimeoutError)
    (entry,) = store._entries.values()
    statuses = [c.status for c in entry.calls]
    assert statuses[0] is CallStatus.SUCCEEDED and statuses[1] is CallStatus.FAILED
    assert statuses[2:] == [CallStatus.PENDING] * 2, "calls that never started stay PENDING"
    assert isinstance(seen[2].error, BatchTimeoutError) and RUNS[2] == 0


def test_first_mismatch_truncates_and_the_rest_reexecute(caplog: pytest.LogCaptureFixture) -> None:
    """BAT-5, DE-7: when a recovered batch differs from its records, slots before the first difference
    replay and it and everything after run again (lenient mode warns with the index)."""
    reset()
    Probe.SHIFT.clear()
    runner, _store = crashed_before_complete(3, **{"tool-call.parallelism": 1})
    assert Counter({0: 1, 1: 1, 2: 1}) == RUNS
    RUNS.clear()
    Probe.SHIFT[1] = 10  # the code changed: slot 1 now gets other arguments
    runner.fail_over()
    runner.injector = None
    runner.process()
    assert Counter({1: 1, 2: 1}) == RUNS
    assert [o.value for o in Probe.SEEN] == [0, 1100, 200]
    assert "index 1" in caplog.text


@settings(max_examples=15, deadline=None)
@given(st.permutations([0.0, 0.01, 0.02, 0.03]))
def test_completion_order_does_not_change_the_records(delays: list[float]) -> None:
    """BAT-4: whatever order calls finish in, the persisted records are the same."""
    reset(dict(enumerate(delays)))
    store = InMemoryStore()
    runner = Runner(Batch, store, injector=FaultInjector([CrashAt(Phase.BEFORE_COMPLETE)]))
    runner.inputs.append(("k", [0, 1, 2, 3]))
    with pytest.raises(SimulatedCrash):
        runner.process()
    (entry,) = store._entries.values()
    assert [(c.function_id, c.args_digest, c.status) for c in entry.calls] == [
        ("tests.runtime.test_batch.tool", entry.calls[i].args_digest, CallStatus.SUCCEEDED) for i in range(4)
    ]
    from reference_runtime.identity import args_digest

    assert [c.args_digest for c in entry.calls] == [args_digest((i,), {}) for i in range(4)]
