"""Edges of the durable-call state machine that a mutation of the runtime would otherwise slip past:
the call index after a batch (BAT-4), the reconciler switch on the batch path (DE-14), PENDING before a
re-execution after a mismatch (DE-3, DE-7), misuse never recorded as an outcome (DE-11), a crash in one
batch slot while another still runs (REC-5), and the validation digest in decode errors (DE-10)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter
from typing import Any, ClassVar

import pytest

from reference_runtime import (
    Agent,
    CallResult,
    CallStatus,
    CrashAt,
    DurableCall,
    Event,
    FaultInjector,
    FaultPoint,
    InputEvent,
    MemoryAccessError,
    OutputEvent,
    PayloadDecodeError,
    Phase,
    Runner,
    RunnerContext,
    SimulatedCrash,
    action,
)
from reference_runtime.config import ConfigError, parse_settings
from reference_runtime.durable import Outcome
from reference_runtime.identity import args_digest, function_id
from reference_runtime.memory import check_action_access
from reference_runtime.records import ActionState
from reference_runtime.stores.memory import InMemoryStore

from . import agents
from .executions import REF, execution, only_entry_calls, stored

SETTINGS = parse_settings({})


@pytest.fixture(autouse=True)
def _reset() -> None:
    agents.reset()
    RECONCILED.clear()


# -- BAT-4: a durable call after a batch takes the index after the batch's last slot ----------------------


class BatchThenCall(Agent):
    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 2}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        outcomes = await ctx.durable_execute_all_async([DurableCall(agents.step, (i,)) for i in (1, 2)])
        after = ctx.durable_execute(agents.step, 3)
        ctx.send_event(OutputEvent([o.value for o in outcomes] + [after]))


@pytest.mark.parametrize("crash", [None, CrashAt(Phase.BEFORE_COMPLETE)], ids=["crash-free", "recovered"])
def test_a_call_after_a_batch_takes_the_index_after_the_batch(crash: CrashAt | None) -> None:
    """BAT-4: the index advances by the batch size, so the next call is slot 2 and, on recovery, all
    three records replay without a mismatch or a second effect."""
    result = Runner(BatchThenCall, InMemoryStore(), injector=FaultInjector([crash] if crash else [])).run([("k", 0)])
    assert result.outputs == {"k": [[10, 20, 30]]}
    step_three = [e for e in result.journal if e.args_digest == args_digest((3,), {})]
    assert {e.call_id.call_index for e in step_three} == {2}
    assert sorted(agents.EFFECTS.values()) == [1, 1, 1], agents.EFFECTS
    if crash is not None:
        assert [e.source for e in step_three] == ["executed", "replayed"]


# -- DE-14 on the batch path --------------------------------------------------------------------------------

RECONCILED: list[int] = []


def reconcile_for(i: int) -> Any:
    def reconcile() -> int:
        RECONCILED.append(i)
        return i * 10

    return reconcile


class ReconciledBatch(Agent):
    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        calls = [DurableCall(agents.step, (i,), reconciler=reconcile_for(i)) for i in (1, 2)]
        outcomes = await ctx.durable_execute_all_async(calls)
        ctx.send_event(OutputEvent([o.value for o in outcomes]))


@pytest.mark.parametrize("reconcilers", [True, False])
def test_the_reconciler_switch_also_governs_batches(reconcilers: bool) -> None:
    """DE-14: with reconcilers off, a batch slot left PENDING by a crash re-executes its function; with
    them on (the default), its reconciler runs instead."""
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=0)])
    config = {} if reconcilers else {"durable-execution.reconcilers": False}
    result = Runner(ReconciledBatch, InMemoryStore(), injector=injector, config=config).run([("k", 0)])
    assert result.outputs == {"k": [[10, 20]]}
    slot0 = [n for key, n in agents.EFFECTS.items() if key.endswith("/0")]
    if reconcilers:
        assert RECONCILED == [1, 2] and slot0 == [1]
    else:
        assert RECONCILED == [] and slot0 == [2]


# -- DE-3 after DE-7: a mismatch on a reconcilable call reserves the slot before the function runs -------


def other(i: int) -> int:
    return i


@pytest.mark.parametrize("path", ["sync", "async"])
@pytest.mark.parametrize("reconcilable", [True, False])
def test_a_mismatched_slot_is_reserved_pending_before_the_function_runs(path: str, reconcilable: bool) -> None:
    """DE-7 then DE-3: the mismatching record is truncated and, for a reconcilable call, PENDING for the
    new call is in the store at the moment the function starts (DE-1: a plain call writes nothing)."""
    store = InMemoryStore()
    execution(store).execute(other, (1,), {})
    seen: list[list[CallResult]] = []

    def look(i: int) -> int:
        seen.append(list(stored(store)))
        return i

    ex = execution(store)
    reconciler = (lambda: -1) if reconcilable else None
    if path == "sync":
        assert ex.execute(look, (7,), {}, reconciler=reconciler) == 7
    else:
        assert asyncio.run(ex.execute_async(look, (7,), {}, reconciler=reconciler)) == 7
    expected = [CallResult.pending(function_id(look), args_digest((7,), {}))] if reconcilable else []
    assert seen == [expected]
    assert [(r.function_id, r.status) for r in stored(store)] == [(function_id(look), CallStatus.SUCCEEDED)]


# -- DE-11: a misuse of the runtime inside a durable function is raised, never recorded --------------------


def misuse() -> None:
    check_action_access(None, "memory access")  # what ctx.short_term_memory does inside a durable call


async def misuse_async() -> None:
    misuse()


@pytest.mark.parametrize(
    ("path", "reconciler", "left"),
    [
        ("sync", None, []),
        ("sync", lambda: 0, [CallStatus.PENDING]),
        ("pool", None, []),
        ("coroutine", None, []),
        ("coroutine", lambda: 0, [CallStatus.PENDING]),
    ],
    ids=["sync", "sync-reconcilable", "pool", "coroutine", "coroutine-reconcilable"],
)
def test_misuse_inside_a_durable_function_is_not_recorded_as_its_outcome(
    path: str, reconciler: Any, left: list[CallStatus]
) -> None:
    """DE-11: the MemoryAccessError propagates and the store holds no FAILED record for the call (only
    the PENDING reservation of a reconcilable call), so a fixed action runs it for real."""
    store = InMemoryStore()
    ex = execution(store)
    with pytest.raises(MemoryAccessError, match="inside a durable function"):
        if path == "sync":
            ex.execute(misuse, (), {}, reconciler=reconciler)
        else:
            func = misuse if path == "pool" else misuse_async
            asyncio.run(ex.execute_async(func, (), {}, reconciler=reconciler))
    assert [r.status for r in stored(store)] == left
    assert ex.index == 0


class MisusingBatch(Agent):
    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        await ctx.durable_execute_all_async([DurableCall(misuse)])


def test_misuse_inside_a_batch_call_is_not_recorded_as_its_outcome() -> None:
    """DE-11 on the batch path: the slot stays as reserved (PENDING), not FAILED."""
    store = InMemoryStore()
    with pytest.raises(MemoryAccessError):
        Runner(MisusingBatch, store).run([("k", 0)])
    assert [r.status for r in only_entry_calls(store)] == [CallStatus.PENDING]


# -- REC-5 in a batch: a crash at one slot while another still runs --------------------------------------

RUNS: Counter[int] = Counter()
SECOND_DONE = threading.Event()


def slot(i: int) -> int:
    RUNS[i] += 1
    if i == 1:
        SECOND_DONE.set()
    return i


class TwoSlots(Agent):
    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 2}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        outcomes = await ctx.durable_execute_all_async([DurableCall(slot, (0,)), DurableCall(slot, (1,))])
        ctx.send_event(OutputEvent([o.value for o in outcomes]))


class CrashWhenTheOtherSlotFinished(FaultInjector):
    """Crashes at slot 0's record only once slot 1's work has returned, so slot 1 is done but its
    record is still to be written when the process dies."""

    def reach(self, point: FaultPoint) -> None:
        if point.phase == Phase.AFTER_RECORD and point.call_index == 0 and not self.fired:
            self.trace.append(point)
            SECOND_DONE.wait(10)
            time.sleep(0.05)  # let slot 1's completion reach the event loop's queue
            self.fired.append(point)
            raise SimulatedCrash(point)
        super().reach(point)


def test_a_batch_slot_finished_but_unrecorded_at_a_crash_runs_once_more_and_nothing_lands_after_it() -> None:
    """REC-5 (at-least-once): slot 1's work finished while slot 0's record crashed the process; a dead
    process writes nothing, so slot 1 is still PENDING, and recovery runs it exactly once more while
    slot 0 replays."""
    RUNS.clear()
    SECOND_DONE.clear()
    store = InMemoryStore()
    runner = Runner(TwoSlots, store, injector=CrashWhenTheOtherSlotFinished())
    runner.inputs.append(("k", 0))
    with pytest.raises(SimulatedCrash):
        runner.process()
    assert [r.status for r in only_entry_calls(store)] == [CallStatus.SUCCEEDED, CallStatus.PENDING]
    assert dict(RUNS) == {0: 1, 1: 1}
    runner.fail_over()
    result = runner.run()
    assert result.outputs == {"k": [[0, 1]]}
    assert dict(RUNS) == {0: 1, 1: 2}


# -- DE-10: decode errors carry the validation digest --------------------------------------------------------


def test_decode_errors_name_the_validation_digest_and_the_location() -> None:
    """DE-10: besides key, seq, action and call index, the error names the record's function id and
    args digest, as attributes and in its message; nothing runs and nothing is deleted."""
    store = InMemoryStore()
    fid, digest = function_id(agents.step), args_digest((1,), {})
    store.put(
        REF, ActionState(task_event=REF.event, call_results=[CallResult.succeeded(fid, digest, b"\x80\x05garbage")])
    )
    with pytest.raises(PayloadDecodeError) as info:
        execution(store).execute(agents.step, (1,), {})
    err = info.value
    assert (err.key, err.seq, err.action, err.call_index) == ("user-1", 4, "work", 0)
    assert (err.function_id, err.args_digest) == (fid, digest)
    assert fid in str(err) and f"args digest {digest}" in str(err)
    assert len(stored(store)) == 1 and not agents.EFFECTS


def test_decode_errors_in_a_batch_name_the_slot_and_its_digest() -> None:
    """DE-10 on the batch path: the failing slot's index and digest are named."""
    store = InMemoryStore()
    ex = execution(store)
    fid, digest = function_id(agents.step), args_digest((2,), {})
    ex.write(
        0,
        [
            CallResult.succeeded(function_id(agents.step), args_digest((1,), {}), None),
            CallResult.failed(fid, digest, b"not a pickle"),
        ],
    )
    from reference_runtime.batch import run_batch

    with pytest.raises(PayloadDecodeError) as info:
        calls = [DurableCall(agents.step, (1,)), DurableCall(agents.step, (2,))]
        asyncio.run(run_batch(execution(store), calls, SETTINGS))
    assert (info.value.call_index, info.value.function_id, info.value.args_digest) == (1, fid, digest)
    assert not agents.EFFECTS


