"""One call-slot lifecycle for every path (DE-16), sync and async alike (DE-17), ``retry=`` everywhere
(DE-18), retried batch calls (BAT-7) and the batch deadline across attempts (BAT-8)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any, ClassVar

import pytest

from reference_runtime import (
    Agent,
    CallId,
    CrashAt,
    DurableCall,
    Event,
    FaultInjector,
    FaultPoint,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    SimulatedCrash,
    action,
    current_call,
)
from reference_runtime.batch import BatchTimeoutError
from reference_runtime.clock import VirtualClock
from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.durable import ActionExecution, Outcome
from reference_runtime.exploration.scenario import Scenario
from reference_runtime.exploration.sweep import run_scenario
from reference_runtime.exploration.verdict import check
from reference_runtime.identity import args_digest
from reference_runtime.records import ActionRef, ActionState, CallResult, CallStatus, StateRef
from reference_runtime.retry import Backoff, RetryPolicy
from reference_runtime.stores.memory import InMemoryStore

from .crashing_clock import CrashingBackoffClock
from .executions import only_entry_calls

#: Attempt numbers seen per (call index, argument), across every execution attempt of a test.
ATTEMPTS: dict[tuple[int, int], list[int]] = {}
#: Statuses of the calling slot's record, as the function saw them during each attempt.
SEEN_STATUS: list[CallStatus | None] = []
STORE: list[InMemoryStore] = []

POLICY = RetryPolicy(max_attempts=3, backoff=Backoff(initial=1.0, multiplier=2.0, jitter=0.0), retry_on=ConnectionError)


def _note(i: int) -> int:
    call = current_call()
    ATTEMPTS.setdefault((call.call_id.call_index, i), []).append(call.attempt)
    return call.attempt


def flaky(i: int) -> int:
    """Fails with a transient error before its third attempt (negative ``i``: always)."""
    attempt = _note(i)
    if STORE:
        (entry,) = STORE[0]._entries.values()
        index = current_call().call_id.call_index
        SEEN_STATUS.append(entry.calls[index].status if index < len(entry.calls) else None)
    if i < 0 or attempt < 3:
        raise ConnectionError(f"transient {i}/{attempt}")
    return i * 100


async def flaky_coroutine(i: int) -> int:
    await asyncio.sleep(0)
    return flaky(i)


def steady(i: int) -> int:
    _note(i)
    return i * 100


@pytest.fixture(autouse=True)
def _reset() -> None:
    ATTEMPTS.clear()
    SEEN_STATUS.clear()
    STORE.clear()


# -- BAT-7: DurableCall(retry=...) ---------------------------------------------------------------------


class RetriedBatch(Agent):
    """A batch of three: slot 1 is flaky and retried (the input says which argument it gets)."""

    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        calls = [
            DurableCall(steady, (1,)),
            DurableCall(flaky, (event.attributes["input"],), retry=POLICY),
            DurableCall(steady, (3,)),
        ]
        outcomes = await ctx.durable_execute_all_async(calls)
        ctx.send_event(OutputEvent([o.value if o.is_success() else f"{type(o.error).__name__}" for o in outcomes]))


def test_a_batch_call_retries_inside_its_slot_and_records_only_the_final_outcome() -> None:
    """BAT-7, RETRY-3, RETRY-4: attempts run in the slot with backoff on the runtime clock; while they run
    the slot stays PENDING; only the final success is recorded, at the slot's own index."""
    store, clock = InMemoryStore(), VirtualClock()
    STORE.append(store)
    injector = FaultInjector([CrashAt(Phase.BEFORE_COMPLETE)])
    runner = Runner(RetriedBatch, store, clock=clock, injector=injector)
    runner.inputs.append(("k", 2))
    with pytest.raises(SimulatedCrash):
        runner.process()
    assert ATTEMPTS[(1, 2)] == [1, 2, 3]
    assert clock.sleeps == [1.0, 2.0]
    assert SEEN_STATUS == [CallStatus.PENDING] * 3, "no attempt is recorded before the last one finishes"
    records = only_entry_calls(store)
    assert [r.status for r in records] == [CallStatus.SUCCEEDED] * 3
    assert records[1].args_digest == args_digest((2,), {})
    runner.fail_over()
    runner.injector = None
    runner.process()
    assert ATTEMPTS[(1, 2)] == [1, 2, 3], "a recovered batch replays the retried call: no attempt, no sleep"
    assert clock.sleeps[:2] == [1.0, 2.0] and len(clock.sleeps) == 2
    assert runner.result().outputs == {"k": [[100, 200, 300]]}


