"""The durable-call state machine of one action execution (spec IDN-*, DE-*, BAT-*).

An :class:`ActionExecution` owns the call records of one (key, seq, action, event) and the lifecycle of
each call slot (DE-16): :meth:`~ActionExecution.open_slot` plans a slot against its record (replay,
reconcile, re-run or execute), :meth:`~ActionExecution.reserve` persists PENDING for new slots,
:meth:`~ActionExecution.run` / :meth:`~ActionExecution.run_async` run the work with its retries, and
:meth:`~ActionExecution.finalize` records the outcome at the slot's own index. A single durable call is
one slot at the call index, sync or async alike (DE-17); a batch (``batch.py``) drives N slots through the
same steps. The index advances only when the slot holds a terminal record.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from concurrent.futures import Executor
from contextvars import copy_context
from dataclasses import dataclass, field
from types import FunctionType
from typing import Any, Literal, NamedTuple

from . import observe
from .clock import Clock, SystemClock
from .codecs import _SCALARS, CloudpickleCodec, PayloadCodec, RecordBinding
from .errors import DurableError, Location, NondeterminismError, PayloadDecodeError, SignatureError
from .faults import FaultInjector, FaultPoint, Phase, SimulatedCrash
from .identity import CallContext, CallId, _args_digest, args_digest, flink_args_digest, function_id
from .limits import decode_limits
from .memory import _in_durable_call as _current_call
from .records import ActionState, CallResult, CallStatus, StateRef
from .retry import RetryPolicy
from .stores.base import ActionStateStore

log = logging.getLogger("reference_runtime.durable")

MismatchMode = Literal["lenient", "strict"]
Source = Literal["executed", "replayed", "reconciled"]

# Builds a named tuple without going through its Python-level __new__: a durable call builds seven
# (benchmark P4). Only with a tuple of exactly the fields, in order.
_new = tuple.__new__

# Enum members looked up once: attribute access on an enum class costs about as much as building a
# record on CPython 3.11, and a durable call needs four of them (benchmark P4).
_BEFORE_CALL, _AFTER_EFFECT, _AFTER_RECORD = Phase.BEFORE_CALL, Phase.AFTER_EFFECT, Phase.AFTER_RECORD
_SUCCEEDED, _FAILED, _PENDING = CallStatus.SUCCEEDED, CallStatus.FAILED, CallStatus.PENDING

Plan = Literal["replay", "reconcile", "rerun", "execute"]
_REPLAY: Plan = "replay"  # a matching terminal record: its outcome is returned, nothing runs (DE-2)
_RECONCILE: Plan = "reconcile"  # a matching PENDING record and a reconciler: the reconciler runs (DE-5)
_RERUN: Plan = "rerun"  # a matching PENDING record, no reconciler: the function runs again (DE-6)
_EXECUTE: Plan = "execute"  # an empty slot (possibly after a mismatch truncated it): the function runs
_SOURCES: dict[str, Source] = {
    _REPLAY: "replayed",
    _RECONCILE: "reconciled",
    _RERUN: "executed",
    _EXECUTE: "executed",
}

#: A planned call slot, as :meth:`ActionExecution.open_slot` returns it:
#: ``(call, plan, recorded, work, args, kwargs, retry)``: the call's identity at its index (attempt 1), its
#: plan, the recorded outcome of a ``replay`` slot, the work to run (the function, or the reconciler of a
#: ``reconcile`` slot; ``None`` when the slot replays) with its arguments, and the function's retry policy.
#: A plain tuple, not a NamedTuple: building a tuple subclass costs 3 % of a durable call (benchmark P1).
Slot = tuple[
    CallContext,
    Plan,
    "Outcome | None",
    Callable[..., Any] | None,
    tuple[Any, ...],
    dict[str, Any],
    RetryPolicy | None,
]


def current_call() -> CallContext:
    """The identity of the durable call being executed: its idempotency call id (key, seq, action,
    call index — the same on every recovery), function id, args digest and attempt number."""
    ctx = _current_call.get()
    if ctx is None:
        raise RuntimeError("current_call() is only available inside a function run by durable_execute")
    # A new call's fused path sets a plain tuple of the same fields (ActionExecution.new_call, P1a).
    return ctx if type(ctx) is CallContext else _new(CallContext, ctx)


#: Set by the crash-exploration engine only (a sweep, never a runner's user), read once per action execution:
#: ``captured`` collects the args digest and outcome of every call that ran (not replayed) by call id, the
#: first one winning;
#: ``replayed`` gives the outcome a call returns instead of running, for the crash-free run that replays the
#: values a crash run recorded and is the reference REC-6 is judged against (PLG-25).
captured: dict[CallId, tuple[str, Outcome]] | None = None
replayed: dict[CallId, Outcome] | None = None
#: ``templates`` gives, for an action execution's (key, seq, action, execution, failovers), the journal entry a
#: replay of each call index makes, or None: a sweep replays the same recorded calls in every recovery, and
#: sharing one entry per call instead of a new one per replay keeps what a long sweep holds linear (P9b). An
#: entry is used only where it is the one the replay would make (same function id and digest, status ok).
templates: Callable[[tuple[str, int, str, int, int]], Sequence[JournalEntry | None] | None] | None = None
#: ``plans`` gives, for the same (key, seq, action, execution, failovers) and the decode limits in force, the
#: :class:`ReplayPlan` a sweep's recoveries of that action execution share: they replay the same records again
#: and again (a sweep of a 5 000-call agent replays 12.5 million calls, benchmark P9b).
plans: Callable[[tuple[str, int, str, int, int], Any], ReplayPlan | None] | None = None
#: Set by a sweep around its crash-free runs only (``exploration.snapshot_start.record``), read on every async
#: call: counts the calls whose work is in flight at once (:class:`InFlight`); None counts nothing.
in_flight: InFlight | None = None


#: One planned replay: ``(func, args, record, value, entry, types)``: the function object and positional
#: arguments (ints, strings, bytes and None only; no keyword, no option) of a call that replayed ``record``,
#: the scalar it decoded to, the journal entry it made, and what its arguments' types are checked against:
#: None for no argument, the type of a single one, :data:`MANY` for more.
PlanEntry = tuple[Callable[..., Any], tuple[Any, ...], "CallResult", Any, "JournalEntry", Any]
MANY = object()


def plain_arguments(args: tuple[Any, ...]) -> bool:
    """Whether every argument is exactly an int, a str, bytes or None: equal arguments of those types digest
    alike, and an equal argument of another type (a bool, a float, an enum) may not."""
    for a in args:
        t = type(a)
        if t is not int and t is not str and t is not bytes and a is not None:
            return False
    return True


class _Unplanned:
    """Where a plan has no record: equal to every record (its entry is None, so nothing replays from it)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]