def test_a_failed_record_without_an_exception_payload_fails_fast() -> None:
    """DE-10: a FAILED record that carries no exception is corrupt: it is refused with its location and
    digest, not replayed as a success."""
    store = InMemoryStore()
    fid, digest = function_id(agents.step), args_digest((1,), {})
    store.put(
        REF, ActionState(task_event=REF.event, call_results=[CallResult(fid, digest, None, None, CallStatus.FAILED)])
    )
    with pytest.raises(PayloadDecodeError, match="FAILED but has no exception payload") as info:
        execution(store).execute(agents.step, (1,), {})
    assert (info.value.call_index, info.value.args_digest) == (0, digest)
    assert "recorded exception" in str(info.value)
    assert len(stored(store)) == 1 and not agents.EFFECTS


# -- the execution's own view of the records -----------------------------------------------------------------


def test_the_executions_records_equal_the_stores_after_every_write(caplog: pytest.LogCaptureFixture) -> None:
    """DE-4, STORE-5: appends, in-place finalizations and truncations keep the execution's records equal
    to the store's, so later calls of the same action match the right slot (no spurious mismatch)."""
    store = InMemoryStore()
    ex = execution(store)
    ex.execute(agents.step, (1,), {}, reconciler=lambda: 0)  # PENDING appended, finalized in place
    assert ex.records == stored(store)
    ex.execute(agents.step, (2,), {})  # appended
    ex.execute(agents.step, (3,), {}, reconciler=lambda: 0)
    assert ex.records == stored(store) and [r.status for r in ex.records] == [CallStatus.SUCCEEDED] * 3
    assert "Non-deterministic" not in caplog.text
    again = execution(store)
    assert again.execute(agents.step, (1,), {}) == 10  # replayed
    again.execute(other, (5,), {})  # mismatch at 1: truncated, then appended
    assert again.records == stored(store) and len(again.records) == 2
    assert sorted(agents.EFFECTS.values()) == [1, 1, 1]