def test_a_batch_call_that_exhausts_its_retries_is_recorded_failed_after_the_last_attempt() -> None:
    """BAT-7, RETRY-1: max_attempts attempts, then one FAILED record holding the last attempt's exception;
    the other slots are unaffected (BAT-1)."""
    store, clock = InMemoryStore(), VirtualClock()
    STORE.append(store)
    result = Runner(RetriedBatch, store, clock=clock).run([("k", -1)])
    assert result.outputs == {"k": [[100, "ConnectionError", 300]]}
    assert ATTEMPTS[(1, -1)] == [1, 2, 3]
    assert SEEN_STATUS == [CallStatus.PENDING] * 3
    batch = [e for e in result.journal if e.call_id.call_index == 1]
    assert [(e.source, e.outcome) for e in batch] == [("executed", "error")]


def test_a_batch_retry_on_other_exceptions_is_not_retried() -> None:
    """BAT-7: retry_on filters as for durable_execute: a TypeError is recorded after one attempt."""

    def wrong(i: int) -> int:
        _note(i)
        raise TypeError("not transient")

    class Once(Agent):
        @action(InputEvent)
        @staticmethod
        async def work(event: Event, ctx: RunnerContext) -> None:
            (outcome,) = await ctx.durable_execute_all_async([DurableCall(wrong, (7,), retry=POLICY)])
            ctx.send_event(OutputEvent(type(outcome.error).__name__))

    clock = VirtualClock()
    result = Runner(Once, InMemoryStore(), clock=clock).run([("k", 0)])
    assert result.outputs == {"k": ["TypeError"]}
    assert ATTEMPTS[(0, 7)] == [1]
    assert clock.sleeps == []


def test_a_crash_between_attempts_of_a_batch_call_restarts_its_retries_at_attempt_1() -> None:
    """BAT-7, RETRY-5, DE-19: a crash during the backoff of slot 1 leaves it PENDING with nothing recorded;
    recovery replays slot 0 and re-runs slot 1 from attempt 1, then slot 2; each outcome is recorded once.
    Slot 1's attempts before the crash ran: the crashed attempt journals it in flight."""
    store = InMemoryStore()
    result = Runner(RetriedBatch, store, clock=CrashingBackoffClock(crash_on_sleep=2, index=1)).run([("k", 2)])
    assert result.failovers == 1
    assert ATTEMPTS[(1, 2)] == [1, 2, 1, 2, 3]
    assert ATTEMPTS[(0, 1)] == [1], "slot 0 was finalized before the crash: it replays"
    assert ATTEMPTS[(2, 3)] == [1], "slot 2 never started before the crash"
    assert result.outputs == {"k": [[100, 200, 300]]}
    trail = [(e.attempt, e.call_id.call_index, e.source, e.outcome) for e in result.journal]
    assert trail == [
        (0, 0, "executed", "ok"),
        (0, 1, "executed", "in flight"),
        (1, 0, "replayed", "ok"),
        (1, 1, "executed", "ok"),
        (1, 2, "executed", "ok"),
    ]


def crashes(i: int) -> int:
    _note(i)
    raise SimulatedCrash(FaultPoint(Phase.AFTER_EFFECT, "k", 0, "work", current_call().call_id.call_index))


def test_a_crash_inside_a_slots_work_stops_the_batch_before_the_next_slot_starts() -> None:
    """BAT-3, DE-16: a crash raised by the work itself (not only by a persist) is a dead process: with a
    window of one, the next slot never starts, and every unfinished slot stays PENDING."""
    store = InMemoryStore()

    class Crashing(Agent):
        config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1}

        @action(InputEvent)
        @staticmethod
        async def work(event: Event, ctx: RunnerContext) -> None:
            await ctx.durable_execute_all_async(
                [DurableCall(steady, (1,)), DurableCall(crashes, (2,)), DurableCall(steady, (3,))]
            )

    runner = Runner(Crashing, store)
    runner.inputs.append(("k", 0))
    with pytest.raises(SimulatedCrash):
        runner.process()
    assert ATTEMPTS == {(0, 1): [1], (1, 2): [1]}, "slot 2 started after the process died"
    assert [r.status for r in only_entry_calls(store)] == [CallStatus.SUCCEEDED, CallStatus.PENDING, CallStatus.PENDING]


