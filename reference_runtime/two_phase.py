"""Two-phase-commit durable calls (spec TPC-*).

A two-phase call takes up to three call indexes: ``prepare`` (recorded like any durable call),
``commit`` (PENDING persisted first, then finalized) and, only if commit fails, ``abort``. Because
prepare's result is recorded before commit starts, recovery never prepares twice, and a crash between
prepare and commit leads to exactly one commit. A crash *during* commit (after its effect, before its
record) is the one window where commit runs again: it is reconciled through ``is_committed`` and
``commit_result`` when the operation provides them, otherwise commit is called again with the same
prepare result, which is why participants must make committing a prepared id idempotent (as XA and Kafka
transactions do).

The identity of the three calls (TPC-5) is the operation's type (or ``durable_id``) and its optional
``idempotency_key``, never the operation object's state: an object holding a connection, a counter or a
class defined in ``__main__`` must be recognised as the same call after a crash.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator
from typing import Any, Protocol, runtime_checkable

from .durable import ActionExecution
from .errors import DurableError
from .identity import function_id
from .retry import RetryPolicy


@runtime_checkable
class TwoPhaseCommit(Protocol):
    """An operation against a transactional participant.

    Optional members: ``idempotency_key`` (an attribute, property or no-argument method returning plain
    data: str, int, bytes or a tuple of them) distinguishes two operations of one type at the same place
    (TPC-5); ``is_committed(prepared)`` and ``commit_result(prepared)`` let recovery finish a commit that
    crashed after its effect without running commit again (TPC-4)."""

    def prepare(self) -> Any:
        """Do the work without making it visible; return what commit/abort need (e.g. a txn id)."""

    def commit(self, prepared: Any) -> Any:
        """Make the prepared work visible. Must be idempotent for one ``prepared`` value."""

    def abort(self, prepared: Any) -> None:
        """Discard the prepared work."""


class TwoPhaseCommitError(DurableError):
    """A two-phase operation used in a way the runtime cannot honour (the message says how to fix it)."""


def is_two_phase(obj: Any) -> bool:
    """Whether ``durable_execute`` runs ``obj`` as a two-phase commit: an instance (not a class) with callable
    ``prepare``, ``commit`` and ``abort``."""
    # Spelled out (no all(<genexpr>)): every durable call asks, and a plain function fails at "prepare".
    return (
        callable(getattr(obj, "prepare", None))
        and callable(getattr(obj, "commit", None))
        and callable(getattr(obj, "abort", None))
        and not isinstance(obj, type)
    )


_PLAIN_KEY = (str, int, bytes, type(None))


def identity(op: TwoPhaseCommit) -> tuple[Any, ...]:
    """What the digests of the three calls cover (TPC-5): the operation's ``idempotency_key`` only."""
    key = getattr(op, "idempotency_key", None)
    if callable(key):
        key = key()
    parts = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(p, _PLAIN_KEY) for p in parts):
        raise TwoPhaseCommitError(
            f"{type(op).__qualname__}.idempotency_key is {key!r}: it must be plain data (str, int, bytes or a "
            "tuple of them), since it identifies the two-phase call on recovery (TPC-5)"
        )
    return (key,)


def check_arguments(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], reconciler: Any) -> None:
    """Reject what a two-phase call cannot honour (TPC-7), naming the fix."""
    name = type(op).__qualname__
    if args or kwargs:
        given = ", ".join([*(repr(a) for a in args), *(f"{k}=" for k in kwargs)])
        raise TwoPhaseCommitError(
            f"durable_execute({name}(...), {given}): a two-phase operation takes no call arguments; give them to "
            f"the operation's constructor (and an idempotency_key if they distinguish calls) (TPC-7)"
        )
    if reconciler is not None:
        raise TwoPhaseCommitError(
            f"durable_execute({name}(...), reconciler=...): a two-phase operation reconciles its commit itself; "
            f"define is_committed(prepared) and commit_result(prepared) on {name} instead (TPC-7)"
        )


def _prepare(op: TwoPhaseCommit, identity: tuple[Any, ...]) -> Any:
    return op.prepare()


def _commit(op: TwoPhaseCommit, identity: tuple[Any, ...], prepared: Any) -> Any:
    return op.commit(prepared)