def test_outcome_reports_success_and_failure() -> None:
    """BAT-1: an Outcome is a success with a value or a failure with an error; unwrap returns or raises."""
    ok, bad = Outcome.success(3), Outcome.failure(ValueError("no"))
    assert (ok.is_success(), ok.is_failure(), ok.unwrap()) == (True, False, 3)
    assert (bad.is_success(), bad.is_failure()) == (False, True)
    with pytest.raises(ValueError, match="no"):
        bad.unwrap()


# -- batch input checks, the reservation and the journal -----------------------------------------------------


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"tool-call.parallelism": "many"}, "'tool-call.parallelism' must be an integer >= 1, got 'many'"),
        ({"tool-call.parallelism": 0}, "'tool-call.parallelism' must be an integer >= 1, got 0"),
        ({"tool-call.batch.timeout.ms": "soon"}, "'tool-call.batch.timeout.ms' must be an integer, got 'soon'"),
        ({"tool-call.batch.timeout.ms": 1.5}, "'tool-call.batch.timeout.ms' must be an integer, got 1.5"),
    ],
)
def test_a_bad_batch_setting_is_one_clear_error(config: dict[str, Any], match: str) -> None:
    """BAT-3, BAT-6, CFG-3: a batch setting that is not an integer in range is refused when the runner is
    built, with the key and the value, before any action runs."""

    class OneBatch(Agent):
        @action(InputEvent)
        @staticmethod
        async def work(event: Event, ctx: RunnerContext) -> None:
            await ctx.durable_execute_all_async([DurableCall(agents.step, (1,))])

    store = InMemoryStore()
    with pytest.raises(ConfigError, match=match):
        Runner(OneBatch, store, config=config).run([("k", 1)])
    assert not agents.EFFECTS
    assert not store._entries