@pytest.mark.parametrize("phase", [Phase.AFTER_PENDING, Phase.AFTER_EFFECT, Phase.AFTER_RECORD])
def test_crash_points_of_a_retried_batch_call(phase: Phase) -> None:
    """BAT-7, BAT-5: crashed at the retried slot's own fault points, the batch recovers to the crash-free
    outputs; the slot's work is re-run (from attempt 1) only when its record had not landed."""
    crash = CrashAt(phase, call_index=1) if phase is not Phase.AFTER_PENDING else CrashAt(phase)
    injector = FaultInjector([crash])
    result = Runner(RetriedBatch, InMemoryStore(), clock=VirtualClock(), injector=injector).run([("k", 2)])
    assert injector.fired
    assert result.outputs == {"k": [[100, 200, 300]]}
    expected = {Phase.AFTER_PENDING: [1, 2, 3], Phase.AFTER_EFFECT: [1, 2, 3, 1, 2, 3], Phase.AFTER_RECORD: [1, 2, 3]}
    assert ATTEMPTS[(1, 2)] == expected[phase]


def test_retries_add_no_fault_points_to_a_batch() -> None:
    """DE-16, BAT-7: a retried call passes the same fault points as one that succeeds at once, so crash
    sweeps of a batch have as many scenarios with retries as without."""
    injector = FaultInjector()
    Runner(RetriedBatch, InMemoryStore(), clock=VirtualClock(), injector=injector).run([("k", 2)])
    retried = [p.label() for p in injector.trace]
    assert ATTEMPTS[(1, 2)] == [1, 2, 3]

    class Plain(Agent):
        config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1}

        @action(InputEvent)
        @staticmethod
        async def work(event: Event, ctx: RunnerContext) -> None:
            await ctx.durable_execute_all_async([DurableCall(steady, (i,)) for i in (1, 2, 3)])

    injector = FaultInjector()
    Runner(Plain, InMemoryStore(), injector=injector).run([("k", 0)])
    plain = [p.label() for p in injector.trace]
    assert retried == plain
    assert plain.count("call1:after-effect") == 1


# -- BAT-8: the batch deadline covers every attempt ----------------------------------------------------


def test_the_batch_deadline_covers_every_attempt_of_a_retried_call() -> None:
    """BAT-8, BAT-6: a retried call whose backoff sleeps carry it past the deadline fails with a timeout
    (recorded), although its last attempt succeeded; the call after it never starts and stays PENDING."""
    store, clock = InMemoryStore(), VirtualClock()
    STORE.append(store)
    config = {"tool-call.parallelism": 1, "tool-call.batch.timeout.ms": 2500}
    seen: list[Outcome] = []

    class Deadline(Agent):
        @action(InputEvent)
        @staticmethod
        async def work(event: Event, ctx: RunnerContext) -> None:
            calls = [DurableCall(flaky, (2,), retry=POLICY), DurableCall(steady, (3,))]
            seen[:] = await ctx.durable_execute_all_async(calls)

    runner = Runner(
        Deadline, store, clock=clock, config=config, injector=FaultInjector([CrashAt(Phase.BEFORE_COMPLETE)])
    )
    runner.inputs.append(("k", 0))
    with pytest.raises(SimulatedCrash):
        runner.process()
    assert ATTEMPTS[(0, 2)] == [1, 2, 3], "the attempts ran (1 s + 2 s of backoff)"
    assert isinstance(seen[0].error, BatchTimeoutError) and "within 2500 ms" in str(seen[0].error)
    assert isinstance(seen[1].error, BatchTimeoutError) and (1, 3) not in ATTEMPTS
    assert [r.status for r in only_entry_calls(store)] == [CallStatus.FAILED, CallStatus.PENDING]


# -- DE-18: retry= on every path, validated before anything runs ----------------------------------------


class AsyncRetried(Agent):
    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        func = flaky_coroutine if event.attributes["input"] == "coroutine" else flaky
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(func, 4, retry=POLICY)))


@pytest.mark.parametrize("kind", ["pool", "coroutine"])
def test_durable_execute_async_retries_pool_functions_and_coroutine_functions(kind: str) -> None:
    """DE-18, RETRY-1: a coroutine function is retried like a function run on the pool (its backoff
    sleeps on the runtime clock, off the event loop); the final outcome is recorded once."""
    clock = VirtualClock()
    result = Runner(AsyncRetried, InMemoryStore(), clock=clock).run([("k", kind)])
    assert result.outputs == {"k": [400]}
    assert ATTEMPTS[(0, 4)] == [1, 2, 3]
    assert clock.sleeps == [1.0, 2.0]
    assert [(e.source, e.outcome) for e in result.journal] == [("executed", "ok")]