_UNPLANNED = _Unplanned()


class ReplayPlan:
    """How the replays of one action execution went in a sweep's earlier recoveries, by call index, filled by
    the fused replay path of :meth:`ActionExecution.execute` after every check of it passed. A later recovery
    whose records are the planned ones (:meth:`take`) replays a call there without those checks when it makes
    the same call (``RunnerContext.durable_execute``): the same function object and arguments of the same
    types and values have the same function id and args digest (IDN-1, IDN-2), so against the same record
    they replay to the same value and entry."""

    __slots__ = ("entries", "planned", "records")

    def __init__(self, size: int) -> None:
        self.entries: list[PlanEntry | None] = [None] * size
        self.records: list[Any] = [_UNPLANNED] * size
        self.planned = 0

    def add(
        self,
        index: int,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        record: CallResult,
        value: Any,
        entry: JournalEntry,
    ) -> None:
        """Plan the replay at ``index`` if a later one can be matched by identity and value alone: a plain
        function (not a two-phase commit, nothing set on it), no keyword, plain positional arguments and an
        immutable scalar value, which every replay may share. The first plan of an index stays."""
        entries = self.entries
        if index >= len(entries) or entries[index] is not None:
            return
        if kwargs or type(func) is not FunctionType or func.__dict__ or type(value) not in _SCALARS:
            return
        if not plain_arguments(args):
            return
        types = None if not args else type(args[0]) if len(args) == 1 else MANY
        entries[index] = (func, args, record, value, entry, types)
        self.records[index] = record
        self.planned += 1

    def take(self, records: list[CallResult]) -> list[PlanEntry | None]:
        """The entries an action execution holding ``records`` may replay from, as planned now (later plans
        are for later executions): one per record when every planned record among them is equal to its
        record (the same object, on the memory store), else none. One comparison of two lists per action
        execution instead of one per replayed call."""
        if not self.planned:  # an agent whose results are not scalars plans nothing: no comparison at all
            return []
        n = min(len(self.entries), len(records))
        return self.entries[:n] if n and records[:n] == self.records[:n] else []


