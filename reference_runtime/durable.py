"""The durable-call state machine of one action execution (facts §4; spec IDN-*, DE-*).

An :class:`ActionExecution` owns the call records of one (key, seq, action, event). Each durable call
takes the next call index; its record at that index is replayed when it matches, reconciled when it is
PENDING and a reconciler is given, and otherwise the function runs and its outcome is persisted.
The index advances only when the slot holds a terminal record.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Executor
from contextvars import copy_context
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from .clock import Clock, SystemClock
from .codecs import PayloadCodec, RecordBinding
from .errors import DurableError, Location, NondeterminismError, PayloadDecodeError, SignatureError
from .faults import FaultInjector, FaultPoint, Phase
from .identity import CallContext, CallId, args_digest, function_id
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
_SUCCEEDED, _FAILED = CallStatus.SUCCEEDED, CallStatus.FAILED


def current_call() -> CallContext:
    """The identity of the durable call being executed: its idempotency call id (key, seq, action,
    call index — the same on every recovery), function id, args digest and attempt number."""
    ctx = _current_call.get()
    if ctx is None:
        raise RuntimeError("current_call() is only available inside a function run by durable_execute")
    return ctx


class JournalEntry(NamedTuple):
    """One durable call as it happened in one execution attempt (the plugin's journal). A named tuple:
    one is built per durable call (benchmark P4)."""

    call_id: CallId
    function_id: str
    args_digest: str
    outcome: Literal["ok", "error"]
    source: Source
    attempt: int = 0
    """How many failovers preceded this execution attempt (stamped by the runner)."""


class ResultEncodeError(DurableError):
    """A durable call's result (or exception) cannot be turned into a payload."""


def validate_reconciler(reconciler: Any) -> None:
    """The reconciler checks of Flink Agents, with the same messages (facts §1)."""
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

    def __post_init__(self) -> None:
        # Looked up once per action rather than on every durable call: this is the hot path (P4).
        self._action = self.ref.action.name
        self._where = (self.ref.key, self.ref.seq, self._action)
        self._reach = self.injector.recorder() if self.injector is not None else None
        self._bound = bool(getattr(self.codec, "binds_records", False))

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def records(self) -> list[CallResult]:
        return self.state.call_results

    def location(self, index: int | None = None) -> Location:
        return Location(self.ref.key, self.ref.seq, self._action, index)

    def call_id(self, index: int) -> CallId:
        return CallId(self.ref.key, self.ref.seq, self._action, index)

    def fault(self, phase: Phase, index: int, fid: str) -> None:
        if self._reach is not None:
            self._reach(FaultPoint(phase, self.ref.key, self.ref.seq, self._action, index, fid))

    def write(self, index: int, results: list[CallResult]) -> None:
        records = self.state.call_results
        if index == len(records) and len(results) == 1:
            records.append(results[0])
        else:
            records[index : index + len(results)] = results
        self.store.put_call_results(self.ref, index, results)

    def truncate(self, index: int) -> None:
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
            what = "exception" if record.effective_status is _FAILED else "result"
            error = type(exc)(
                f"cannot decode the recorded {what} of "
                f"{record.function_id} (args digest {record.args_digest}): {exc.reason}",
                self.location(index),
            )
            error.function_id, error.args_digest = record.function_id, record.args_digest
            raise error from exc

    def decode_bound(self, record: CallResult, index: int) -> Outcome:
        """Signed payloads: each verifies only in the record it was written for (spec SIG-1), and a
        terminal record must carry one (an unsigned record could otherwise replay as ``None``)."""
        codec: Any = self.codec
        fid, digest = record.function_id, record.args_digest
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

    def context_for(self, index: int, fid: str, digest: str, attempt: int = 1) -> CallContext:
        return CallContext(CallId(self.ref.key, self.ref.seq, self._action, index), fid, digest, attempt)

    def run_sync(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        call: CallContext,
        retry: RetryPolicy | None = None,
    ) -> Outcome:
        outcome = self.attempt(func, args, kwargs, call)
        if retry is None:
            return outcome
        attempt = 1
        while outcome.error is not None and retry.should_retry(outcome.error, attempt):
            self.clock.sleep(retry.backoff.delay(attempt, str(call.call_id)))
            attempt += 1
            outcome = self.attempt(func, args, kwargs, call._replace(attempt=attempt))
        return outcome

    def attempt(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], call: CallContext
    ) -> Outcome:
        # Set by hand rather than through a context manager: this is the hot path.
        token = _current_call.set(call)
        try:
            return Outcome(func(*args, **kwargs), None)
        except DurableError:
            # A misuse of the runtime (e.g. memory access) is a bug to surface, not an outcome to record.
            raise
        except Exception as exc:
            return Outcome(None, exc)
        finally:
            _current_call.reset(token)

    # -- planning --------------------------------------------------------------------------------
    def plan(self, fid: str, digest: str, has_reconciler: bool) -> tuple[str, Outcome | None]:
        """Decide what slot ``self.index`` means for this call: ``replay`` (with the outcome),
        ``reconcile``, or ``execute`` (after any mismatch truncation and PENDING reservation)."""
        i = self.index
        records = self.state.call_results
        if i < len(records):
            record = records[i]
            if record.function_id == fid and record.args_digest == digest:
                if record.is_terminal:
                    return "replay", self.decode(record, i)
                return ("reconcile" if has_reconciler else "execute"), None
            self.mismatch(i, record, fid, digest)
        return "execute", None

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

    # -- the synchronous path ------------------------------------------------------------------------
    def start(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        reconciler: Callable[[], Any] | None,
        durable_id: str | None,
    ) -> tuple[CallContext, str, Outcome | None]:
        """Identify the call at ``self.index``, pass its before-call fault point and plan it."""
        if reconciler is not None:
            validate_reconciler(reconciler)
        fid = durable_id if durable_id is not None else function_id(func)
        digest = args_digest(args, kwargs)
        i = self.index
        where = self._where
        if self._reach is not None:
            self._reach(_new(FaultPoint, (_BEFORE_CALL, *where, i, fid)))
        if i < len(self.state.call_results):
            what, outcome = self.plan(fid, digest, reconciler is not None)
        else:
            what, outcome = "execute", None
        call = _new(CallContext, (_new(CallId, (*where, i)), fid, digest, 1))
        if what == "execute" and reconciler is not None and i >= len(self.state.call_results):
            # PENDING is durable before the work can start, so a crash mid-call is seen as in flight.
            self.write(i, [CallResult.pending(fid, digest)])
            self.fault(Phase.AFTER_PENDING, i, fid)
        return call, what, outcome

    def execute(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        reconciler: Callable[[], Any] | None = None,
        durable_id: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> Any:
        call, what, outcome = self.start(func, args, kwargs, reconciler, durable_id)
        if what == "replay":
            assert outcome is not None
            return self.finish(call, outcome, "replayed", persist=False)
        if what == "reconcile":
            assert reconciler is not None
            return self.finish(call, self.attempt(reconciler, (), {}, call), "reconciled")
        if retry is None:
            outcome = self.attempt(func, args, kwargs, call)
        else:
            outcome = self.run_sync(func, args, kwargs, call, retry)
        return self.finish(call, outcome, "executed")

    def finish(self, call: CallContext, outcome: Outcome, source: Source, *, persist: bool = True) -> Any:
        cid, fid, digest, _ = call
        i = cid[3]
        # Journaled before the fault points: the call ran even if the process dies before its record lands.
        self.journal.append(
            _new(JournalEntry, (cid, fid, digest, "ok" if outcome.error is None else "error", source, self.failovers))
        )
        if persist:
            reach = self._reach
            if reach is not None:
                reach(_new(FaultPoint, (_AFTER_EFFECT, *cid, fid)))
            self.write(i, [self.encode(fid, digest, outcome, i)])
            if reach is not None:
                reach(_new(FaultPoint, (_AFTER_RECORD, *cid, fid)))
        self.index = i + 1
        if outcome.error is not None:
            raise outcome.error
        return outcome.value

    # -- the asynchronous path ---------------------------------------------------------------------
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
        call, what, outcome = self.start(func, args, kwargs, reconciler, durable_id)
        if what == "replay":
            assert outcome is not None
            return self.finish(call, outcome, "replayed", persist=False)
        if what == "reconcile":
            assert reconciler is not None
            return self.finish(call, await self.offload(reconciler, (), {}, call, reconcile=True), "reconciled")
        return self.finish(call, await self.offload(func, args, kwargs, call, retry=retry), "executed")

    async def offload(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        call: CallContext,
        *,
        retry: RetryPolicy | None = None,
        reconcile: bool = False,
    ) -> Outcome:
        """Run ``func`` off the runner's thread (coroutine functions run as their own task)."""
        if inspect.iscoroutinefunction(func):
            token = _current_call.set(call)
            try:
                return Outcome.success(await func(*args, **kwargs))
            except DurableError:
                raise
            except Exception as exc:
                return Outcome.failure(exc)
            finally:
                _current_call.reset(token)
        loop = asyncio.get_running_loop()
        ctx = copy_context()
        if reconcile:
            return await loop.run_in_executor(self.pool, ctx.run, self.attempt, func, args, kwargs, call)
        return await loop.run_in_executor(self.pool, ctx.run, self.run_sync, func, args, kwargs, call, retry)


class DurableAwaitable(Awaitable[Any]):
    """What ``durable_execute_async`` returns: nothing happens, not even the record lookup, until it is
    awaited (facts §1), so call indexes follow await order."""

    def __init__(self, start: Callable[[], Awaitable[Any]]) -> None:
        self._start = start

    def __await__(self) -> Generator[Any, None, Any]:
        return self._start().__await__()