def test_a_reconciler_is_never_retried() -> None:
    """DE-18, DE-5: retry= retries the function; a PENDING slot's reconciler runs once, its failure recorded."""
    runs: list[int] = []

    def reconcile() -> int:
        runs.append(current_call().attempt)
        raise ConnectionError("the external system is down")

    class Reconciled(Agent):
        @action(InputEvent)
        @staticmethod
        def work(event: Event, ctx: RunnerContext) -> None:
            try:
                ctx.durable_execute(steady, 5, reconciler=reconcile, retry=POLICY)
            except ConnectionError as exc:
                ctx.send_event(OutputEvent(str(exc)))

    clock = VirtualClock()
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT)])
    result = Runner(Reconciled, InMemoryStore(), clock=clock, injector=injector).run([("k", 0)])
    assert result.outputs == {"k": ["the external system is down"]}
    assert runs == [1] and clock.sleeps == []
    assert [e.source for e in result.journal] == ["executed", "reconciled"]


def test_a_retry_that_is_not_a_policy_is_refused_before_anything_runs() -> None:
    """DE-18, BAT-7: ``retry=3`` (single call) or ``DurableCall(retry=3)`` raises a TypeError naming retry
    (and the batch position); nothing runs and nothing is recorded."""
    store = InMemoryStore()
    state = ActionState(task_event=REF.event)
    store.put(REF, state)
    ex = ActionExecution(REF, store, CloudpickleCodec(), state)
    with pytest.raises(TypeError, match=r"retry must be a RetryPolicy\(\.\.\.\) or None, got int"):
        ex.execute(steady, (1,), {}, retry=3)  # type: ignore[arg-type]

    class Bad(Agent):
        @action(InputEvent)
        @staticmethod
        async def work(event: Event, ctx: RunnerContext) -> None:
            calls = [DurableCall(steady, (1,)), DurableCall(steady, (2,), retry=3)]  # type: ignore[arg-type]
            try:
                await ctx.durable_execute_all_async(calls)
            except TypeError as exc:
                ctx.send_event(OutputEvent(str(exc)))

    result = Runner(Bad, store).run([("k", 0)])
    assert result.outputs == {
        "k": ["DurableCall(retry=3) at position 1 of the batch: expected a RetryPolicy(...) or None"]
    }
    assert ATTEMPTS == {} and state.call_results == []
    assert result.journal == []


# -- DE-16: the slot API --------------------------------------------------------------------------------

REF = StateRef("k", 0, ActionRef("work", "m", "A.work", ("_input_event",)), InputEvent("x"), "sk")


def reconcile_ten() -> int:
    return 10


def test_open_slot_plans_each_kind_of_record_and_reserve_takes_only_consecutive_new_slots() -> None:
    """DE-16: replay (decoded), reconcile, rerun and execute, the mismatch truncation of DE-7, and one
    PENDING persist for consecutive new slots."""
    store = InMemoryStore()
    state = ActionState(task_event=REF.event)
    store.put(REF, state)
    ex = ActionExecution(REF, store, CloudpickleCodec(), state, injector=FaultInjector())
    ex.write(
        0,
        [
            ex.encode("tests.runtime.test_slot_lifecycle.steady", args_digest((0,), {}), Outcome.success(7), 0),
            CallResult.pending("tests.runtime.test_slot_lifecycle.steady", args_digest((1,), {})),
            CallResult.pending("tests.runtime.test_slot_lifecycle.steady", args_digest((2,), {})),
            CallResult.pending("other", "digest"),
        ],
    )
    replay = ex.open_slot(0, steady, (0,), {}, reserve=False)
    reconcile = ex.open_slot(1, steady, (1,), {}, reconcile_ten, reserve=False)
    rerun = ex.open_slot(2, steady, (2,), {}, retry=POLICY, reserve=False)
    fresh = ex.open_slot(3, steady, (3,), {}, reserve=False)  # a mismatch: truncated, then new
    after = ex.open_slot(4, steady, (4,), {}, reserve=False)
    assert [s[1] for s in (replay, reconcile, rerun, fresh, after)] == [
        "replay",
        "reconcile",
        "rerun",
        "execute",
        "execute",
    ]
    assert replay[2] == Outcome.success(7) and replay[3] is None
    assert reconcile[3] is reconcile_ten and reconcile[6] is None, "a reconciler runs once, never retried"
    assert rerun[3] is steady and rerun[6] is POLICY
    assert len(state.call_results) == 3, "the mismatch at index 3 truncated the records"
    with pytest.raises(ValueError, match="consecutive"):
        ex.reserve([rerun, fresh])
    with pytest.raises(ValueError, match="consecutive"):
        ex.reserve([after, fresh])
    ex.reserve([fresh, after])
    assert [r.status for r in state.call_results[3:]] == [CallStatus.PENDING] * 2
    # Finalized out of order, each lands at its own index (BAT-4); the index is the driver's to advance.
    ex.finalize(after, ex.run(after))
    ex.finalize(fresh, ex.run(fresh))
    assert [r.status for r in only_entry_calls(store)[3:]] == [CallStatus.SUCCEEDED] * 2
    assert ex.index == 0
    labels = [p.label() for p in ex.injector.trace]  # type: ignore[union-attr]
    assert labels == [f"call{i}:before-call" for i in range(5)] + [
        "call3:after-pending",
        "call4:after-effect",
        "call4:after-record",
        "call3:after-effect",
        "call3:after-record",
    ]


