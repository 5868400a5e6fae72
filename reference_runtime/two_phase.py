"""Two-phase-commit durable calls (seed 000's future-work sketch; spec TPC-*).

A two-phase call takes up to three call indexes: ``prepare`` (recorded like any durable call),
``commit`` (PENDING persisted first, then finalized) and, only if commit fails, ``abort``. Because
prepare's result is recorded before commit starts, recovery never prepares twice, and a crash between
prepare and commit leads to exactly one commit. A crash *during* commit (after its effect, before its
record) is the one window where commit runs again: it is reconciled through ``is_committed`` when the
operation provides it, otherwise commit is called again with the same prepare result, which is why
participants must make committing a prepared id idempotent (as XA and Kafka transactions do).
"""

from __future__ import annotations

import functools
from typing import Any, Protocol, runtime_checkable

from .durable import ActionExecution
from .identity import function_id


@runtime_checkable
class TwoPhaseCommit(Protocol):
    """An operation against a transactional participant."""

    def prepare(self) -> Any:
        """Do the work without making it visible; return what commit/abort need (e.g. a txn id)."""

    def commit(self, prepared: Any) -> Any:
        """Make the prepared work visible. Must be idempotent for one ``prepared`` value."""

    def abort(self, prepared: Any) -> None:
        """Discard the prepared work."""


def is_two_phase(obj: Any) -> bool:
    # Spelled out (no all(<genexpr>)): every durable call asks, and a plain function fails at "prepare".
    return (callable(getattr(obj, "prepare", None)) and callable(getattr(obj, "commit", None))
            and callable(getattr(obj, "abort", None)) and not isinstance(obj, type))


def _prepare(op: TwoPhaseCommit) -> Any:
    return op.prepare()


def _commit(op: TwoPhaseCommit, prepared: Any) -> Any:
    return op.commit(prepared)


def _abort(op: TwoPhaseCommit, prepared: Any) -> None:
    op.abort(prepared)


def _reconciler(op: TwoPhaseCommit, prepared: Any) -> Any:
    check = getattr(op, "is_committed", None)
    if not callable(check):
        return None

    def reconcile() -> Any:
        return prepared if check(prepared) else op.commit(prepared)

    return reconcile


def _ids(op: TwoPhaseCommit, durable_id: str | None) -> str:
    return durable_id if durable_id is not None else function_id(type(op))


def execute_two_phase(ex: ActionExecution, op: TwoPhaseCommit, durable_id: str | None = None) -> Any:
    """Prepare, commit (abort if commit fails); returns what ``commit`` returned."""
    base = _ids(op, durable_id)
    # The digests cover the operation object, so two different operations are two different calls.
    prepared = ex.execute(_prepare, (op,), {}, durable_id=f"{base}#prepare")
    try:
        return ex.execute(functools.partial(_commit, op), (prepared,), {}, durable_id=f"{base}#commit",
                          reconciler=_reconciler(op, prepared) or (lambda: _commit(op, prepared)))
    except Exception:
        ex.execute(functools.partial(_abort, op), (prepared,), {}, durable_id=f"{base}#abort")
        raise


async def execute_two_phase_async(ex: ActionExecution, op: TwoPhaseCommit, durable_id: str | None = None) -> Any:
    """The ``durable_execute_async`` form of :func:`execute_two_phase` (work on the async pool)."""
    base = _ids(op, durable_id)
    prepared = await ex.execute_async(_prepare, (op,), {}, durable_id=f"{base}#prepare")
    try:
        return await ex.execute_async(functools.partial(_commit, op), (prepared,), {},
                                      durable_id=f"{base}#commit",
                                      reconciler=_reconciler(op, prepared) or (lambda: _commit(op, prepared)))
    except Exception:
        await ex.execute_async(functools.partial(_abort, op), (prepared,), {}, durable_id=f"{base}#abort")
        raise