def test_a_batch_takes_only_durable_calls() -> None:
    """BAT-1: anything but a DurableCall is refused, naming its type, before any slot is reserved."""
    from reference_runtime.batch import run_batch

    store = InMemoryStore()
    with pytest.raises(TypeError, match="takes DurableCall objects, got tuple"):
        asyncio.run(run_batch(execution(store), [DurableCall(agents.step, (1,)), (agents.step, 2)], SETTINGS))  # type: ignore[list-item]
    assert stored(store) == []


def test_the_reservation_never_overwrites_a_finished_slot() -> None:
    """BAT-2, BAT-5: recovering a batch whose slot 0 is PENDING and slot 1 finished reserves only the new
    slot 2; slot 1's record is kept and replayed."""
    from reference_runtime.batch import run_batch

    store = InMemoryStore()
    ex = execution(store)
    ex.write(
        0,
        [
            CallResult.pending(function_id(agents.step), args_digest((1,), {})),
            ex.encode(function_id(agents.step), args_digest((2,), {}), Outcome.success(20), 1),
        ],
    )
    calls = [DurableCall(agents.step, (i,)) for i in (1, 2, 3)]
    outcomes = asyncio.run(run_batch(execution(store), calls, parse_settings({"tool-call.parallelism": 1})))
    assert [o.value for o in outcomes] == [10, 20, 30]
    assert [(r.args_digest, r.status) for r in stored(store)] == [
        (args_digest((i,), {}), CallStatus.SUCCEEDED) for i in (1, 2, 3)
    ]
    assert sorted(agents.EFFECTS) == ["user-1/4/work/0", "user-1/4/work/2"]