# -- DE-17: sync and async are one state machine ----------------------------------------------------------


def step(i: int) -> int:
    _note(i)
    if i == 2:
        raise ValueError("recorded failure")
    return i * 100


async def step_coroutine(i: int) -> int:
    return step(i)


def reconcile_step() -> int:
    return -1


async def flaky_step_coroutine(i: int) -> int:
    return flaky(i)


class Paths(Agent):
    """The same four calls through ``durable_execute``, ``durable_execute_async`` on the pool, or with
    coroutine functions: equal durable ids, so the records can be compared."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        path = event.attributes["input"]
        coroutine = path == "coroutine"
        calls: list[tuple[Any, int, dict[str, Any]]] = [
            (step_coroutine if coroutine else step, 1, {}),
            (step_coroutine if coroutine else step, 2, {}),
            (flaky_step_coroutine if coroutine else flaky, 3, {"retry": POLICY}),
            (step_coroutine if coroutine else step, 4, {"reconciler": reconcile_step}),
        ]
        results = []
        for n, (func, arg, options) in enumerate(calls):
            try:
                if path == "sync":
                    results.append(ctx.durable_execute(func, arg, durable_id=f"call-{n}", **options))
                else:
                    results.append(await ctx.durable_execute_async(func, arg, durable_id=f"call-{n}", **options))
            except ValueError as exc:
                results.append(str(exc))
        ctx.send_event(OutputEvent(results))


class RecordsAtCompletion(FaultInjector):
    """Keeps the call records as they are when the action is about to complete (completion clears them)."""

    store: InMemoryStore | None = None
    records: list[CallResult] = []

    def reach(self, point: FaultPoint) -> None:
        if point.phase is Phase.BEFORE_COMPLETE and self.store is not None:
            self.records = only_entry_calls(self.store)
        super().reach(point)


def run_path(path: str, crash: CrashAt | None) -> tuple[Any, ...]:
    ATTEMPTS.clear()
    store, clock = InMemoryStore(), VirtualClock()
    injector = RecordsAtCompletion([crash] if crash else [])
    injector.store = store
    result = Runner(Paths, store, clock=clock, injector=injector).run([(path, path)])
    journal = [
        (e.attempt, e.call_id.call_index, e.function_id, e.args_digest, e.outcome, e.source) for e in result.journal
    ]
    return (
        [p.label() for p in injector.trace],
        [p.label() for p in injector.fired],
        journal,
        [
            (c.function_id, c.args_digest, c.status, c.result_payload, c.exception_payload is None)
            for c in injector.records
        ],
        result.outputs[path],
        clock.sleeps,
        dict(Counter({k[1]: len(v) for k, v in ATTEMPTS.items()})),
    )


def test_sync_pool_and_coroutine_paths_make_the_same_records_journal_and_fault_points() -> None:
    """DE-17: with every crash point of the synchronous run, the pool and coroutine paths reach the same
    fault points, write the same records, journal the same entries and run the work as often."""
    crash_free = FaultInjector()
    Runner(Paths, InMemoryStore(), clock=VirtualClock(), injector=crash_free).run([("sync", "sync")])
    points = list(dict.fromkeys(p for p in crash_free.trace if p.call_index is not None))
    assert len(points) == 4 * 3 + 1, "four calls, three points each, and the reconciled call's after-pending"
    for crash in [None, *(CrashAt(p.phase, call_index=p.call_index) for p in points)]:
        sync = run_path("sync", crash)
        assert run_path("pool", crash) == sync, crash
        assert run_path("coroutine", crash) == sync, crash


# -- DE-19: work an unfinished attempt left in flight is journaled, so its run after recovery is seen ---------

IN_FLIGHT_RUNS: Counter[str] = Counter()
_A_STARTED = threading.Event()
_RELEASE = threading.Event()  # a's work ends only once its attempt has ended: set when it is abandoned


def held(tag: str) -> str:
    IN_FLIGHT_RUNS[tag] += 1
    _A_STARTED.set()
    assert _RELEASE.wait(10), "never released"
    return tag


async def held_coroutine(tag: str) -> str:
    IN_FLIGHT_RUNS[tag] += 1
    _A_STARTED.set()
    while not _RELEASE.is_set():
        await asyncio.sleep(0.001)
    return tag


def queued(tag: str) -> str:
    IN_FLIGHT_RUNS[tag] += 1
    return tag


def after_a(tag: str) -> str:
    assert _A_STARTED.wait(10), "a never started"
    return tag


class InFlightAtCrash(Agent):
    """Key ``a``'s call is in flight (on the pool, or a coroutine function awaiting) when key ``b`` crashes;
    key ``c``'s call is queued for the pool's one thread, held by ``a``'s, when the pool path is taken."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        key, path = event.attributes["input"]
        if key == "a":
            out = await ctx.durable_execute_async(held_coroutine if path == "coroutine" else held, key)
        elif key == "c":
            out = await ctx.durable_execute_async(queued, key)
        else:
            # Synchronous, so b's crash comes once a's work started, with no other task run in between.
            ctx.durable_execute(after_a, key)
            out = ctx.durable_execute(queued, key)
        ctx.send_event(OutputEvent(out))


