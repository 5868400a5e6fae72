"""Runner checks of the durable-call details a runner gets wrong (issue 29): call identity, recorded
exceptions, reconcilers that raise, misuse of the context inside a durable function, laziness and thread of
durable calls, fault points per plan, retries, batch deadlines, the async pool's size, memory, bad values
and options, state keys, a failing store, two-phase calls, records tampered with while the runner was
down, and an action run several times for one input (a tool loop): its executions' call ids, fault points and
verdicts.

:class:`CallConformance` extends the checks of :mod:`conformance.runner_suite`; its checks run the agents of
:mod:`conformance.agents` through the runner under test with the same instruments (the observed store, the
ledger injector) and cite the clauses they prove. :class:`RunnerConformance`, the suite a runner author
subclasses, is both.
"""

from __future__ import annotations

import hashlib
import pickle
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import cloudpickle
import pytest

from reference_runtime import (
    Agent,
    CallId,
    CallResult,
    ConfigError,
    CrashAt,
    FaultPoint,
    InvalidValueError,
    MemoryAccessError,
    PayloadDecodeError,
    PayloadLimitError,
    Phase,
    RunResult,
    SimulatedCrash,
    StoreError,
    StoreFailedError,
    UnknownConfigKeyWarning,
    UntrustedPayloadError,
)
from reference_runtime.records import ActionState, StateRef
from reference_runtime.state_keys import action_uuid, event_uuid

from . import agents
from .agents import LEDGER
from .marks import capability, clause
from .runner_factory import RunnerFactory
from .runner_suite import LedgerInjector, ObservedStore, Write, _call, _RunnerChecks


class RecordingStore(ObservedStore):
    """The observed store, also noting each state's reference (``("ref", StateRef)``) and each record
    written (``("record", (StateRef, index, CallResult))``), so a check can read payloads and state keys."""

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, state)
        LEDGER.note("ref", ref)

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        super().put_call_results(ref, index, results)
        for i, r in enumerate(results):
            LEDGER.note("record", (ref, index + i, r))


class TamperingInjector(LedgerInjector):
    """Crashes as planned; at the first crash, before recovery, rewrites one record of the store the way an
    attacker with write access (or a bad disk) would: ``tamper(record) -> record`` on the record at
    ``index`` of the crashed key's first state."""

    def __init__(
        self, plan: Sequence[CrashAt], store: RecordingStore, index: int, tamper: Callable[[CallResult], CallResult]
    ) -> None:
        super().__init__(list(plan))
        self.store, self.index, self.tamper = store, index, tamper
        self.tampered: CallResult | None = None

    def reach(self, point: FaultPoint) -> None:
        try:
            super().reach(point)
        except SimulatedCrash:
            if self.tampered is None:
                ref, record = recorded(self.index)
                self.tampered = self.tamper(record)
                self.store.inner.put_call_results(ref, self.index, [self.tampered])  # past the observer
            raise


def recorded(index: int) -> tuple[StateRef, CallResult]:
    """The last record the runner wrote at ``index``, with its state's reference."""
    for what, detail in reversed(LEDGER.log):
        if what == "record" and detail[1] == index:
            return detail[0], detail[2]
    raise AssertionError(f"the runner wrote no record at index {index}")


def unpickled(payload: bytes | None) -> object:
    """What a payload the runner wrote holds as a pickle, or a description of why it is none (PAY-1)."""
    if payload is None:
        return "no payload"
    try:
        return pickle.loads(payload)
    except Exception as exc:
        return f"not a pickle ({type(exc).__name__}: {exc}): {payload[:60]!r}"