class JournaledBatch(Agent):
    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        calls = [
            DurableCall(agents.step, (1,)),
            DurableCall(agents.fail_once, (2,)),
            DurableCall(agents.step, (3,), reconciler=reconcile_for(3)),
        ]
        await ctx.durable_execute_all_async(calls)


def test_a_batch_journals_every_slot_with_its_source_and_outcome_kind() -> None:
    """PLG-2, BAT-5: each slot is journaled with what happened to it (executed, replayed, reconciled) and
    whether it succeeded, in the first attempt and in recovery."""
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=2)])
    result = Runner(JournaledBatch, InMemoryStore(), injector=injector).run([("k", 0)])
    entries = [(e.attempt, e.call_id.call_index, e.source, e.outcome) for e in result.journal]
    assert entries == [
        (0, 0, "executed", "ok"),
        (0, 1, "executed", "error"),
        (0, 2, "executed", "ok"),
        (1, 0, "replayed", "ok"),
        (1, 1, "replayed", "error"),
        (1, 2, "reconciled", "ok"),
    ]


# -- the asynchronous path: reconcile, replay without writing, journal kinds -------------------------------


class AsyncReconciled(Agent):
    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        first = await ctx.durable_execute_async(agents.step, 1, reconciler=reconcile_for(1))
        with contextlib.suppress(ValueError):
            await ctx.durable_execute_async(agents.fail_once, 2)
        ctx.send_event(OutputEvent(first))


def test_the_async_path_reconciles_a_pending_slot_and_replays_without_writing() -> None:
    """DE-5 and DE-3 on the async path: a PENDING slot left by a crash is reconciled off the runner's
    thread, not re-executed; DE-2: a replayed call reaches no after-effect or after-record point (it
    writes nothing); PLG-2: the journal tells ok from error."""
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=0), CrashAt(Phase.BEFORE_COMPLETE)])
    result = Runner(AsyncReconciled, InMemoryStore(), injector=injector).run([("k", 0)])
    assert result.outputs == {"k": [10]}
    assert RECONCILED == [1]
    assert sorted(agents.EFFECTS.values()) == [1, 1]  # step ran once (then reconciled), fail_once once
    entries = [(e.attempt, e.call_id.call_index, e.source, e.outcome) for e in result.journal]
    assert entries == [
        (0, 0, "executed", "ok"),
        (1, 0, "reconciled", "ok"),
        (1, 1, "executed", "error"),
        (2, 0, "replayed", "ok"),
        (2, 1, "replayed", "error"),
    ]
    second_crash = injector.trace.index(injector.fired[1])
    after = [p.phase for p in injector.trace[second_crash + 1 :] if p.call_index is not None]
    assert after == [Phase.BEFORE_CALL, Phase.BEFORE_CALL], "replayed calls write nothing"


def test_the_sync_path_replays_without_writing_and_journals_outcome_kinds() -> None:
    """DE-2, PLG-2 on the synchronous path."""
    injector = FaultInjector([CrashAt(Phase.BEFORE_COMPLETE)])
    result = Runner(agents.Failing, InMemoryStore(), injector=injector).run([("k", 1)])
    assert result.outputs == {"k": ["caught boom 1"]}
    assert [(e.attempt, e.source, e.outcome) for e in result.journal] == [
        (0, "executed", "error"),
        (1, "replayed", "error"),
    ]
    crash = injector.trace.index(injector.fired[0])
    assert [p.phase for p in injector.trace[crash + 1 :] if p.call_index is not None] == [Phase.BEFORE_CALL]