@pytest.mark.parametrize("path", ["pool", "coroutine"])
def test_work_in_flight_at_a_crash_is_journaled_and_its_run_after_recovery_reported(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DE-19, PLG-23: a's call started in the attempt b's crash ended and runs again after recovery (no record
    was written): the crashed attempt journals it ``in flight`` and the verdict reports the call as run again.
    On the pool path, c's work, queued for the pool's one thread at the crash, runs to its end too and is
    journaled the same way, so what is reported does not hang on whether a thread had taken it (PLG-22)."""
    keys = ("a", "c", "b")
    inputs = [(k, (k, path)) for k in keys]
    IN_FLIGHT_RUNS.clear()
    _A_STARTED.clear()
    _RELEASE.set()
    baseline = Runner(InFlightAtCrash, InMemoryStore(), async_threads=1).run(inputs)
    assert dict(IN_FLIGHT_RUNS) == dict.fromkeys(keys, 1)
    IN_FLIGHT_RUNS.clear()
    _A_STARTED.clear()
    _RELEASE.clear()
    abandon = ActionExecution.abandon

    def releasing(self: ActionExecution) -> None:
        abandon(self)
        if self.ref.key == "a":
            _RELEASE.set()  # the crash cancelled a's action: let its work end (the runner waits for it)

    monkeypatch.setattr(ActionExecution, "abandon", releasing)
    scenario = Scenario((CrashAt(Phase.BEFORE_CALL, "b", call_index=1),))
    result, injector = run_scenario(InFlightAtCrash, inputs, InMemoryStore, scenario, async_threads=1)
    assert len(injector.fired) == 1 and result.outputs == baseline.outputs
    a_call = CallId("a", 0, "work", 0)
    trail = [(e.outcome, e.source, e.attempt) for e in result.journal if e.call_id == a_call]
    assert trail == [("in flight", "executed", 0), ("ok", "executed", 1)]
    c_call = CallId("c", 0, "work", 0)
    c_trail = [(e.outcome, e.source, e.attempt) for e in result.journal if e.call_id == c_call]
    assert c_trail == [("in flight", "executed", 0), ("ok", "executed", 1)]
    assert dict(IN_FLIGHT_RUNS) == {"a": 2, "b": 1, "c": 2}
    outcome = check(scenario, baseline, result, injector)
    assert outcome.repeated == [str(a_call), str(c_call)] and not outcome.violations