def digest(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """IDN-2's args digest, computed here: sha256 over cloudpickle, else over ``str`` (IDN-3)."""
    try:
        data = cloudpickle.dumps((args, kwargs))
    except Exception:
        data = str((args, kwargs)).encode()
    return hashlib.sha256(data).hexdigest()[:16]


class _Pwn:
    """Pickles as a call of :func:`pwned`: what a restricted loader must never make."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (pwned, ("from a record",))


PWNED: list[str] = []


def pwned(why: str) -> str:
    """Called only if a runner loads a pickle it should refuse (PAY-3)."""
    PWNED.append(why)
    return why


class _Alloc:
    def __reduce__(self) -> tuple[Any, ...]:
        return (bytearray, (100 * 2**20,))


def _nested(depth: int) -> bytes:
    """A pickle of ``depth`` nested lists, built from opcodes (pickling one would recurse)."""
    return b"\x80\x04" + b"]" * depth + b"a" * (depth - 1) + b"."


def _class_state() -> bytes:
    """A pickle that sets an attribute on a class (BUILD on :class:`agents.QuotaError`)."""
    return b"\x80\x04" + b"cconformance.agents\nQuotaError\n" + b"}\x8c\x07tampered\x88sb."


#: Tampered payloads: name -> (build the new record from the old, the clauses, the error class expected).
TAMPERED: dict[str, tuple[Callable[[CallResult], CallResult], tuple[str, ...], type[BaseException]]] = {
    "garbage": (lambda r: r._replace(result_payload=b"\x00\xffnot a payload"), ("DE-10",), PayloadDecodeError),
    "code": (lambda r: r._replace(result_payload=pickle.dumps(_Pwn())), ("PAY-3",), UntrustedPayloadError),
    "base-exception": (
        lambda r: CallResult.failed(r.function_id, r.args_digest, pickle.dumps(SystemExit(3))),
        ("PAY-6",),
        UntrustedPayloadError,
    ),
    "deep": (lambda r: r._replace(result_payload=_nested(5000)), ("LIM-1", "LIM-3"), PayloadLimitError),
    "huge-int": (lambda r: r._replace(result_payload=pickle.dumps(10**5000)), ("LIM-5", "LIM-7"), PayloadLimitError),
    "memo": (lambda r: r._replace(result_payload=b"\x80\x04h\xff."), ("LIM-2",), PayloadDecodeError),
    "alloc": (lambda r: r._replace(result_payload=pickle.dumps(_Alloc())), ("LIM-4",), PayloadDecodeError),
    "class-state": (lambda r: r._replace(result_payload=_class_state()), ("LIM-6",), PayloadDecodeError),
}


def phases_by_call(trace: Sequence[FaultPoint]) -> dict[tuple[str, int, str, int], list[Phase]]:
    """The fault points of each durable call, in order: (key, seq, action, call index) -> phases."""
    out: dict[tuple[str, int, str, int], list[Phase]] = {}
    for p in trace:
        if p.call_index is not None and p.phase in (
            Phase.BEFORE_CALL,
            Phase.AFTER_PENDING,
            Phase.AFTER_EFFECT,
            Phase.AFTER_RECORD,
        ):
            out.setdefault((p.key or "", p.seq or 0, p.action or "", p.call_index), []).append(p.phase)
    return out


def attempts() -> list[tuple[str, int, float]]:
    """(idempotency key, attempt number, monotonic time) of every attempt the agents noted."""
    return [detail for what, detail in LEDGER.log if what == "attempt"]


def writes(log: Sequence[tuple[str, Any]]) -> list[Write]:
    return [w for what, w in log if what == "write"]


E = TypeVar("E", bound=BaseException)


def in_chain(exc: object, cls: type[E]) -> E | None:
    """``exc`` or the first exception of its cause/context chain that is a ``cls`` (a runner may wrap the
    error the spec names); None when ``exc`` is no exception."""
    seen = exc if isinstance(exc, BaseException) else None
    while seen is not None:
        if isinstance(seen, cls):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class CallConformance(_RunnerChecks):
    """Mixin of :class:`~conformance.RunnerConformance`: the durable-call checks."""

    # -- running with instruments of this module ---------------------------------------------------------
    def observe(
        self,
        factory: RunnerFactory,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        plan: Sequence[CrashAt] = (),
        *,
        config: dict[str, Any] | None = None,
        mismatch: Any = "lenient",
        injector: Callable[[RecordingStore], LedgerInjector] | None = None,
        store: Callable[[RecordingStore], RecordingStore] | None = None,
        inspect: Callable[[RecordingStore], None] | None = None,
    ) -> tuple[RunResult | BaseException, LedgerInjector, RecordingStore]:
        """One run through a :class:`RecordingStore`: its result, or the exception it raised (a crash
        excepted), with the injector and the store, closed after ``inspect`` looked at it."""
        agents.reset()
        recording = RecordingStore(factory.new_store())
        used = recording if store is None else store(recording)
        inj = LedgerInjector(list(plan)) if injector is None else injector(recording)
        try:
            outcome: RunResult | BaseException = factory.run(
                agent, inputs, store=used, injector=inj, mismatch=mismatch, config=config
            )
        except (Exception, SimulatedCrash) as exc:  # a crash the runner let out is its outcome too
            outcome = exc
        finally:
            LEDGER.flag.set()  # release any agent work still waiting for it
            try:
                if inspect is not None:
                    inspect(recording)
            finally:
                used.close()
        return outcome, inj, recording

    # -- call identity (IDN) ---------------------------------------------------------------------------------
    @clause("IDN-1")
    @clause("IDN-2")
    @clause("IDN-3")
    @clause("IDN-4")
    @clause("IDN-7")
    @clause("IDN-8")
    @capability("runner")
    def test_call_identity_is_computed_as_specified(self, durable_runner_factory: RunnerFactory) -> None:
        """IDN-1..4, IDN-7, IDN-8: function ids are ``module.qualname`` or the ``durable_id``; args digests are
        sha256 over cloudpickle of ``(args, kwargs)``, over ``str`` when they cannot be pickled; ``reconciler``,
        ``durable_id`` and ``retry`` never reach the function; a bad reconciler raises Flink Agents' TypeError."""
        run = self.crash_free(durable_runner_factory, agents.Identities, [("k", 1)])
        got = [(e.call_id.call_index, e.function_id, e.args_digest) for e in run.result.journal]
        want = [
            (0, "conformance.agents.step", digest((1,), {})),
            (1, "custom-id", digest((1,), {})),
            (2, "echo", digest((1,), {"b": 2})),
            (3, "conformance.agents.echo_keywords", digest((agents.Unpicklable(),), {})),
        ]
        assert got == want, f"IDN-1..4: journal (index, function id, args digest): expected {want}, got {got}"
        (seen,) = run.result.outputs["k"]
        assert seen[2] == [1, ["b"]], (
            f"IDN-8: the function saw (positional count, keywords) {seen[2]}, expected [1, ['b']]"
        )
        assert seen[4:] == [
            ["TypeError", "reconciler must be callable"],
            ["TypeError", "reconciler must be a callable that takes no arguments"],
        ], f"IDN-7: a reconciler that is not callable / takes arguments: got {seen[4:]}"

    @clause("IDN-10")
    @capability("runner")
    def test_equal_arguments_rebuilt_by_recovery_hit_their_record(self, durable_runner_factory: RunnerFactory) -> None:
        """IDN-10: a call whose arguments share one string object in the run that recorded it, and are two equal
        strings once recovery rebuilt them from the store, replays its record after a crash: its digest depends
        on the arguments' values, not on which of their objects are one."""
        want = {"k": ["answer 1 question 1"]}
        crash = CrashAt(Phase.AFTER_RECORD, "k", 0, "think", 0, execution=2)
        outcome, inj, _ = self.observe(durable_runner_factory, agents.Recalled, [("k", 1)], [crash])
        got = outcome.outputs if isinstance(outcome, RunResult) else outcome
        assert got == want and inj.fired, f"IDN-10: after a crash past the call's record: {got!r}, expected {want}"
        runs = LEDGER.effects[str(CallId("k", 0, "think", 0, 2))]
        assert runs == 1, (
            f"IDN-10: the call ran {runs} times: equal arguments rebuilt by recovery (two equal strings where the "
            "recorded run passed one string twice) missed their record"
        )

    # -- recorded exceptions and records -------------------------------------------------------------------
    @clause("DE-9")
    @clause("PAY-1")
    @capability("runner")
    def test_a_recorded_exception_replays_as_itself(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-9, PAY-1: a call that raised a user exception is recorded as FAILED with the exception pickled
        (cloudpickle, readable by Flink Agents); after a crash the replay raises the same class with the same
        arguments, without running the function again. A result is recorded the same way."""
        outcome, _, _ = self.observe(durable_runner_factory, agents.Failures, [("k", 3)])
        want = {"k": [["conformance.agents.QuotaError", ["over quota by 3", 3]]]}
        assert isinstance(outcome, RunResult) and outcome.outputs == want, (
            f"DE-9: crash-free: expected {want}, got {outcome}"
        )
        _, record = recorded(0)
        loaded = unpickled(record.exception_payload)
        assert (type(loaded), getattr(loaded, "args", None)) == (agents.QuotaError, ("over quota by 3", 3)), (
            f"PAY-1: the FAILED record's exception payload is not a pickle of the exception: it reads as {loaded!r}"
        )
        outcome, _, _ = self.observe(
            durable_runner_factory, agents.Failures, [("k", 3)], [CrashAt(Phase.BEFORE_COMPLETE)]
        )
        got = outcome.outputs if isinstance(outcome, RunResult) else outcome
        assert got == want, f"DE-9: after a crash the recorded exception replays as {got!r}, expected {want}"
        assert LEDGER.effects[_call("k", 0, "work", 0)] == 1, "DE-9: the failed call ran again instead of replaying"
        outcome, _, _ = self.observe(durable_runner_factory, agents.Steps, [("k", 1)])
        _, result = recorded(1)
        assert unpickled(result.result_payload) == 20, (
            f"PAY-1: the result payload of step(2) is not a pickle of 20: {result}"
        )

    @pytest.mark.parametrize("tamper", sorted(TAMPERED))
    @clause("DE-10")
    @clause("PAY-3")
    @clause("PAY-6")
    @clause("LIM-1")
    @clause("LIM-2")
    @clause("LIM-3")
    @clause("LIM-4")
    @clause("LIM-5")
    @clause("LIM-6")
    @clause("LIM-7")
    @capability("runner")
    def test_a_tampered_record_is_refused_where_it_lies(
        self, durable_runner_factory: RunnerFactory, tamper: str
    ) -> None:
        """DE-10, PAY-3, PAY-6, LIM-1..7: a record rewritten while the runner was down (garbage, a pickle that
        calls a function, a recorded SystemExit, nesting past the depth limit, a 5 000-digit integer, a memo
        reference past the end, a 100 MiB allocation, a pickle that sets a class attribute) makes recovery
        raise a PayloadDecodeError naming key, seq, action, call index and the record's function id and
        digest; nothing in it runs, no class changes, the message stays short, and the record is still there."""
        make, clauses, expected = TAMPERED[tamper]
        PWNED.clear()
        kept: list[ActionState | None] = []
        outcome, injector, _ = self.observe(
            durable_runner_factory,
            agents.Steps,
            [("k", 1)],
            injector=lambda s: TamperingInjector([CrashAt(Phase.BEFORE_COMPLETE)], s, 0, make),
            inspect=lambda s: kept.append(s.inner.get(recorded(0)[0])),
        )
        cid = "/".join(clauses)
        assert isinstance(outcome, BaseException), f"{cid}: a tampered record ({tamper}) was accepted: {outcome}"
        err = in_chain(outcome, PayloadDecodeError)
        assert err is not None, (
            f"{cid}: expected a PayloadDecodeError for a tampered record ({tamper}), got "
            f"{type(outcome).__name__}: {outcome}"
        )
        assert isinstance(err, expected), (
            f"{cid}: expected {expected.__name__} ({tamper}), got {type(err).__name__}: {err}"
        )
        located = (err.key, err.seq, err.action, err.call_index, err.function_id, err.args_digest)
        want = ("k", 0, "work", 0, "conformance.agents.step", digest((1,), {}))
        assert located == want, f"DE-10: the error's location and digest: expected {want}, got {located}"
        polluted = "tampered" in vars(agents.QuotaError)
        if polluted:  # undone at once: later checks in this process use the class
            delattr(agents.QuotaError, "tampered")
        assert not PWNED, f"PAY-3: loading the record ran code from it: {PWNED}"
        assert not polluted, "LIM-6: loading the record set an attribute on a class (QuotaError.tampered)"
        assert len(str(err)) < 2000, (
            f"LIM-7: the error quotes the untrusted value unbounded ({len(str(err))} characters)"
        )
        assert isinstance(injector, TamperingInjector) and injector.tampered is not None
        records = [] if kept[0] is None else kept[0].call_results
        assert records[:1] == [injector.tampered], (
            f"DE-10: refusing the record changed the store: expected it still at index 0, got {records[:1]}"
        )

    # -- reconcilers ---------------------------------------------------------------------------------------
    @clause("DE-5")
    @capability("runner")
    def test_a_reconciler_that_raises_records_the_failure(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-5: a reconciler that raises finalizes the PENDING slot as FAILED before the action goes on, the
        action gets that exception, and a later crash replays it without asking the reconciler again."""
        run = self.execute(
            durable_runner_factory,
            agents.ReconcilerRaises,
            [("k", 3)],
            [CrashAt(Phase.AFTER_PENDING, call_index=0), CrashAt(Phase.BEFORE_COMPLETE)],
        )
        want = {"k": [["conformance.agents.QuotaError", ["reconciled as failed", 3]]]}
        assert run.result.outputs == want, f"DE-5: the action got {run.result.outputs}, expected {want}"
        failed = [w for w in run.writes_after_first_crash() if w.index == 0 and w.statuses == ("FAILED",)]
        assert failed, (
            f"DE-5: the reconciler's exception was not recorded as FAILED in slot 0: {run.writes_after_first_crash()}"
        )
        assert LEDGER.reconciled == [_call("k", 0, "work", 0)], (
            f"DE-5: expected one reconciliation, got {LEDGER.reconciled} (the FAILED outcome not replayed?)"
        )
        assert run.effects[_call("k", 0, "work", 0)] == 0, "DE-5: the function ran although a reconciler decided"

    # -- the context inside a durable function ----------------------------------------------------------------
    @pytest.mark.parametrize("misuse", ["memory", "send_event"])
    @clause("DE-11")
    @clause("MEM-11")
    @capability("runner")
    def test_context_misuse_inside_a_synchronous_durable_function_raises(
        self, durable_runner_factory: RunnerFactory, misuse: str
    ) -> None:
        """DE-11, MEM-11: memory access or send_event from a synchronous durable function (on the action's own
        thread) raises MemoryAccessError, which is not recorded as the call's outcome."""
        outcome, _, _ = self.observe(durable_runner_factory, agents.MisusesContext, [("k", misuse)])
        assert isinstance(outcome, BaseException) and in_chain(outcome, MemoryAccessError) is not None, (
            f"DE-11: {misuse} inside a durable function: expected MemoryAccessError, got "
            f"{type(outcome).__name__}: {outcome if isinstance(outcome, BaseException) else outcome.outputs}"
        )
        terminal = [w for w in writes(LEDGER.log) if w.index == 0 and {"FAILED", "SUCCEEDED"} & set(w.statuses)]
        assert not terminal, f"DE-11: the misuse was recorded as the call's outcome: {terminal}"

    # -- where and when durable work runs --------------------------------------------------------------------
    @clause("DE-12")
    @capability("runner_async")
    def test_an_async_call_starts_only_when_awaited(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-12: ``durable_execute_async`` returns an awaitable and nothing starts before it is awaited: two
        calls created, then awaited in reverse order, run in await order and take call indexes in it."""
        run = self.crash_free(durable_runner_factory, agents.Lazy, [("k", 0)])
        order = [d for what, d in run.log if what == "did"]
        assert order == ["created", "second", "first"], (
            f"DE-12: expected the work to run when awaited (created, second, first), got {order}"
        )
        indexes = {e.args_digest: e.call_id.call_index for e in run.result.journal}
        want = {digest(("second",), {}): 0, digest(("first",), {}): 1}
        assert indexes == want, f"DE-12: call indexes by await order: expected {want}, got {indexes}"

    @clause("DE-15")
    @capability("runner")
    def test_a_synchronous_call_runs_on_the_action_thread(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-15: ``durable_execute`` runs the function on the action's own thread and returns when it is done."""
        run = self.crash_free(durable_runner_factory, agents.SyncThreads, [("k", 1), ("j", 5)])
        assert run.result.outputs == {"k": [3], "j": [11]}, f"DE-15: outputs {run.result.outputs}"
        threads = [what for what, _ in LEDGER.threads]
        idents = {t for _, t in LEDGER.threads}
        assert threads == ["action", "durable", "durable", "action"] * 2 and len(idents) == 1, (
            f"DE-15: expected each action's durable work on the action's thread, got {LEDGER.threads}"
        )

    @clause("DE-16")
    @clause("FLT-1")
    @clause("FLT-2")
    @capability("runner")
    def test_fault_points_follow_each_call_plan(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-16, FLT-1, FLT-2: an executed call passes before-call, after-effect, after-record; a reconciled one
        adds after-pending after before-call; a replayed one passes before-call only; retries add none. A
        crash selected by key, seq, action, call index and n-th match fires there."""
        full = [Phase.BEFORE_CALL, Phase.AFTER_EFFECT, Phase.AFTER_RECORD]
        run = self.crash_free(durable_runner_factory, agents.Steps, [("k", 1)])
        got = phases_by_call(run.injector.trace)
        assert got == {("k", 0, "work", i): full for i in range(3)}, f"DE-16: executed calls passed {got}"
        run = self.crash_free(durable_runner_factory, agents.Reconciled, [("k", 1)])
        got = phases_by_call(run.injector.trace)
        want = {("k", 0, "work", 0): [Phase.BEFORE_CALL, Phase.AFTER_PENDING, *full[1:]]}
        assert got == want, f"DE-16: a call with a reconciler: expected {want}, got {got}"
        second = CrashAt(Phase.AFTER_RECORD, key="k", seq=1, action="work", call_index=1, nth=1)
        run = self.execute(durable_runner_factory, agents.Steps, [("k", 1), ("k", 2)], [second])
        fired = run.injector.fired
        assert [(p.key, p.seq, p.action, p.call_index, p.phase) for p in fired] == [
            ("k", 1, "work", 1, Phase.AFTER_RECORD)
        ], f"FLT-2: a crash selected by key, seq, action, call index: fired at {fired}"
        after = run.injector.trace[run.injector.trace.index(fired[0]) + 1 :]
        got = phases_by_call(after)
        want = {
            ("k", 1, "work", 0): [Phase.BEFORE_CALL],
            ("k", 1, "work", 1): [Phase.BEFORE_CALL],
            ("k", 1, "work", 2): full,
        }
        assert got == want, f"DE-16: on recovery, replayed calls pass before-call only: expected {want}, got {got}"
        run = self.crash_free(durable_runner_factory, agents.Retrying, [("k", 1)])
        got = phases_by_call(run.injector.trace)
        assert all(phases == full for phases in got.values()), f"DE-16: retried calls passed other points: {got}"

    @clause("DE-17")
    @capability("runner_async")
    def test_sync_and_async_calls_leave_the_same_trail(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-17: the same calls made with ``durable_execute`` and with ``durable_execute_async`` make the same
        records, journal entries, call indexes and fault points, crash-free and after a crash."""
        for plan in ([], [CrashAt(Phase.AFTER_EFFECT, call_index=1)]):
            trails = []
            for agent in (agents.Steps, agents.AsyncSteps):
                run = self.execute(durable_runner_factory, agent, [("k", 1)], plan)
                trails.append(
                    (
                        [
                            (e.call_id, e.function_id, e.args_digest, e.outcome, e.source, e.attempt)
                            for e in run.result.journal
                        ],
                        [(w.method, w.index, w.statuses, w.digests) for w in writes(run.log) if w.method != "put"],
                        [(p.phase, p.call_index) for p in run.injector.trace if p.call_index is not None],
                    )
                )
            assert trails[0] == trails[1], (
                f"DE-17: durable_execute and durable_execute_async differ (plan {plan}):\n"
                f"  sync  {trails[0]}\n  async {trails[1]}"
            )

    # -- retries ------------------------------------------------------------------------------------------------
    @clause("RETRY-1")
    @clause("RETRY-2")
    @clause("RETRY-4")
    @clause("RETRY-7")
    @clause("DE-18")
    @capability("runner")
    def test_retry_policies_on_the_synchronous_path(self, durable_runner_factory: RunnerFactory) -> None:
        """RETRY-1, RETRY-2, RETRY-4, RETRY-7, DE-18: a policy re-runs a call up to ``max_attempts`` times for
        exceptions in ``retry_on`` only, waiting its backoff (20 then 40 ms) between attempts; the attempt
        number is visible; only the final outcome is recorded and a replay neither retries nor waits; 1 100
        attempts end with the call's own exception; a ``retry`` that is not a policy is a TypeError."""
        run = self.execute(durable_runner_factory, agents.Retrying, [("k", 1)], [CrashAt(Phase.BEFORE_COMPLETE)])
        want = [
            10,
            ["builtins.ConnectionError", ["attempt 3 of 1"]],
            ["builtins.KeyError", ["no 1"]],
            ["builtins.ConnectionError", ["attempt 1100 of 1"]],
        ]
        (got,) = run.result.outputs["k"]
        assert got[:4] == want, f"RETRY-1/RETRY-7: outcomes: expected {want}, got {got[:4]}"
        assert got[4][0] == "builtins.TypeError" and "retry" in got[4][1][0], f"DE-18: retry=3 gave {got[4]}"
        assert run.effects[_call("k", 0, "work", 4)] == 0, "DE-18: a call with retry=3 ran"
        by_call: dict[str, list[int]] = {}
        times: dict[str, list[float]] = {}
        for key, attempt, at in attempts():
            by_call.setdefault(key, []).append(attempt)
            times.setdefault(key, []).append(at)
        want_attempts = {
            _call("k", 0, "work", 0): [1, 2, 3],
            _call("k", 0, "work", 1): [1, 2, 3],
            _call("k", 0, "work", 2): [1],
            _call("k", 0, "work", 3): list(range(1, 1101)),
        }
        assert by_call == want_attempts, (
            f"RETRY-1/RETRY-2/RETRY-4: attempt numbers per call (the replay after the crash must make none): "
            f"{ {k: v if len(v) < 10 else f'{len(v)} attempts' for k, v in by_call.items()} }"
        )
        gaps = [
            b - a for a, b in zip(times[_call("k", 0, "work", 0)], times[_call("k", 0, "work", 0)][1:], strict=False)
        ]
        assert gaps[0] >= 0.018 and gaps[1] >= 0.036, (
            f"RETRY-1: backoff of 20 and 40 ms between attempts: waited {gaps}"
        )
        terminal = [w for w in writes(run.log) if w.method == "put_call_results"]
        assert [(w.index, w.statuses) for w in terminal] == [
            (0, ("SUCCEEDED",)),
            (1, ("FAILED",)),
            (2, ("FAILED",)),
            (3, ("FAILED",)),
        ], f"RETRY-2: only each call's final outcome is recorded: {[(w.index, w.statuses) for w in terminal]}"

    @clause("RETRY-1")
    @clause("DE-18")
    @clause("BAT-7")
    @capability("runner_batch")
    def test_retry_policies_on_the_asynchronous_paths(self, durable_runner_factory: RunnerFactory) -> None:
        """DE-18, BAT-7, RETRY-1: the policy retries a function on the async pool, a coroutine function and a
        batch call alike, recording the final outcome only; a batch entry whose ``retry`` is no policy is a
        TypeError naming its position, raised before any slot is opened."""
        run = self.crash_free(durable_runner_factory, agents.AsyncRetrying, [("k", 1)])
        (got,) = run.result.outputs["k"]
        assert got[:3] == [10, 20, 30], (
            f"DE-18: async, coroutine and batch outcomes: expected [10, 20, 30], got {got[:3]}"
        )
        assert got[3][0] == "builtins.TypeError" and "position 1" in got[3][1][0], (
            f"BAT-7: a batch entry with retry=3: expected a TypeError naming position 1, got {got[3]}"
        )
        counted = Counter(key for key, _, _ in attempts())
        assert list(counted.values()) == [3, 3, 3], f"DE-18: attempts per call: {dict(counted)}"
        finals = [
            (w.index, w.statuses)
            for w in writes(run.log)
            if w.method == "put_call_results" and "PENDING" not in w.statuses
        ]
        assert finals == [(0, ("SUCCEEDED",)), (1, ("SUCCEEDED",)), (2, ("SUCCEEDED",))], (
            f"BAT-7: only final outcomes recorded: {finals}"
        )
        opened = [w for w in writes(run.log) if w.index is not None and w.index >= 3]
        assert not opened, f"BAT-7: slots were written for the refused batch: {opened}"

    @clause("RETRY-5")
    @clause("IDN-6")
    @capability("runner")
    def test_a_crash_between_attempts_restarts_them(self, durable_runner_factory: RunnerFactory) -> None:
        """RETRY-5: the process dying during attempt 2 leaves no record of the attempts; recovery runs the call
        from attempt 1 again, with the same idempotency key."""
        run = self.execute(durable_runner_factory, agents.CrashingRetry, [("k", 1)])
        assert run.result.outputs == {"k": [10]} and run.result.failovers == 1, (
            f"RETRY-5: expected outputs {{'k': [10]}} after one failover, got {run.result.outputs} "
            f"({run.result.failovers} failovers)"
        )
        got = [(key, attempt) for key, attempt, _ in attempts()]
        key = _call("k", 0, "work", 0)
        assert got == [(key, 1), (key, 2), (key, 1), (key, 2), (key, 3)], f"RETRY-5: attempts: {got}"

    # -- batches --------------------------------------------------------------------------------------------
    @clause("BAT-6")
    @clause("BAT-8")
    @capability("runner_batch")
    def test_a_batch_deadline_fails_late_calls_and_keeps_unstarted_ones_pending(
        self, durable_runner_factory: RunnerFactory
    ) -> None:
        """BAT-6, BAT-8: with ``tool-call.batch.timeout.ms`` 1000, the finished call keeps its outcome, the
        running one fails with a BatchTimeoutError recorded as FAILED, the unstarted one fails without running
        and its slot stays PENDING; a call whose retries end past the deadline fails too."""
        run = self.crash_free(durable_runner_factory, agents.TimedBatch, [("k", 0)])
        LEDGER.flag.set()
        want = [[0, "BatchTimeoutError", "BatchTimeoutError", "BatchTimeoutError"]]
        assert run.result.outputs == {"k": want}, f"BAT-6/BAT-8: outcomes: expected {want}, got {run.result.outputs}"
        assert run.effects[_call("k", 0, "work", 2)] == 0, "BAT-6: the call that never started ran"
        finals = {
            w.index: w.statuses for w in writes(run.log) if w.method == "put_call_results" and w.index is not None
        }
        assert finals.get(0) == ("SUCCEEDED",) and finals.get(1) == ("FAILED",), f"BAT-6: slots 0, 1 recorded {finals}"
        reserved = [w for w in writes(run.log) if w.method == "put_call_results" and "PENDING" in w.statuses]
        later = [
            w
            for w in writes(run.log)
            if w.method == "put_call_results" and w.index == 2 and "PENDING" not in w.statuses
        ]
        assert reserved and not later, f"BAT-6: the unstarted slot 2 must stay PENDING, got writes {later}"
        assert finals.get(3) == ("FAILED",), (
            f"BAT-8: the retried call ending past the deadline: recorded {finals.get(3)}"
        )

    @clause("RUN-17")
    @capability("runner_batch")
    def test_the_async_pool_caps_a_batch(self, durable_runner_factory: RunnerFactory) -> None:
        """RUN-17: ``num-async-threads`` 2 caps a batch of ``tool-call.parallelism`` 4 at two calls at once."""
        run = self.crash_free(durable_runner_factory, agents.PoolBound, [("k", 0)])
        assert run.result.outputs == {"k": [[0, 10, 20, 30]]}
        assert LEDGER.max_active == 2, f"RUN-17: expected 2 calls at once on a pool of 2, got {LEDGER.max_active}"

    # -- memory -----------------------------------------------------------------------------------------------
    @clause("MEM-1")
    @clause("MEM-2")
    @clause("MEM-3")
    @clause("MEM-5")
    @clause("MEM-6")
    @capability("runner")
    def test_the_memory_api(self, durable_runner_factory: RunnerFactory) -> None:
        """MEM-1, MEM-2, MEM-3, MEM-5, MEM-6: get, set (a MemoryRef), new_object, is_exist, get_field_names,
        get_fields (objects as "NestedObject"); values copied in and out; set creates parents and will not
        replace an object with a value; new_object keeps an object and replaces a value only with
        overwrite=True; a value memory cannot hold is a TypeError naming its path."""
        run = self.crash_free(durable_runner_factory, agents.MemoryTour, [("k", 0)])
        (seen,) = run.result.outputs["k"]
        expect = {
            "ref": ["a.b", 1, True, True, False],
            "copied_out": [1, {"k": b"v"}],
            "copied_in": [1],
            "names": ["a", "l", "obj"],
            "fields": {"a": "NestedObject", "l": [1], "obj": "NestedObject"},
            "overwritten": 2,
            "kept": ["x", "z"],
        }
        for name, value in expect.items():
            assert seen[name] == value, f"MEM-1..6: {name}: expected {value!r}, got {seen[name]!r}"
        for name, cid in (("object_as_value", "MEM-5"), ("new_object_on_value", "MEM-6"), ("bad_value", "MEM-2")):
            assert seen[name] is not None, f"{cid}: {name}: expected an error, got none"
        assert seen["bad_value"][0] == "TypeError" and "'bad'[0]['k']" in seen["bad_value"][1], (
            f"MEM-2: a set in memory: expected a TypeError naming 'bad'[0]['k'], got {seen['bad_value']}"
        )

    @clause("MEM-13")
    @capability("runner")
    def test_short_term_memory_reaches_later_actions(self, durable_runner_factory: RunnerFactory) -> None:
        """MEM-13: short-term memory an action writes is read by the next action of the run and by later runs,
        also when recovery skips the writing action and replays its updates."""
        want = {"k": [[{"value": 10, "seq": 0}, None], [{"value": 20, "seq": 1}, {"value": 10, "seq": 0}]]}
        for outcome in self.sweep(durable_runner_factory, agents.MemoryRelay, [("k", 1), ("k", 2)]):
            assert outcome.result.outputs == want, (
                f"MEM-13: after a crash at {outcome.point.describe()}: {outcome.result.outputs}"
            )

    # -- values, options and keys ---------------------------------------------------------------------------
    @pytest.mark.parametrize(
        "inputs",
        [[("k", {1, 2})], [("\ud800", 1)], [("k", 10**5000)]],
        ids=["set-input", "lone-surrogate-key", "huge-int"],
    )
    @clause("PAY-7")
    @capability("runner")
    def test_a_value_no_store_can_hold_is_refused_first(
        self, durable_runner_factory: RunnerFactory, inputs: Any
    ) -> None:
        """PAY-7: an input or key a store could not write back raises InvalidValueError before anything is
        stored or run."""
        outcome, _, _ = self.observe(durable_runner_factory, agents.Steps, [("ok", 1), *inputs])
        assert isinstance(outcome, BaseException) and in_chain(outcome, InvalidValueError) is not None, (
            f"PAY-7: expected InvalidValueError, got {type(outcome).__name__}"
        )
        assert not writes(LEDGER.log) and not LEDGER.effects, (
            f"PAY-7: the run stored or ran something first: {writes(LEDGER.log)[:3]}, {dict(LEDGER.effects)}"
        )

    @pytest.mark.parametrize(
        ("option", "value"),
        [("mismatch", "sloppy"), ("num-async-threads", 0), ("tool-call.parallelism", "many")],
    )
    @clause("PAY-8")
    @clause("CFG-3")
    @capability("runner")
    def test_a_bad_option_is_refused_before_anything_runs(
        self, durable_runner_factory: RunnerFactory, option: str, value: Any
    ) -> None:
        """PAY-8, CFG-3: a mismatch mode or config value of the wrong kind raises ConfigError naming it before
        anything runs or is stored."""
        config = {} if option == "mismatch" else {option: value}
        mismatch = value if option == "mismatch" else "lenient"
        outcome, _, _ = self.observe(durable_runner_factory, agents.Steps, [("k", 1)], config=config, mismatch=mismatch)
        err = in_chain(outcome, ConfigError)
        assert err is not None and option in str(err), (
            f"CFG-3: {option}={value!r}: expected a ConfigError naming it, got {outcome!r}"
        )
        assert not writes(LEDGER.log) and not LEDGER.effects, "CFG-3: the run stored or ran something first"

    @clause("CFG-4")
    @capability("runner")
    def test_a_misspelt_config_key_warns(self, durable_runner_factory: RunnerFactory) -> None:
        """CFG-4: a near miss of a runtime key warns with UnknownConfigKeyWarning naming the key meant; the
        agent's own keys are silent."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome, _, _ = self.observe(
                durable_runner_factory, agents.Steps, [("k", 1)], config={"tool-call.paralelism": 2, "my-agent.mode": 1}
            )
        assert isinstance(outcome, RunResult), f"CFG-4: the run failed: {outcome!r}"
        found = [str(w.message) for w in caught if issubclass(w.category, UnknownConfigKeyWarning)]
        assert len(found) == 1 and "tool-call.parallelism" in found[0], f"CFG-4: warnings: {found}"

    @clause("KEY-1")
    @clause("KEY-2")
    @capability("runner")
    def test_state_keys(self, durable_runner_factory: RunnerFactory) -> None:
        """KEY-1, KEY-2: a state is filed under ``{key}_{seq}_{event uuid}_{action uuid}`` as Java builds it;
        two executions of one action on events with identical attributes in one run each keep their own
        state and calls, with or without a crash."""
        self.observe(durable_runner_factory, agents.Steps, [("k_1", 1)])
        refs = [ref for what, ref in LEDGER.log if what == "ref"]
        assert refs, "KEY-1: the runner put no state"
        for ref in refs:
            want = f"{ref.key}_{ref.seq}_{event_uuid(ref.event)}_{action_uuid(ref.action)}"
            assert ref.state_key == want, f"KEY-1: state key {ref.state_key!r}, expected {want!r}"
        for outcome in self.sweep(durable_runner_factory, agents.Repeats, [("k", 1)]):
            assert outcome.result.outputs == {"k": [10, 20]}, (
                f"KEY-2: after a crash at {outcome.point.describe()}: {outcome.result.outputs}"
            )

    @clause("FLT-3")
    @capability("runner")
    def test_user_code_cannot_swallow_a_crash(self, durable_runner_factory: RunnerFactory) -> None:
        """FLT-3: a crash inside a durable call that the action wraps in ``except Exception`` still fails the
        process over; the action does not see it."""
        run = self.execute(durable_runner_factory, agents.Swallower, [("k", 2)], [CrashAt(Phase.AFTER_EFFECT)])
        assert run.result.failovers == 1 and run.result.outputs == {"k": [20]}, (
            f"FLT-3: expected one failover and outputs {{'k': [20]}}, got {run.result.failovers}, {run.result.outputs}"
        )

    @clause("FAIL-1")
    @capability("runner")
    def test_a_failing_store_stops_the_run_at_once(self, durable_runner_factory: RunnerFactory) -> None:
        """FAIL-1: the first store operation that fails stops the run with one StoreFailedError naming the
        operation and the cause; no other key is driven and no store call follows."""
        boom = StoreError("disk full")

        class Failing(RecordingStore):
            def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
                if ref.key == "a" and index == 1:
                    LEDGER.note("failed", "put_call_results")
                    raise boom
                super().put_call_results(ref, index, results)

            def get(self, ref: StateRef) -> ActionState | None:
                LEDGER.note("call", "get")
                return super().get(ref)

        outcome, _, _ = self.observe(
            durable_runner_factory,
            agents.Steps,
            [("a", 1), ("b", 2)],
            store=lambda s: Failing(s.inner),
        )
        err = in_chain(outcome, StoreFailedError)
        assert err is not None, f"FAIL-1: expected StoreFailedError, got {outcome!r}"
        assert (err.operation, err.cause) == ("put_call_results", boom), (
            f"FAIL-1: expected operation put_call_results and the store's own error as cause, got "
            f"{err.operation}, {err.cause!r}"
        )
        after = LEDGER.log[[what for what, _ in LEDGER.log].index("failed") + 1 :]
        assert not [e for e in after if e[0] in ("write", "call", "effect")], f"FAIL-1: the run went on: {after}"

    # -- two-phase commit ---------------------------------------------------------------------------------------
    @pytest.mark.parametrize(
        "crash",
        [
            None,
            CrashAt(Phase.AFTER_RECORD, call_index=0),
            CrashAt(Phase.AFTER_PENDING, call_index=1),
            CrashAt(Phase.AFTER_EFFECT, call_index=1),
            CrashAt(Phase.BEFORE_COMPLETE),
        ],
        ids=["crash-free", "after-prepare", "commit-pending", "after-commit-effect", "before-complete"],
    )
    @clause("TPC-1")
    @clause("TPC-2")
    @clause("TPC-4")
    @clause("TPC-5")
    @capability("runner")
    def test_two_phase_commit_under_a_crash(self, durable_runner_factory: RunnerFactory, crash: CrashAt | None) -> None:
        """TPC-1, TPC-2, TPC-4, TPC-5: prepare's result is recorded before commit starts; after a crash anywhere
        prepare never runs again and commit runs once (a commit that crashed after its effect is finished
        through is_committed/commit_result); the call is recognised by its type and idempotency key although
        the operation holds a lock and a counter."""
        run = self.execute(durable_runner_factory, agents.TwoPhase, [("k", [5, ""])], [crash] if crash else [])
        assert run.result.outputs == {"k": [["ok", "booked txn-5"]]}, f"TPC-4: outcome {run.result.outputs}"
        steps = [d for what, d in run.log if what == "tpc"]
        assert steps == [("prepare", 5), ("commit", "txn-5")], f"TPC-2/TPC-5: prepare and commit ran {steps}"
        prepared = next(
            i
            for i, (what, w) in enumerate(run.log)
            if what == "write" and w.index == 0 and w.statuses == ("SUCCEEDED",)
        )
        committing = next(i for i, (what, d) in enumerate(run.log) if what == "tpc" and d[0] == "commit")
        assert prepared < committing, "TPC-1: commit started before prepare's result was recorded"

    @clause("TPC-3")
    @clause("TPC-6")
    @clause("TPC-8")
    @capability("runner")
    def test_two_phase_commit_failures(self, durable_runner_factory: RunnerFactory) -> None:
        """TPC-3, TPC-6, TPC-8: a failed commit calls abort with prepare's result and raises the commit's
        failure, with abort's own failure attached when abort fails too; a commit result the runtime cannot
        record is raised as a DurableError saying the transaction was not aborted, and abort is not called."""
        run = self.crash_free(
            durable_runner_factory,
            agents.TwoPhase,
            [("a", [5, "commit"]), ("b", [6, "both"]), ("c", [7, "unencodable"])],
        )
        out = run.result.outputs
        assert out["a"][0][:3] == ["builtins.ConnectionError", ["commit of txn-5 failed"], "NoneType"], (
            f"TPC-3: {out['a']}"
        )
        assert out["b"][0][:3] == ["builtins.ConnectionError", ["commit of txn-6 failed"], "RuntimeError"], (
            f"TPC-8: {out['b']}"
        )
        assert any("abort" in n for n in out["b"][0][3]), f"TPC-8: no note about the failed abort: {out['b']}"
        assert "not aborted" in " ".join(out["c"][0][3]), (
            f"TPC-6: expected a note that the transaction was not aborted: {out['c']}"
        )
        steps = [d for what, d in run.log if what == "tpc"]
        assert ("abort", "txn-5") in steps and ("abort", "txn-6") in steps and ("abort", "txn-7") not in steps, (
            f"TPC-3/TPC-6: abort calls: {steps}"
        )

    @clause("TPC-7")
    @capability("runner")
    def test_two_phase_commit_options(self, durable_runner_factory: RunnerFactory) -> None:
        """TPC-7: a two-phase call honours ``durable_id`` (its calls are ``<id>#prepare`` and ``<id>#commit``)
        and ``retry``; call arguments and a reconciler are refused with TwoPhaseCommitError."""
        run = self.crash_free(durable_runner_factory, agents.TwoPhaseOptions, [("k", 5)])
        (seen,) = run.result.outputs["k"]
        assert seen[0] == "booked txn-5", f"TPC-7: {seen[0]}"
        assert [e.function_id for e in run.result.journal] == ["transfer#prepare", "transfer#commit"], (
            f"TPC-7: function ids {[e.function_id for e in run.result.journal]}"
        )
        assert seen[1][0] == seen[2][0] == "TwoPhaseCommitError", f"TPC-7: misuse gave {seen[1:]}"

    # -- every execution of an action (a tool loop) -----------------------------------------------------------
    @clause("IDN-9")
    @capability("runner")
    def test_each_execution_of_an_action_has_call_ids_of_its_own(self, durable_runner_factory: RunnerFactory) -> None:
        """IDN-9: an action run three times for one input (a tool loop) gives each execution's durable call an
        id of its own in ``current_call()``, spelled ``key/seq/action/index`` in the first execution and
        ``key/seq/action#n/index`` in the n-th; the ids are the same run after run, and after a crash in the
        second execution once its call's record is persisted and the recovery."""
        f = durable_runner_factory
        want = [str(CallId("k", 0, "think", 0, n)) for n in range(1, agents.ROUNDS + 1)]
        base = self.crash_free(f, agents.Rounds, [("k", 1)])
        ids = [c.idempotency_key for c in LEDGER.contexts]
        assert len(set(ids)) == len(ids) == agents.ROUNDS, (
            f"IDN-9: the {agents.ROUNDS} executions of action think for one input made calls with ids {ids}, "
            "expected an id of its own for each execution"
        )
        assert ids == want, f"IDN-9: call ids of the executions of think: expected {want}, got {ids}"
        assert base.result.outputs == {"k": [[11, 12, 13]]}, f"IDN-9: outputs {base.result.outputs}"
        again = self.crash_free(f, agents.Rounds, [("k", 1)])
        ids_again = [c.idempotency_key for c in LEDGER.contexts]
        assert ids_again == ids, f"IDN-9: the same input gave call ids {ids} in one run and {ids_again} in the next"
        assert again.result.outputs == base.result.outputs
        crash = CrashAt(Phase.AFTER_RECORD, key="k", seq=0, action="think", call_index=0, execution=2)
        run = self.execute(f, agents.Rounds, [("k", 1)], [crash])
        assert run.result.failovers == 1 and len(run.injector.fired) == 1, (
            f"IDN-9: the crash in the second execution ({crash.describe()}) did not fire once: fired "
            f"{run.injector.fired}"
        )
        after = [c.idempotency_key for c in LEDGER.contexts]
        assert after == want, (
            f"IDN-9: crashed in the second execution after its record and recovered, the calls saw ids {after}, "
            f"expected {want} (each execution once, under the id it has in a crash-free run)"
        )
        assert run.effects == base.effects, (
            f"IDN-9: executions per call id {dict(run.effects)}, expected {dict(base.effects)}"
        )
        assert run.result.outputs == base.result.outputs, f"IDN-9: outputs after the crash {run.result.outputs}"

    @clause("FLT-6")
    @capability("runner")
    def test_every_execution_of_an_action_is_its_own_fault_point(self, durable_runner_factory: RunnerFactory) -> None:
        """FLT-6: the engine's sweep through the runner reaches the fault points of every execution of an
        action run three times per input (the points of the second and third carry their ordinal), crashes
        at each and recovers with no violation: outputs and memory are the crash-free ones and every call's
        effect is booked once (twice at most for a crash between effect and record)."""
        outcomes = self.sweep(durable_runner_factory, agents.Rounds, [("k", 1), ("j", 2)])
        need = {Phase.BEFORE_CALL, Phase.AFTER_EFFECT, Phase.AFTER_RECORD, Phase.BEFORE_COMPLETE}
        for key in ("k", "j"):
            for n in range(1, agents.ROUNDS + 1):
                phases = {
                    o.point.phase
                    for o in outcomes
                    if o.fired and o.point.key == key and o.point.action == "think" and o.point.execution == n
                }
                assert phases >= need, (
                    f"FLT-6: the sweep crashed execution {n} of action think for key {key} at "
                    f"{sorted(str(p) for p in phases)}, expected at least {sorted(str(p) for p in need)}: the "
                    "runner reached no fault point of its own for that execution"
                )
        violations = [f"{o.point.describe()}: {v}" for o in outcomes for v in o.violations]
        assert not violations, "FLT-6: crashed in a repeated execution and recovered:\n" + "\n".join(violations)

    @clause("PLG-22")
    @capability("runner")
    def test_sweeps_of_a_tool_loop_give_the_same_verdict_every_time(
        self, durable_runner_factory: RunnerFactory
    ) -> None:
        """PLG-22: two sweeps through the runner of an agent with two keys in flight and three executions of an
        action per input crash the same fault points with the same violations and outputs: same input, same
        verdict."""
        inputs = [("k", 1), ("j", 2)]

        def verdicts() -> list[tuple[FaultPoint, tuple[str, ...], dict[str, list[Any]]]]:
            try:
                outcomes = self.sweep(durable_runner_factory, agents.Rounds, inputs)
            except AssertionError as exc:
                pytest.fail(f"PLG-22: a sweep of the same agent and inputs failed: {exc}")
            return [(o.point, tuple(o.violations), o.result.outputs) for o in outcomes]

        first, second = verdicts(), verdicts()
        differ = [(a, b) for a, b in zip(first, second, strict=False) if a != b]
        assert len(first) == len(second) and not differ, (
            f"PLG-22: two sweeps of one agent and inputs differ: {len(first)} and {len(second)} points; first "
            f"difference {differ[:1]}"
        )


class RunnerConformance(CallConformance):
    """The aggregate suite a runner author subclasses (as ``class TestMyRunner(RunnerConformance)``): the
    checks of :mod:`conformance.runner_suite` and the durable-call checks of this module."""


__all__ = ["CallConformance", "RecordingStore", "RunnerConformance", "TamperingInjector"]