def _abort(op: TwoPhaseCommit, identity: tuple[Any, ...], prepared: Any) -> None:
    op.abort(prepared)


def _reconciler(op: TwoPhaseCommit, prepared: Any) -> Callable[[], Any]:
    """Finish a commit found PENDING (TPC-4): the result is always what commit returns, never ``prepared``."""
    check = getattr(op, "is_committed", None)
    result = getattr(op, "commit_result", None)

    def reconcile() -> Any:
        if callable(check) and callable(result) and check(prepared):
            return result(prepared)
        # Not committed, or no way to read a committed result back: commit is idempotent per prepared value.
        return op.commit(prepared)

    return reconcile


def _attach_abort_failure(commit_error: BaseException, abort_error: BaseException) -> None:
    """TPC-8: the commit failure is what is raised; the abort failure travels with it."""
    with contextlib.suppress(AttributeError):  # an exception type without a __dict__
        commit_error.abort_error = abort_error  # type: ignore[attr-defined]
    commit_error.add_note(
        f"abort() after this commit failure also failed: {type(abort_error).__name__}: {abort_error} (TPC-8)"
    )


def _committed_unrecorded(error: DurableError, name: str) -> None:
    error.add_note(f"the commit of {name} may have run, so its transaction was not aborted (TPC-6)")


class _Plan:
    """The three calls of one two-phase operation, as (function, args, options) for ``ActionExecution``."""

    def __init__(self, op: TwoPhaseCommit, durable_id: str | None, retry: RetryPolicy | None) -> None:
        self.op = op
        self.base = durable_id if durable_id is not None else function_id(type(op))
        self.identity = identity(op)
        self.retry = retry

    def prepare(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return (
            functools.partial(_prepare, self.op),
            (self.identity,),
            {"durable_id": f"{self.base}#prepare", "retry": self.retry},
        )

    def commit(self, prepared: Any) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        # With the reconciler switch off (DE-14) the execution drops it: a commit crashed after its effect runs again.
        return (
            functools.partial(_commit, self.op),
            (self.identity, prepared),
            {"durable_id": f"{self.base}#commit", "retry": self.retry, "reconciler": _reconciler(self.op, prepared)},
        )

    def abort(self, prepared: Any) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return (
            functools.partial(_abort, self.op),
            (self.identity, prepared),
            {"durable_id": f"{self.base}#abort", "retry": self.retry},
        )


Step = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def _steps(plan: _Plan) -> Generator[Step, Any, Any]:
    """The decisions of one two-phase operation, once for the sync and async paths (DE-17): yields each
    durable call to make and receives its result, or has its exception thrown in; returns what commit
    returned."""
    prepared = yield plan.prepare()
    try:
        return (yield plan.commit(prepared))
    except DurableError as exc:  # the runtime failed to record the commit: it may have run, never abort
        _committed_unrecorded(exc, plan.base)
        raise
    except Exception as commit_error:
        try:
            yield plan.abort(prepared)
        except DurableError:
            raise
        except Exception as abort_error:
            _attach_abort_failure(commit_error, abort_error)
        raise


def execute_two_phase(
    ex: ActionExecution,
    op: TwoPhaseCommit,
    durable_id: str | None = None,
    *,
    retry: RetryPolicy | None = None,
) -> Any:
    """Prepare, commit (abort if commit fails); returns what ``commit`` returned."""
    steps = _steps(_Plan(op, durable_id, retry))
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            func, args, options = steps.send(result) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value
        try:
            result, error = ex.execute(func, args, {}, **options), None
        except Exception as exc:  # thrown into the steps; a BaseException (a crash) ends the operation
            result, error = None, exc


async def execute_two_phase_async(
    ex: ActionExecution,
    op: TwoPhaseCommit,
    durable_id: str | None = None,
    *,
    retry: RetryPolicy | None = None,
) -> Any:
    """The ``durable_execute_async`` form of :func:`execute_two_phase` (work on the async pool)."""
    steps = _steps(_Plan(op, durable_id, retry))
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            func, args, options = steps.send(result) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value
        try:
            result, error = await ex.execute_async(func, args, {}, **options), None
        except Exception as exc:
            result, error = None, exc