class JournalEntry(NamedTuple):
    """One durable call as it happened in one execution attempt (the plugin's journal). A named tuple:
    one is built per durable call (benchmark P4)."""

    call_id: CallId
    function_id: str
    args_digest: str
    outcome: Literal["ok", "error", "in flight"]
    """``in flight``: the call's work had started when its attempt ended (a crash, here or in another
    key's task) and was never settled: it ran, or runs on, unrecorded (spec DE-19)."""
    source: Source
    attempt: int = 0
    """How many failovers preceded this execution attempt (stamped by the runner)."""


class ResultEncodeError(DurableError):
    """A durable call's result (or exception) cannot be turned into a payload."""


def validate_reconciler(reconciler: Any) -> None:
    """The reconciler checks of Flink Agents, with the same messages (IDN-7)."""
    if reconciler is None:
        return
    if not callable(reconciler):
        raise TypeError("reconciler must be callable")
    try:
        sig = inspect.signature(reconciler)
    except (TypeError, ValueError):
        return
    try:
        sig.bind()
    except TypeError:
        raise TypeError("reconciler must be a callable that takes no arguments") from None


@dataclass
class Outcome:
    """The result of one call in a batch: ``value`` on success, ``error`` on failure (PR #926)."""

    value: Any = None
    error: BaseException | None = None

    @classmethod
    def success(cls, value: Any) -> Outcome:
        return cls(value, None)

    @classmethod
    def failure(cls, error: BaseException) -> Outcome:
        return cls(None, error)

    def is_success(self) -> bool:
        return self.error is None

    def is_failure(self) -> bool:
        return self.error is not None

    def unwrap(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


@dataclass
class ActionExecution:
    """Durable calls of one action execution: replay, reconcile, or run and record."""

    ref: StateRef
    store: ActionStateStore
    codec: PayloadCodec
    state: ActionState
    mode: MismatchMode = "lenient"
    injector: FaultInjector | None = None
    pool: Executor | None = None
    index: int = 0
    journal: list[JournalEntry] = field(default_factory=list)
    clock: Clock = field(default_factory=SystemClock)
    failovers: int = 0
    """Failovers before this execution, stamped on its journal entries as their ``attempt``."""
    reconcilers: bool = True
    """The test switch ``durable-execution.reconcilers`` (spec DE-14): off, every call runs as if it had no
    reconciler. Applied here, where every durable call opens its slot, so no entry point can miss it."""
    execution: int = 1
    """The ordinal (from 1) of this execution among the executions of its action for the same input, in
    run order: part of every call id and fault point of the execution (IDN-9, FLT-6)."""

    def __post_init__(self) -> None:
        # Looked up once per action rather than on every durable call: this is the hot path (P4).
        self._action = self.ref.action.name
        self._where = (self.ref.key, self.ref.seq, self._action)
        self._reach = self.injector.recorder() if self.injector is not None else None
        self._bound = bool(getattr(self.codec, "binds_records", False))
        self._captured, self._replayed = captured, replayed
        here = (*self._where, self.execution, self.failovers)
        self._template = templates(here) if templates is not None else None
        self._fids: dict[Any, str] = {}  # function ids by function, for this execution (``_function_id``)
        # New calls take the fused path of ``execute`` when no injector watches their fault points and no
        # recorded values stand in for their outcomes (PLG-25), which only open_slot does.
        self._direct = self._reach is None and not self._bound and replayed is None
        # Replays take the fused path of ``execute`` unless their before-call points are watched: an injector
        # may say it ignores them (``unwatched_replays``, the convergence watch of a sweep, spec COST-7).
        self._quiet = not self._bound and (
            self._reach is None or bool(getattr(self.injector, "unwatched_replays", False))
        )
        #: The index in ``journal`` of the first entry this execution did not replay (a call it executed or
        #: reconciled), None while there is none: a sweep's check reads from there (spec COST-7, P9b).
        self.first_ran: int | None = None
        self._plan: ReplayPlan | None = None
        #: Call indexes below this may replay from ``self._planned`` (see ``RunnerContext.durable_execute``);
        #: lowered by any write to a record below it.
        self._verified = 0
        self._planned: list[PlanEntry | None] = []
        #: The slots whose work went off the action's code (an async call on the pool, a coroutine function)
        #: or died inside it (a crash in a backoff), not settled yet, by call id: :meth:`abandon` journals
        #: them when the attempt ends (spec DE-19).
        self._running: dict[CallId, Slot] = {}
        # A plan only where replays take the fused path and decode as a plain codec does (no signature, no
        # subclass reading payloads its own way), under the limits its values were decoded with (COST-8).
        codec = self.codec
        if plans is not None and self._quiet and type(codec) is CloudpickleCodec and codec.hmac_key is None:
            self._plan = plans(here, codec.limits or decode_limits())
            if self._plan is not None:
                self._planned = self._plan.take(self.state.call_results)
                self._verified = len(self._planned)

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def records(self) -> list[CallResult]:
        return self.state.call_results

    def location(self, index: int | None = None) -> Location:
        return Location(self.ref.key, self.ref.seq, self._action, index)

    def call_id(self, index: int) -> CallId:
        return CallId(self.ref.key, self.ref.seq, self._action, index, self.execution)

    def fault(self, phase: Phase, index: int, fid: str) -> None:
        if self._reach is not None:
            self._reach(FaultPoint(phase, self.ref.key, self.ref.seq, self._action, index, fid, self.execution))

    def write(self, index: int, results: list[CallResult]) -> None:
        if index < self._verified:
            self._verified = index
        records = self.state.call_results
        if index == len(records) and len(results) == 1:
            records.append(results[0])
        else:
            records[index : index + len(results)] = results
        self.store.put_call_results(self.ref, index, results)

    def truncate(self, index: int) -> None:
        if index < self._verified:
            self._verified = index
        del self.records[index:]
        self.store.truncate_call_results(self.ref, index)

    def binding(self, index: int, fid: str, digest: str, kind: str) -> RecordBinding:
        return RecordBinding(self.ref.key, self.ref.seq, self._action, index, fid, digest, kind)

    def decode(self, record: CallResult, index: int) -> Outcome:
        try:
            if self._bound:
                return self.decode_bound(record, index)
            if record.effective_status is _FAILED:
                if record.exception_payload is None:
                    # A failure without its exception is corrupt; replaying it as a success would hide that.
                    raise PayloadDecodeError("the record is FAILED but has no exception payload")
                return Outcome.failure(self.codec.decode_exception(record.exception_payload))
            if record.result_payload is None:
                return Outcome.success(None)
            return Outcome.success(self.codec.decode_result(record.result_payload))
        except PayloadDecodeError as exc:
            # Fail fast and delete nothing: the record may be readable with another codec or key. The
            # validation digest (function id + args digest) says which call the record claims to be.
            status = record.effective_status
            what = "exception" if status is _FAILED else "result" if status is _SUCCEEDED else "PENDING record"
            error = type(exc)(
                f"cannot decode the recorded {what} of "
                f"{record.function_id} (args digest {record.args_digest}): {exc.reason}",
                self.location(index),
            )
            error.function_id, error.args_digest = record.function_id, record.args_digest
            raise error from exc

    def decode_bound(self, record: CallResult, index: int) -> Outcome:
        """Signed payloads: each verifies only in the record it was written for (spec SIG-1), a terminal
        record must carry one (an unsigned record could otherwise replay as ``None``), and a PENDING record
        carries a signature of its status (SIG-5)."""
        codec: Any = self.codec
        fid, digest = record.function_id, record.args_digest
        if record.status is _PENDING:
            # A PENDING record is signed too (SIG-5): a terminal record rewritten as PENDING would run its
            # call again.
            if record.exception_payload is not None:
                raise SignatureError("a PENDING record holds an exception payload")
            codec.check_pending(record.result_payload, self.binding(index, fid, digest, "pending"))
            return Outcome.success(None)
        if record.effective_status.value == "FAILED":
            if record.exception_payload is None:
                raise SignatureError("a FAILED record has no signed exception payload")
            return Outcome.failure(
                codec.decode_exception(record.exception_payload, binding=self.binding(index, fid, digest, "exception"))
            )
        if record.result_payload is None or record.exception_payload is not None:
            raise SignatureError("a SUCCEEDED record must hold exactly one signed result payload")
        return Outcome.success(
            codec.decode_result(record.result_payload, binding=self.binding(index, fid, digest, "result"))
        )

    def encode(self, fid: str, digest: str, outcome: Outcome, index: int) -> CallResult:
        try:
            if self._bound:
                codec: Any = self.codec
                if outcome.error is not None:
                    return CallResult.failed(
                        fid,
                        digest,
                        codec.encode_exception(outcome.error, binding=self.binding(index, fid, digest, "exception")),
                    )
                return CallResult.succeeded(
                    fid, digest, codec.encode_result(outcome.value, binding=self.binding(index, fid, digest, "result"))
                )
            if outcome.error is not None:
                return CallResult.failed(fid, digest, self.codec.encode_exception(outcome.error))
            return _new(CallResult, (fid, digest, self.codec.encode_result(outcome.value), None, _SUCCEEDED))
        except Exception as exc:
            raise ResultEncodeError(
                f"the result of durable call {fid} at {self.location(index)} cannot be recorded "
                f"with the {self.codec.name} codec: {exc}"
            ) from exc

    # -- the slot lifecycle: open, reserve, run, finalize (spec DE-16) ------------------------------
    def open_slot(
        self,
        index: int,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        reconciler: Callable[[], Any] | None = None,
        durable_id: str | None = None,
        retry: RetryPolicy | None = None,
        reserve: bool = True,
    ) -> Slot:
        """Identify the call at ``index``, pass its before-call fault point and plan its slot against the
        records: ``replay`` a matching terminal record (decoded), ``reconcile`` a matching PENDING one
        with a reconciler, ``rerun`` it without one (DE-6), or ``execute`` an empty slot, after truncating
        a mismatch (DE-7) or raising it (DE-8). With ``reserve``, an empty slot whose call has a
        reconciler is reserved as PENDING at once (DE-3); a batch passes ``reserve=False`` and reserves
        all its new slots in one persist (BAT-2)."""
        given = reconciler
        if reconciler is not None:
            validate_reconciler(reconciler)
            if not self.reconcilers:
                reconciler = None
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a RetryPolicy(...) or None, got {type(retry).__name__}")
        fid = durable_id if durable_id is not None else function_id(func)
        if given is not None and observe.current is not None:
            observe.current.reconciler_given(self.ref, index, fid, given)  # crash coverage (COV-4)
        digest = args_digest(args, kwargs, index < len(self.state.call_results))  # memo for replays only
        where = self._where
        if self._reach is not None:
            self._reach(_new(FaultPoint, (_BEFORE_CALL, *where, index, fid, self.execution)))
        call = _new(CallContext, (_new(CallId, (*where, index, self.execution)), fid, digest, 1))
        records = self.state.call_results
        if index < len(records):
            record = records[index]
            # A record Flink Agents wrote carries its own digest, which equal arguments shared differently
            # may miss: it matches too (IDN-10), computed only when the runtime's digest does not.
            if record.function_id == fid and (
                record.args_digest == digest or record.args_digest == flink_args_digest(args, kwargs)
            ):
                if record.is_terminal:
                    return (call, _REPLAY, self.decode(record, index), None, (), {}, None)
                if self._bound:
                    self.decode(record, index)  # its status is signed too: refuse a forged PENDING (SIG-5)
                if reconciler is not None:
                    return (call, _RECONCILE, None, reconciler, (), {}, None)
                return (call, _RERUN, None, func, args, kwargs, retry)
            self.mismatch(index, record, fid, digest)
        slot: Slot = (call, _EXECUTE, None, func, args, kwargs, retry)
        if self._replayed is not None and call.call_id in self._replayed:
            slot = (call, _EXECUTE, None, _returning(self._replayed[call.call_id]), (), {}, None)
        if reserve and reconciler is not None:
            self.reserve((slot,))
        return slot

    def mismatch(self, i: int, record: CallResult, fid: str, digest: str) -> None:
        if self.mode == "strict":
            raise NondeterminismError(self.location(i), record.function_id, record.args_digest, fid, digest)
        log.warning(
            "Non-deterministic call detected at index %d (%s): recorded %s/%s, now %s/%s; "
            "discarding records from index %d and re-executing",
            i,
            self.location(i),
            record.function_id,
            record.args_digest,
            fid,
            digest,
            i,
        )
        self.truncate(i)

    def reserve(self, slots: Sequence[Slot]) -> None:
        """Persist PENDING for consecutive empty slots in one write, before any of their work starts, so a
        crash during the work finds them in flight (DE-3, BAT-2); then the after-pending fault point."""
        first = slots[0][0]
        index = first.call_id.call_index
        calls = [call for call, plan, *_ in slots if plan == _EXECUTE]
        if len(calls) != len(slots) or [c.call_id.call_index for c in calls] != list(range(index, index + len(calls))):
            raise ValueError("reserve() takes consecutive slots planned 'execute'")
        if self._bound:
            codec: Any = self.codec
            pending = [
                CallResult(
                    c.function_id,
                    c.args_digest,
                    codec.encode_pending(self.binding(index + n, c.function_id, c.args_digest, "pending")),
                    None,
                    _PENDING,
                )
                for n, c in enumerate(calls)
            ]
        else:
            pending = [CallResult.pending(c.function_id, c.args_digest) for c in calls]
        self.write(index, pending)
        self.fault(Phase.AFTER_PENDING, index, first.function_id)

    def run(self, slot: Slot) -> Outcome:
        """Run a slot's work on this thread: its function with every attempt its retry policy allows
        (RETRY-1), or its reconciler once. Only the outcome of the last attempt is returned."""
        call, _, _, func, args, kwargs, retry = slot
        assert func is not None, "a replayed slot has no work"
        try:
            while True:
                # Set by hand rather than through a context manager: this is the hot path.
                token = _current_call.set(call)
                try:
                    outcome = Outcome(func(*args, **kwargs), None)
                except DurableError:
                    # A misuse of the runtime (e.g. memory access) is a bug to surface, not an outcome to record.
                    raise
                except Exception as exc:
                    outcome = Outcome(None, exc)
                finally:
                    _current_call.reset(token)
                if retry is None or outcome.error is None:
                    return outcome
                again = self.next_attempt(retry, outcome.error, call)
                if again is None:
                    return outcome
                call, delay = again
                self.clock.sleep(delay)
        except SimulatedCrash:
            # The process died inside the work (in it, or in a backoff between its attempts): it started and
            # will never settle in this attempt, which journals it in flight when it ends (DE-19).
            self._running[slot[0].call_id] = slot
            raise

    def run_async(self, slot: Slot) -> Coroutine[Any, Any, Outcome]:
        """:meth:`run` off the runner's thread: on the async pool, or, for a coroutine function, awaited
        in the action's own task (backoff sleeps then go to the pool, so the event loop never blocks).

        Not a coroutine itself: it hands back the one that runs the work, so that a call nobody counts
        (:data:`in_flight` unset, all but a sweep's crash-free runs) pays no coroutine of its own for it."""
        watch = in_flight
        if watch is None:
            return self._run_async(slot)
        return self._counted(watch, slot)

    async def _counted(self, watch: InFlight, slot: Slot) -> Outcome:
        # Counted on the event loop's thread, where every slot's coroutine runs: no lock needed.
        if watch.now and watch.overlapped is None:
            watch.overlapped = slot[0].call_id
        watch.now += 1
        try:
            return await self._run_async(slot)
        finally:
            watch.now -= 1

    async def _run_async(self, slot: Slot) -> Outcome:
        func = slot[3]
        if not inspect.iscoroutinefunction(func):
            self._running[slot[0].call_id] = slot
            loop = asyncio.get_running_loop()
            # Shielded: when a crash cancels the action, its work runs on to its end even if no thread had
            # taken it yet (the run's end waits for it), so what the journal says ran did run, whatever the
            # threads' timing (DE-19, PLG-22).
            return await asyncio.shield(loop.run_in_executor(self.pool, copy_context().run, self.run, slot))
        call, _, _, _, args, kwargs, retry = slot
        assert func is not None, "a replayed slot has no work"
        self._running[call.call_id] = slot  # started: it runs in this task from here on
        while True:
            token = _current_call.set(call)
            try:
                outcome = Outcome(await func(*args, **kwargs), None)
            except DurableError:
                raise
            except Exception as exc:
                outcome = Outcome(None, exc)
            finally:
                _current_call.reset(token)
            if retry is None or outcome.error is None:
                return outcome
            again = self.next_attempt(retry, outcome.error, call)
            if again is None:
                return outcome
            call, delay = again
            await asyncio.get_running_loop().run_in_executor(self.pool, self.clock.sleep, delay)

    def abandon(self) -> None:
        """The attempt ended with this execution unfinished (a crash, here or in another key's task, which
        cancels it): journal every call whose work went off the action's code and is not settled as ``in
        flight``; it runs on to its end (on the pool, the run's end waits for it), so a run of it again after
        recovery is seen as the second run it is (DE-19, the verdict's ``repeated``)."""
        running = self._running
        if not running:
            return
        # A copy first: a pool thread's crash may still note its slot (an existing key) meanwhile.
        for slot in list(running.values()):
            (cid, fid, digest, _), plan = slot[0], slot[1]
            self.journal.append(_new(JournalEntry, (cid, fid, digest, "in flight", _SOURCES[plan], self.failovers)))
            if self.first_ran is None:
                self.first_ran = len(self.journal) - 1
        running.clear()

    def next_attempt(
        self, retry: RetryPolicy, error: BaseException, call: CallContext
    ) -> tuple[CallContext, float] | None:
        """After a failed attempt: the next attempt's call context and the backoff to sleep first, or
        ``None`` when the failure is final (RETRY-1, RETRY-4). Attempts are not recorded (RETRY-5)."""
        attempt = call.attempt
        if not retry.should_retry(error, attempt):
            return None
        return call._replace(attempt=attempt + 1), retry.backoff.delay(attempt, str(call.call_id))

    def finalize(self, slot: Slot, outcome: Outcome, close: bool = False) -> Any:
        """Settle a slot at its own index: journal it, then, unless it replayed, pass the after-effect
        fault point, persist its terminal record and pass the after-record fault point (DE-4, BAT-4).

        ``close`` (a single call): then advance the call index past the slot and return the outcome's
        value or raise its exception. A batch advances the index by its size once all slots are settled.
        One method rather than two: a second call per durable call costs 1 % of it (benchmark P1)."""
        call, plan = slot[0], slot[1]
        cid, fid, digest, _ = call
        if self._running:
            self._running.pop(cid, None)
        # Journaled before the fault points: the call ran even if the process dies before its record lands.
        self.journal.append(
            _new(
                JournalEntry,
                (cid, fid, digest, "ok" if outcome.error is None else "error", _SOURCES[plan], self.failovers),
            )
        )
        i = cid[3]
        if plan is not _REPLAY:
            if self.first_ran is None:
                self.first_ran = len(self.journal) - 1
            if self._captured is not None:
                self._captured.setdefault(cid, (digest, outcome))
            reach = self._reach
            if reach is not None:
                reach(_new(FaultPoint, (_AFTER_EFFECT, *self._where, i, fid, self.execution)))
            self.write(i, [self.encode(fid, digest, outcome, i)])
            if reach is not None:
                reach(_new(FaultPoint, (_AFTER_RECORD, *self._where, i, fid, self.execution)))
        if not close:
            return None
        self.index = i + 1
        if outcome.error is not None:
            raise outcome.error
        return outcome.value

    # -- single calls: one slot at the call index ----------------------------------------------------
    def execute(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        reconciler: Callable[[], Any] | None = None,
        durable_id: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> Any:
        """``durable_execute``: the work runs on this thread (DE-15). The options may come by position: the
        context passes them so, without keyword matching on every durable call (benchmark P1a)."""
        index = self.index
        records = self.state.call_results
        if durable_id is not None:
            fid = durable_id
        else:
            try:
                fid = self._fids[func]
            except (KeyError, TypeError):
                fid = self._function_id(func)
        # A recorded success replays here, the slot lifecycle's replay branch in one function: a recovery
        # replays every call before its crash, a sweep one recovery per store state (benchmark P9).
        if (
            index < len(records)
            and reconciler is None
            and self._quiet
            and (retry is None or isinstance(retry, RetryPolicy))
        ):
            recorded_fid, recorded_digest, payload, _, status = records[index]
            if status is _SUCCEEDED and payload is not None and recorded_fid == fid:
                digest = args_digest(args, kwargs)
                if recorded_digest == digest:
                    try:
                        value = self.codec.decode_result(payload)
                    except PayloadDecodeError:
                        pass  # open_slot raises it with the call's location
                    else:
                        template = self._template
                        entry = template[index] if template is not None and index < len(template) else None
                        if entry is None or entry[1] != fid or entry[2] != digest:
                            call_id = _new(CallId, (*self._where, index, self.execution))
                            entry = _new(JournalEntry, (call_id, fid, digest, "ok", "replayed", self.failovers))
                        elif self._plan is not None and durable_id is None and retry is None:
                            self._plan.add(index, func, args, kwargs, records[index], value, entry)
                        self.journal.append(entry)
                        self.index = index + 1
                        return value
        elif index == len(records) and reconciler is None and retry is None and self._direct:
            return self.new_call(func, args, kwargs, fid)
        slot = self.open_slot(self.index, func, args, kwargs, reconciler, durable_id, retry)
        recorded = slot[2]
        return self.finalize(slot, self.run(slot) if recorded is None else recorded, True)

    def new_call(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], fid: str | None) -> Any:
        """A call made for the first time with nothing watching its fault points and no recorded value
        standing in for it (``self._direct``), at the end of the records: open_slot, run and finalize in one
        function. The caller checked that; ``fid`` is the function id, None to look it up. The context calls
        this straight from ``durable_execute`` for a plain call (benchmark P1a: every durable call of a run
        that is not a recovery passes here)."""
        index = self.index
        if fid is None:
            try:
                fid = self._fids[func]
            except (KeyError, TypeError):
                fid = self._function_id(func)
        digest = _args_digest(args, kwargs, False)  # a new call: its arguments were never digested here
        # ``where + (...)`` rather than ``(*where, ...)``: a tuple concatenation builds no list (P1a).
        call_id = _new(CallId, self._where + (index, self.execution))  # noqa: RUF005
        error: Exception | None = None
        # The running call as a plain tuple of CallContext's fields: current_call() makes the named tuple
        # when a function asks for it, which few do (P1a).
        token = _current_call.set((call_id, fid, digest, 1))
        try:
            # ``**kwargs`` copies the dict even when it is empty, as it is in most calls (P1a).
            value = func(*args, **kwargs) if kwargs else func(*args)
        except DurableError:
            raise
        except Exception as exc:
            value, error = None, exc
        except SimulatedCrash:
            # As in ``run``: the work started and never settles in this attempt (DE-19).
            self._running[call_id] = (CallContext(call_id, fid, digest, 1), _EXECUTE, None, func, args, kwargs, None)
            raise
        finally:
            _current_call.reset(token)
        if self._captured is not None:  # a sweep holds REC-6 against recorded values (PLG-25)
            self._captured.setdefault(call_id, (digest, Outcome(value, error)))
        if self.first_ran is None:
            self.first_ran = len(self.journal)
        self.journal.append(
            _new(JournalEntry, (call_id, fid, digest, "ok" if error is None else "error", "executed", self.failovers))
        )
        if error is None:
            try:
                result = _new(CallResult, (fid, digest, self.codec.encode_result(value), None, _SUCCEEDED))
            except Exception:
                result = self.encode(fid, digest, Outcome(value, None), index)  # raises, as open_slot's path
        else:
            result = self.encode(fid, digest, Outcome(None, error), index)
        self.state.call_results.append(result)
        self.store.put_call_results(self.ref, index, [result])
        self.index = index + 1
        if error is not None:
            raise error
        return value

    def _function_id(self, func: Callable[..., Any]) -> str:
        """``function_id(func)``, looked up once per execution: an action calls the same few functions."""
        try:
            return self._fids[func]
        except KeyError:
            fid = self._fids[func] = function_id(func)
            return fid
        except TypeError:  # an unhashable callable
            return function_id(func)

    async def execute_async(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        reconciler: Callable[[], Any] | None = None,
        durable_id: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> Any:
        """``durable_execute_async``: the same slot lifecycle, the work off the runner's thread (DE-12, DE-17)."""
        slot = self.open_slot(self.index, func, args, kwargs, reconciler, durable_id, retry)
        recorded = slot[2]
        return self.finalize(slot, await self.run_async(slot) if recorded is None else recorded, True)


class InFlight:
    """Counts the durable calls whose work is in flight off the action's code at once (:meth:`ActionExecution.
    run_async`) while a sweep records its crash-free run, and keeps the first call that started while another
    was in flight: which of the two finishes first, and so what the store holds at a crash, then depends on
    thread timing, and no snapshot stands for the crash (spec PLG-17)."""

    __slots__ = ("now", "overlapped")

    def __init__(self) -> None:
        self.now = 0
        self.overlapped: CallId | None = None


class DurableAwaitable(Awaitable[Any]):
    """What ``durable_execute_async`` returns: nothing happens, not even the record lookup, until it is
    awaited (DE-12), so call indexes follow await order."""

    def __init__(self, start: Callable[[], Awaitable[Any]]) -> None:
        self._start = start

    def __await__(self) -> Generator[Any, None, Any]:
        return self._start().__await__()


def _returning(outcome: Outcome) -> Callable[[], Any]:
    """A function that returns ``outcome``'s value or raises its exception, as the call did (PLG-25)."""

    def replay() -> Any:
        return outcome.unwrap()

    return replay
