"""The runner conformance suite: subclass :class:`RunnerConformance` and provide ``durable_runner_factory``.

Each check runs an agent from :mod:`conformance.agents` through the runner under test with a crash
schedule, and compares what happened (outputs, memory, the journal, real executions counted by the
agents, the writes the store saw) with what the cited spec clauses require. Checks that crash at every
fault point drive the crash-exploration engine's sweep (:func:`reference_runtime.exploration.sweep.sweep`)
with the runner under test, and read its verdict. Checks cite clauses with
:func:`conformance.marks.clause` and need capabilities (``runner``, ``runner_async``, ``runner_batch``)
with :func:`conformance.marks.capability`. A failed check names its clauses and shows what it expected
and what the runner did.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from reference_runtime import (
    ActionFailedError,
    ActionState,
    Agent,
    CallId,
    CallResult,
    CrashAt,
    FaultInjector,
    FaultPoint,
    NondeterminismError,
    Phase,
    RunResult,
    SimulatedCrash,
    args_digest,
    function_id,
)
from reference_runtime.durable import MismatchMode
from reference_runtime.exploration.sweep import sweep
from reference_runtime.exploration.verdict import PointOutcome, recorded_attempts
from reference_runtime.records import StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.forwarding import ForwardingStore

from . import agents
from .agents import LEDGER, Observed
from .deadline import CHECK_TIMEOUT, guarded_check
from .marks import capability, capability_of, clause
from .runner_factory import RunnerFactory

INPUTS = [("alice", 1), ("bob", 2), ("alice", 3)]


@dataclass(frozen=True)
class Write:
    """One store write as the runner made it: which slot, and the statuses of the records written."""

    method: str
    key: str
    seq: int
    action: str
    index: int | None
    statuses: tuple[str, ...] = ()
    digests: tuple[str, ...] = ()


class ObservedStore(ForwardingStore):
    """Delegates to the store under the runner and notes every write (prunes included) in ``observed`` once
    it has returned (so a write noted before an effect was durable before the effect started)."""

    def __init__(self, inner: ActionStateStore, observed: Observed = LEDGER) -> None:
        super().__init__(inner)
        self.observed = observed

    def _note(self, method: str, ref: StateRef, index: int | None, results: Sequence[CallResult] = ()) -> None:
        self.observed.note(
            "write",
            Write(
                method,
                ref.key,
                ref.seq,
                ref.action.name,
                index,
                tuple(r.effective_status.value for r in results),
                tuple(r.args_digest for r in results),
            ),
        )

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, state)
        self._note("put", ref, None, state.call_results)

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        super().put_call_results(ref, index, results)
        self._note("put_call_results", ref, index, results)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        super().truncate_call_results(ref, index)
        self._note("truncate_call_results", ref, index)

    def prune_state(self, key: str, seq: int) -> None:
        super().prune_state(key, seq)
        self.observed.note("write", Write("prune_state", key, seq, "", None))


class LedgerInjector(FaultInjector):
    """A :class:`FaultInjector` that notes each fault point reached (``"point"``) and each crash
    (``"crash"``) in ``observed``; with ``change_code`` the agents' code version goes to 2 at the first crash,
    as if the process restarted on new code."""

    change_code: bool = False
    observed: Observed = LEDGER

    def reach(self, point: FaultPoint) -> None:
        self.observed.note("point", point)
        try:
            super().reach(point)
        except SimulatedCrash:
            self.observed.note("crash", point)
            if self.change_code:
                self.observed.version = 2
            raise


@dataclass
class Run:
    """What one run under a crash schedule did."""

    result: RunResult
    injector: FaultInjector
    effects: Counter[str]
    log: list[tuple[str, Any]]

    def writes_after_first_crash(self) -> list[Write]:
        return writes_after_first_crash(self.log)

    def attempt(self, n: int, action: str | None = None) -> list[tuple[int, str]]:
        """(call index, source) of the journal entries of failover attempt ``n``."""
        return [
            (e.call_id.call_index, e.source)
            for e in self.result.journal
            if e.attempt == n and (action is None or e.call_id.action == action)
        ]


def writes_after_first_crash(log: Sequence[tuple[str, Any]]) -> list[Write]:
    crash = next(i for i, (what, _) in enumerate(log) if what == "crash")
    return [w for what, w in log[crash:] if what == "write"]


def _call(key: str, seq: int, action: str, index: int) -> str:
    return str(CallId(key, seq, action, index))


class _RunnerChecks:
    """Every runner check. Not collected itself (no ``Test`` prefix); a subclass named ``Test…`` is."""

    #: Seconds each check may take, setup and teardown included, before it fails as hung (spec KIT-8).
    check_timeout: float = CHECK_TIMEOUT

    @pytest.fixture(autouse=True)
    def _time_limit(self, request: pytest.FixtureRequest) -> Iterator[None]:
        with guarded_check(request.node, self.check_timeout):
            yield

    @pytest.fixture(autouse=True)
    def _backend_property(
        self, request: pytest.FixtureRequest, durable_runner_factory: RunnerFactory
    ) -> Iterator[None]:
        request.node.user_properties.append(("backend", durable_runner_factory.name))
        declared = ",".join(sorted(durable_runner_factory.capabilities))
        request.node.user_properties.append(("declared_capabilities", declared))
        cap = capability_of(request.node)
        if cap is not None and cap not in durable_runner_factory.capabilities:
            pytest.skip(f"runner does not declare the {cap!r} capability")
        agents.reset()
        yield
        agents.reset()

    # -- running ---------------------------------------------------------------------------------------------
    def execute(
        self,
        factory: RunnerFactory,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        plan: Sequence[CrashAt] = (),
        *,
        mismatch: MismatchMode = "lenient",
        change_code: bool = False,
    ) -> Run:
        agents.reset()
        injector = LedgerInjector(list(plan))
        injector.change_code = change_code
        store = ObservedStore(factory.new_store())
        try:
            result = factory.run(agent, inputs, store=store, injector=injector, mismatch=mismatch)
        finally:
            store.close()
        return Run(result, injector, LEDGER.effects, list(LEDGER.log))

    def crash_free(self, factory: RunnerFactory, agent: type[Agent], inputs: Sequence[tuple[str, Any]]) -> Run:
        run = self.execute(factory, agent, inputs)
        assert run.result.failovers == 0 and not run.injector.fired
        return run

    def sweep(
        self, factory: RunnerFactory, agent: type[Agent], inputs: Sequence[tuple[str, Any]]
    ) -> list[PointOutcome]:
        """The engine's sweep through the runner under test: the crash-free run, then one run per fault point
        it reached, crashing once there, each judged by the engine's verdict (REC-3, REC-4, REC-6, PLG-1) and,
        from the executions the agents book, REC-3 and REC-5 on what really ran."""
        stores: list[ActionStateStore] = []

        def new_store() -> ActionStateStore:
            stores.append(factory.new_store())
            return stores[-1]

        agents.reset()
        try:
            outcomes = sweep(agent, inputs, new_store, LEDGER.ledger, run=factory.run)
        finally:
            for store in stores:
                store.close()
        assert outcomes, "the runner reached no fault point (FLT-1)"
        return outcomes

    # -- recovery by call order ---------------------------------------------------------------------------
    @clause("CONF-1")
    @clause("CONF-4")
    @capability("runner")
    def test_declared_capabilities_are_detected(self, durable_runner_factory: RunnerFactory) -> None:
        """CONF-1, CONF-4: every declared capability's probe agent runs to the expected outputs."""
        missing = durable_runner_factory.capabilities - durable_runner_factory.detected()
        assert not missing, f"declared but not detected: {sorted(missing)}"

    @clause("REC-2")
    @clause("REC-3")
    @clause("DE-2")
    @capability("runner")
    def test_crash_after_record_replays_by_call_order(self, durable_runner_factory: RunnerFactory) -> None:
        """REC-2, REC-3, DE-2: after a crash once call 1's record is persisted, calls 0 and 1 replay in
        order without executing and call 2 executes; the outputs are the crash-free ones."""
        f = durable_runner_factory
        base = self.crash_free(f, agents.Steps, [("k", 1)])
        run = self.execute(f, agents.Steps, [("k", 1)], [CrashAt(Phase.AFTER_RECORD, call_index=1)])
        assert run.result.failovers == 1 and len(run.injector.fired) == 1
        assert run.result.outputs == base.result.outputs
        assert run.effects == base.effects, "a call whose record was persisted executed again"
        assert run.attempt(1) == [(0, "replayed"), (1, "replayed"), (2, "executed")]

    @clause("REC-5")
    @clause("DE-1")
    @capability("runner")
    def test_crash_between_effect_and_record_executes_at_most_once_more(
        self, durable_runner_factory: RunnerFactory
    ) -> None:
        """REC-5, DE-1: a call interrupted after its effect and before its record runs once more at most;
        without a reconciler no PENDING record is ever written."""
        f = durable_runner_factory
        run = self.execute(f, agents.Steps, [("k", 1)], [CrashAt(Phase.AFTER_EFFECT, call_index=1)])
        assert run.result.outputs == {"k": [60]}
        assert run.effects[_call("k", 0, "work", 0)] == 1
        assert 1 <= run.effects[_call("k", 0, "work", 1)] <= 2
        assert run.effects[_call("k", 0, "work", 2)] == 1
        pending = [w for what, w in run.log if what == "write" and "PENDING" in w.statuses]
        assert not pending, f"PENDING written for a call without reconciler: {pending}"

    @clause("REC-1")
    @clause("REC-3")
    @clause("REC-5")
    @clause("REC-6")
    @clause("FLT-1")
    @clause("FLT-4")
    @clause("CONF-8")
    @capability("runner")
    def test_crash_at_every_fault_point_recovers_to_the_crash_free_run(
        self, durable_runner_factory: RunnerFactory
    ) -> None:
        """REC-1, REC-3, REC-5, REC-6, FLT-1, FLT-4, CONF-8: for every fault point the crash-free run reaches,
        one crash there (the engine's sweep, through the runner under test) and a recovery give the crash-free
        outputs and memory; calls recorded before the crash never execute again, the others at most once
        more, counted on what the agents really ran."""
        outcomes = self.sweep(durable_runner_factory, agents.Steps, INPUTS)
        violations = [v for o in outcomes for v in o.violations]
        assert not violations, "\n".join(violations)
        phases = {o.point.phase for o in outcomes}
        assert phases >= {
            Phase.BEFORE_CALL,
            Phase.AFTER_EFFECT,
            Phase.AFTER_RECORD,
            Phase.BEFORE_COMPLETE,
            Phase.AFTER_COMPLETE,
            Phase.CHECKPOINT,
        }, f"fault points reached: {sorted(phases)}"

    # -- mismatch modes -----------------------------------------------------------------------------------
    @clause("DE-8")
    @capability("runner")
    def test_strict_mode_raises_on_a_changed_call_and_changes_no_record(
        self, durable_runner_factory: RunnerFactory
    ) -> None:
        """DE-8: in strict mode a recorded call that no longer matches raises NondeterminismError with the
        expected and actual function id and digest and the call's location; no record is written."""
        f = durable_runner_factory
        agents.reset()
        injector = LedgerInjector([CrashAt(Phase.BEFORE_COMPLETE)])
        injector.change_code = True
        store = ObservedStore(f.new_store())
        try:
            with pytest.raises(NondeterminismError) as info:
                f.run(agents.Evolving, [("k", 1)], store=store, injector=injector, mismatch="strict")
        finally:
            store.close()
        err = info.value
        assert (err.expected_function_id, err.actual_function_id) == (
            function_id(agents.step),
            function_id(agents.step_v2),
        )
        assert err.expected_digest == err.actual_digest == args_digest((2,), {})
        assert (err.key, err.seq, err.action, err.call_index) == ("k", 0, "work", 1)
        changed = [w for w in writes_after_first_crash(LEDGER.log) if w.method != "put" or w.statuses]
        assert not changed, f"strict mode changed records: {changed}"

    @clause("DE-7")
    @capability("runner")
    def test_lenient_mode_truncates_at_a_changed_call_and_executes(
        self, durable_runner_factory: RunnerFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        """DE-7: in lenient mode the changed call is logged as a warning naming its index, the records are
        truncated from that index durably before it executes, and the run finishes on the new code."""
        f = durable_runner_factory
        with caplog.at_level(logging.WARNING):
            run = self.execute(f, agents.Evolving, [("k", 1)], [CrashAt(Phase.BEFORE_COMPLETE)], change_code=True)
        assert run.result.outputs == {"k": [[10, 200, 30]]}
        assert run.attempt(1) == [(0, "replayed"), (1, "executed"), (2, "executed")]
        writes = [(w.method, w.index) for w in run.writes_after_first_crash()]
        assert ("truncate_call_results", 1) in writes, writes
        assert writes.index(("truncate_call_results", 1)) < writes.index(("put_call_results", 1)), writes
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any(re.search(r"\b1\b", m) for m in warnings), f"no warning naming index 1: {warnings}"

    # -- reconcilers --------------------------------------------------------------------------------------
    @pytest.mark.parametrize("phase", [Phase.AFTER_PENDING, Phase.AFTER_EFFECT], ids=str)
    @clause("DE-3")
    @clause("DE-5")
    @clause("REC-5")
    @capability("runner")
    def test_pending_call_is_reconciled_not_re_executed(
        self, durable_runner_factory: RunnerFactory, phase: Phase
    ) -> None:
        """DE-3, DE-5, REC-5: PENDING is durable before the function starts; after a crash in flight the
        reconciler, not the function, decides the outcome, and the effect happens exactly once."""
        run = self.execute(durable_runner_factory, agents.Reconciled, [("k", 4)], [CrashAt(phase, call_index=0)])
        call = _call("k", 0, "work", 0)
        assert run.result.outputs == {"k": [40]}
        assert run.effects == Counter({call: 1})
        assert LEDGER.reconciled == [call]
        assert run.attempt(1) == [(0, "reconciled")]
        pending = next(i for i, (what, w) in enumerate(run.log) if what == "write" and w.statuses == ("PENDING",))
        effect = next(i for i, (what, _) in enumerate(run.log) if what == "effect")
        assert pending < effect, "the function started before its PENDING record was persisted"

    # -- the asynchronous path --------------------------------------------------------------------------------
    @clause("REC-2")
    @clause("REC-3")
    @capability("runner_async")
    def test_async_calls_replay_by_call_order(self, durable_runner_factory: RunnerFactory) -> None:
        """REC-2, REC-3 on the asynchronous path: recorded awaited calls replay in order."""
        f = durable_runner_factory
        base = self.crash_free(f, agents.AsyncSteps, [("k", 1)])
        run = self.execute(f, agents.AsyncSteps, [("k", 1)], [CrashAt(Phase.AFTER_RECORD, call_index=1)])
        assert run.result.outputs == base.result.outputs
        assert run.effects == base.effects
        assert run.attempt(1) == [(0, "replayed"), (1, "replayed"), (2, "executed")]

    @clause("DE-3")
    @clause("DE-5")
    @capability("runner_async")
    def test_async_pending_call_is_reconciled(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-3, DE-5 on the asynchronous path."""
        run = self.execute(
            durable_runner_factory, agents.AsyncReconciled, [("k", 4)], [CrashAt(Phase.AFTER_EFFECT, call_index=0)]
        )
        call = _call("k", 0, "work", 0)
        assert run.result.outputs == {"k": [40]}
        assert run.effects == Counter({call: 1}) and LEDGER.reconciled == [call]

    # -- batches ------------------------------------------------------------------------------------------
    @clause("BAT-2")
    @capability("runner_batch")
    def test_batch_reserves_every_slot_in_one_persist_before_work(self, durable_runner_factory: RunnerFactory) -> None:
        """BAT-2: one write reserves every slot of the batch as PENDING before any call runs."""
        run = self.execute(durable_runner_factory, agents.Batch, [("k", [1, 2, 3])], [CrashAt(Phase.AFTER_PENDING)])
        first_effect = next(i for i, (what, _) in enumerate(run.log) if what == "effect")
        before = [w for what, w in run.log[:first_effect] if what == "write" and w.method == "put_call_results"]
        got = [(w.method, w.key, w.seq, w.action, w.index, w.statuses) for w in before[:1]]
        assert got == [("put_call_results", "k", 0, "work", 0, ("PENDING",) * 3)], (
            f"BAT-2: expected one write reserving slots 0..2 as PENDING before the first call ran, got {got}"
        )
        assert run.result.outputs == {"k": [[10, 20, 30]]}

    @pytest.mark.parametrize(
        "crash",
        [
            CrashAt(Phase.AFTER_PENDING),
            CrashAt(Phase.AFTER_RECORD, call_index=0),
            CrashAt(Phase.AFTER_RECORD, call_index=1),
            CrashAt(Phase.AFTER_EFFECT, call_index=1),
        ],
        ids=["after-reserve", "after-slot-0", "after-slot-1", "mid-slot-1"],
    )
    @clause("BAT-4")
    @clause("BAT-5")
    @clause("DE-6")
    @capability("runner_batch")
    def test_partial_batch_recovery_reruns_only_unfinished_slots(
        self, durable_runner_factory: RunnerFactory, crash: CrashAt
    ) -> None:
        """BAT-4, BAT-5, DE-6: after a crash mid-batch, finalized slots replay, PENDING slots without a
        reconciler execute again (returning real results, not None), and outcomes stay in input order."""
        run = self.execute(durable_runner_factory, agents.Batch, [("k", [1, 2, 3])], [crash])
        assert run.result.outputs == {"k": [[10, 20, 30]]}
        assert len(run.injector.fired) == 1
        landed = recorded_attempts(run.injector.trace, run.injector.fired)
        recorded = {call[3] for call, attempt in landed.items() if attempt == 0}
        for i in range(3):
            count = run.effects[_call("k", 0, "work", i)]
            assert (count == 1) if i in recorded else (1 <= count <= 2), f"slot {i} ran {count} times"
        replayed = {i for i, source in run.attempt(1) if source == "replayed"}
        assert replayed == recorded

    @clause("BAT-5")
    @clause("DE-5")
    @capability("runner_batch")
    def test_pending_batch_slots_are_reconciled(self, durable_runner_factory: RunnerFactory) -> None:
        """BAT-5, DE-5: PENDING slots with reconcilers are reconciled, finalized ones replay."""
        run = self.execute(
            durable_runner_factory,
            agents.BatchReconciled,
            [("k", [1, 2, 3])],
            [CrashAt(Phase.AFTER_EFFECT, call_index=1)],
        )
        assert run.result.outputs == {"k": [[10, 20, 30]]}
        assert LEDGER.reconciled == [_call("k", 0, "work", 1), _call("k", 0, "work", 2)]
        assert all(run.effects[_call("k", 0, "work", i)] == 1 for i in range(3))
        assert sorted(run.attempt(1)) == [(0, "replayed"), (1, "reconciled"), (2, "reconciled")]

    # -- memory and completed actions -------------------------------------------------------------------------
    @clause("MEM-9")
    @clause("MEM-10")
    @clause("REC-6")
    @capability("runner")
    def test_memory_after_any_crash_equals_the_crash_free_memory(self, durable_runner_factory: RunnerFactory) -> None:
        """MEM-9, MEM-10, REC-6: counters, values and nested objects written by two chained actions are the
        crash-free ones after a crash at any fault point: a crashed action leaves no writes behind, a
        completed one's log replays exactly (object creation included)."""
        outcomes = self.sweep(durable_runner_factory, agents.TwoStage, INPUTS)
        differ = [v for o in outcomes for v in o.violations if v.startswith("REC-6")]
        assert not differ, "\n".join(differ)
        base = self.crash_free(durable_runner_factory, agents.TwoStage, INPUTS)
        assert base.result.memory["alice"]["count"] == 2
        assert set(base.result.memory["alice"]["conv"]) == {"turn0", "turn1"}

    @pytest.mark.parametrize(
        "crash",
        [
            CrashAt(Phase.AFTER_COMPLETE, action="first"),
            CrashAt(Phase.BETWEEN_ACTIONS),
            CrashAt(Phase.BEFORE_COMPLETE, action="second"),
        ],
        ids=["after-first-completes", "between-actions", "before-second-completes"],
    )
    @clause("REC-4")
    @capability("runner")
    def test_completed_action_is_skipped_and_its_outputs_not_emitted_twice(
        self, durable_runner_factory: RunnerFactory, crash: CrashAt
    ) -> None:
        """REC-4: on recovery a completed action is not run again (no durable call of it is even looked
        up), its memory and events are replayed, and every output is delivered once."""
        f = durable_runner_factory
        base = self.crash_free(f, agents.TwoStage, [("k", 1)])
        run = self.execute(f, agents.TwoStage, [("k", 1)], [crash])
        assert run.injector.fired
        assert run.result.outputs == base.result.outputs == {"k": ["first 10", "second 110"]}
        assert run.result.memory == base.result.memory
        assert run.effects[_call("k", 0, "first", 0)] == 1
        assert run.attempt(1, "first") == [], "the completed action ran again"

    # -- idempotency ids ----------------------------------------------------------------------------------
    @clause("IDN-5")
    @clause("IDN-6")
    @clause("RUN-1")
    @clause("REC-7")
    @clause("FLT-5")
    @capability("runner")
    def test_idempotency_call_id_is_the_same_in_every_attempt(self, durable_runner_factory: RunnerFactory) -> None:
        """IDN-5, IDN-6, RUN-1, REC-7, FLT-5: a call crashed after its effect twice in a row (the second
        crash during the recovery from the first) sees the same idempotency call id — key, sequence
        number, action, call index — in all three executions."""
        f = durable_runner_factory
        again = CrashAt(Phase.AFTER_EFFECT, key="k", seq=1, call_index=1)
        run = self.execute(f, agents.Steps, [("k", 1), ("k", 2)], [again, again])
        assert run.result.failovers == 2 and len(run.injector.fired) == 2
        assert run.result.outputs == {"k": [60, 90]}
        ids = [c.call_id for c in LEDGER.contexts if c.call_id.seq == 1 and c.call_id.call_index == 1]
        assert ids == [CallId("k", 1, "work", 1)] * 3
        assert {c.idempotency_key for c in LEDGER.contexts if c.call_id in ids} == {_call("k", 1, "work", 1)}

    # -- the runner itself ------------------------------------------------------------------------------------
    @clause("RUN-1")
    @clause("RUN-4")
    @clause("MEM-7")
    @capability("runner")
    def test_sequence_numbers_and_outputs_per_key(self, durable_runner_factory: RunnerFactory) -> None:
        """RUN-1, RUN-4, MEM-7: each input gets the next sequence number of its key from 0 (past 9 too), its
        outputs are collected under its key, in input order, equal outputs included, and each key counts its
        own inputs in its own memory."""
        inputs = [("k", 1), ("j", 1), ("k", 1)] + [("k", i) for i in range(2, 12)]
        run = self.crash_free(durable_runner_factory, agents.Steps, inputs)
        seqs: dict[str, list[int]] = {}
        for c in LEDGER.contexts:
            if c.call_id.call_index == 0:
                seqs.setdefault(c.call_id.key, []).append(c.call_id.seq)
        assert seqs == {"k": list(range(12)), "j": [0]}, (
            f"RUN-1: sequence numbers per key: expected k 0..11 and j [0], got {seqs}"
        )
        want = {"k": [60, 60] + [30 * i + 30 for i in range(2, 12)], "j": [60]}
        assert run.result.outputs == want, f"RUN-4: outputs per key: expected {want}, got {run.result.outputs}"
        counts = {k: m.get("count") for k, m in run.result.memory.items()}
        assert counts == {"k": 12, "j": 1}, (
            f"MEM-7: inputs counted in each key's memory: expected k 12, j 1, got {counts}"
        )

    @clause("RUN-8")
    @clause("RUN-7")
    @capability("runner")
    def test_completed_states_are_pruned_only_after_a_checkpoint(self, durable_runner_factory: RunnerFactory) -> None:
        """RUN-7, RUN-8: a completed state is pruned only once a checkpoint covering its input completed (the
        checkpoint fault point was reached before the prune)."""
        run = self.crash_free(durable_runner_factory, agents.Steps, INPUTS)
        checkpoint = next(
            (i for i, (what, p) in enumerate(run.log) if what == "point" and p.phase is Phase.CHECKPOINT), None
        )
        prunes = [i for i, (what, w) in enumerate(run.log) if what == "write" and w.method == "prune_state"]
        early = [run.log[i][1] for i in prunes if checkpoint is None or i < checkpoint]
        assert not early, f"RUN-8: expected prunes only after the checkpoint, got prunes before it: {early}"

    @clause("RUN-2")
    @capability("runner")
    def test_actions_run_in_declaration_order(self, durable_runner_factory: RunnerFactory) -> None:
        """RUN-2: every action declared for an event type runs, in declaration order."""
        run = self.crash_free(durable_runner_factory, agents.Ordered, [("k", 1)])
        assert run.result.memory["k"]["order"] == ["zeta", "alpha"], (
            f"RUN-2: expected actions ['zeta', 'alpha'], got {run.result.memory['k'].get('order')}"
        )

    @clause("MEM-8")
    @clause("RUN-3")
    @capability("runner")
    def test_sensory_memory_is_empty_at_the_start_of_every_run(self, durable_runner_factory: RunnerFactory) -> None:
        """MEM-8, RUN-3: sensory memory written by one run is gone at the start of the next run of the key,
        and the event the first action sends reaches the second within the same run, which sees that
        run's sensory write; also after a crash and recovery."""
        run = self.crash_free(durable_runner_factory, agents.Sensory, [("k", 1), ("k", 2), ("j", 3)])
        want = {"k": [[None, 1], [None, 2]], "j": [[None, 3]]}
        assert run.result.outputs == want, (
            f"MEM-8: [seen before, seen after] per run: expected {want}, got {run.result.outputs}"
        )
        run = self.execute(
            durable_runner_factory,
            agents.Sensory,
            [("k", 1), ("k", 2)],
            [CrashAt(Phase.BEFORE_COMPLETE, seq=1, action="second")],
        )
        assert run.result.outputs == {"k": [[None, 1], [None, 2]]}, (
            f"MEM-8: after a crash in the second run: expected {{'k': [[None, 1], [None, 2]]}}, "
            f"got {run.result.outputs}"
        )

    @clause("RUN-6")
    @clause("MEM-11")
    @capability("runner_async")
    def test_actions_stay_on_the_runner_thread(self, durable_runner_factory: RunnerFactory) -> None:
        """RUN-6, MEM-11: every action of every key runs on one thread, the runner's; asynchronous durable
        work runs on a pool thread, never on it."""
        self.crash_free(durable_runner_factory, agents.Threads, [("a", 1), ("b", 2), ("c", 3), ("a", 4)])
        actions = {t for what, t in LEDGER.threads if what == "action"}
        durable = {t for what, t in LEDGER.threads if what == "durable"}
        assert len(actions) == 1, f"RUN-6: actions ran on {len(actions)} threads, expected the runner's only"
        assert not durable & actions, "RUN-6: asynchronous durable work ran on the runner's thread, expected a pool"

    @clause("RUN-5")
    @capability("runner_async")
    def test_other_keys_progress_while_an_action_awaits(self, durable_runner_factory: RunnerFactory) -> None:
        """RUN-5: while key ``slow`` awaits durable work, key ``fast`` runs (the work waits for it)."""
        run = self.crash_free(durable_runner_factory, agents.Interleaved, [("slow", "slow"), ("fast", "fast")])
        assert run.result.outputs == {"slow": [True], "fast": ["fast"]}, (
            f"RUN-5: expected key fast to run while slow awaited (slow: [True]), got {run.result.outputs}"
        )

    @clause("RUN-9")
    @clause("RUN-10")
    @capability("runner")
    def test_action_failure_names_its_action_after_other_keys_finish(
        self, durable_runner_factory: RunnerFactory
    ) -> None:
        """RUN-9, RUN-10: an exception from action code fails the run with ActionFailedError naming key,
        sequence number and action, raised after the other keys of the segment ran to their end."""
        agents.reset()
        store = ObservedStore(durable_runner_factory.new_store())
        try:
            with pytest.raises(ActionFailedError) as info:
                durable_runner_factory.run(agents.Failing, [("a", "boom"), ("b", 2)], store=store)
        finally:
            store.close()
        err = info.value
        assert (err.key, err.seq, err.action) == ("a", 0, "work"), (
            f"RUN-9: expected ActionFailedError at ('a', 0, 'work'), got {(err.key, err.seq, err.action)}"
        )
        assert LEDGER.effects[_call("b", 0, "work", 0)] == 1, (
            "RUN-10: key b did not run to its end before the failure of key a was raised"
        )

    @clause("DE-14")
    @capability("runner")
    def test_reconcilers_switched_off_by_config(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-14: with ``durable-execution.reconcilers`` False in the config handed to the runner, a call
        crashed in flight runs again instead of being reconciled, and no PENDING record is written."""
        agents.reset()
        injector = LedgerInjector([CrashAt(Phase.AFTER_EFFECT, call_index=0)])
        store = ObservedStore(durable_runner_factory.new_store())
        try:
            result = durable_runner_factory.run(
                agents.Reconciled,
                [("k", 4)],
                store=store,
                injector=injector,
                config={"durable-execution.reconcilers": False},
            )
        finally:
            store.close()
        call = _call("k", 0, "work", 0)
        assert result.outputs == {"k": [40]}, f"DE-14: expected outputs {{'k': [40]}}, got {result.outputs}"
        assert LEDGER.reconciled == [], f"DE-14: reconcilers are off, yet ran for {LEDGER.reconciled}"
        assert LEDGER.effects[call] == 2, (
            f"DE-14: expected the call to run again (2 executions), got {LEDGER.effects[call]}"
        )
        pending = [w for what, w in LEDGER.log if what == "write" and "PENDING" in w.statuses]
        assert not pending, f"DE-14: PENDING written with reconcilers off: {pending}"

    @clause("DE-5")
    @clause("DE-4")
    @clause("REC-7")
    @capability("runner")
    def test_reconciled_outcome_is_persisted(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-5, DE-4, REC-7: the reconciler's outcome is persisted in the PENDING slot (in place, index 0)
        before the action goes on, so a second crash later in the recovery replays it without asking the
        reconciler again."""
        call = _call("k", 0, "work", 0)
        run = self.execute(
            durable_runner_factory,
            agents.Reconciled,
            [("k", 4)],
            [CrashAt(Phase.AFTER_EFFECT, call_index=0), CrashAt(Phase.BEFORE_COMPLETE)],
        )
        assert run.result.outputs == {"k": [40]}, f"DE-5: expected outputs {{'k': [40]}}, got {run.result.outputs}"
        finalized = [
            w
            for w in run.writes_after_first_crash()
            if w.method == "put_call_results" and w.index == 0 and w.statuses == ("SUCCEEDED",)
        ]
        assert finalized, "DE-5: the reconciled outcome was never persisted in slot 0 (no SUCCEEDED write)"
        assert LEDGER.reconciled == [call], (
            f"DE-5: expected one reconciliation of {call}, got {LEDGER.reconciled} (outcome not persisted?)"
        )
        assert run.effects == Counter({call: 1}), f"DE-5: expected the effect once, got {dict(run.effects)}"

    @clause("BAT-3")
    @clause("BAT-4")
    @clause("BAT-1")
    @capability("runner_batch")
    def test_batch_runs_exactly_parallelism_calls_and_finalizes_by_index(
        self, durable_runner_factory: RunnerFactory
    ) -> None:
        """BAT-1, BAT-3, BAT-4: with ``tool-call.parallelism`` 3 a batch of six runs three calls at once (not one, not
        six) on threads other than the runner's; later calls finish first, yet each outcome is finalized at its
        own index and the outcomes come back in input order."""
        run = self.crash_free(durable_runner_factory, agents.ParallelBatch, [("k", 0)])
        assert run.result.outputs == {"k": [[0, 10, 20, 30, 40, 50]]}, (
            f"BAT-4: expected outcomes in input order [0, 10, …, 50], got {run.result.outputs}"
        )
        assert LEDGER.max_active == 3, (
            f"BAT-3: expected exactly tool-call.parallelism = 3 calls at once, got at most {LEDGER.max_active}"
        )
        finals = [
            w
            for w in run.log
            if w[0] == "write" and w[1].method == "put_call_results" and "PENDING" not in w[1].statuses
        ]
        placed = {(w.index or 0) + i: d for _, w in finals for i, d in enumerate(w.digests)}
        want = {i: args_digest((i, 3), {}) for i in range(6)}
        assert placed == want, f"BAT-4: slot → digest of the finalizing writes: expected {want}, got {placed}"


# The aggregate suite, RunnerConformance, is in conformance.runner_calls: its checks build on these.
