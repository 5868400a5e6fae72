"""Parallel durable batches: ``durable_execute_all_async`` (PR #926 semantics; spec BAT-*).

A batch occupies call indexes ``base … base+n-1``. Slots are planned against the records first, every
new slot is reserved as PENDING in one persist before any work starts, work runs on the async pool
with a sliding window, and each slot is finalized at its own index as its work finishes, so the
records do not depend on completion order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .config import RuntimeSettings
from .durable import ActionExecution, Outcome, Source, validate_reconciler
from .faults import Phase
from .identity import args_digest, function_id
from .records import CallResult


@dataclass(frozen=True)
class DurableCall:
    """One call of a batch. ``durable_id`` overrides the function id, as for ``durable_execute``."""

    func: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None
    reconciler: Callable[[], Any] | None = None
    durable_id: str | None = None


class BatchTimeoutError(TimeoutError):
    """A batch call did not finish within ``tool-call.batch.timeout.ms``."""


@dataclass
class _Slot:
    index: int
    call: DurableCall
    fid: str
    digest: str
    plan: Literal["replay", "reconcile", "execute"]
    outcome: Outcome | None = None
    started: bool = False
    kwargs: dict[str, Any] = field(default_factory=dict)


async def run_batch(ex: ActionExecution, calls: list[DurableCall], settings: RuntimeSettings) -> list[Outcome]:
    """Run ``calls`` as one durable batch and return their outcomes in input order."""
    for c in calls:
        if not isinstance(c, DurableCall):
            raise TypeError(f"durable_execute_all_async takes DurableCall objects, got {type(c).__name__}")
        validate_reconciler(c.reconciler)
    parallelism, timeout_ms = settings.batch_parallelism, settings.tool_call_batch_timeout_ms
    base = ex.index
    slots = _plan(ex, base, calls)
    new = [s for s in slots if s.plan == "execute" and s.index >= len(ex.records)]
    if new:
        # One persist reserves every new slot, so a crash during the batch sees all of them in flight.
        ex.write(new[0].index, [CallResult.pending(s.fid, s.digest) for s in new])
        ex.fault(Phase.AFTER_PENDING, new[0].index, new[0].fid)
    window = asyncio.Semaphore(parallelism)
    # The deadline is kept on the runtime's clock, so a virtual clock drives it (spec BAT-6): slots then
    # check it themselves when their turn comes and when they finish. Only a real clock also needs the
    # event loop's timer, to stop waiting for a straggler.
    clock = ex.clock
    deadline = clock.now() + timeout_ms / 1000 if timeout_ms > 0 else None

    halted: list[BaseException] = []

    async def run(slot: _Slot) -> None:
        async with window:
            if halted:
                # A crash in another slot is a dead process: nothing may start after it (not even in the
                # moment between its window slot being released and the batch noticing).
                return
            if deadline is not None and clock.now() >= deadline:
                return  # its turn came after the deadline: it never starts and stays PENDING
            slot.started = True
            if slot.plan == "reconcile":
                assert slot.call.reconciler is not None
                outcome = await ex.offload(
                    slot.call.reconciler, (), {}, ex.context_for(slot.index, slot.fid, slot.digest)
                )
            else:
                outcome = await ex.offload(
                    slot.call.func, slot.call.args, slot.kwargs, ex.context_for(slot.index, slot.fid, slot.digest)
                )
            if halted:
                return  # another slot crashed while this one ran: a dead process records nothing more
            if deadline is not None and clock.now() > deadline:
                # Finished after the deadline: the work happened, but the batch reports it failed.
                outcome = Outcome.failure(_late(slot, timeout_ms))
            try:
                _finalize(ex, slot, outcome)
            except BaseException as exc:
                halted.append(exc)
                raise

    tasks = {asyncio.ensure_future(run(s)): s for s in slots if s.plan != "replay"}
    try:
        if tasks:
            virtual = getattr(clock, "virtual", False)
            wait = None if deadline is None or virtual else max(0.0, deadline - clock.now())
            done, pending = await asyncio.wait(tasks, timeout=wait, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                if t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
            for t in pending:
                t.cancel()
            for t, slot in tasks.items():
                if t in pending and slot.started:
                    # Started but unfinished: the work may still land, but the batch reports it failed.
                    _finalize(ex, slot, Outcome.failure(_late(slot, timeout_ms)))
                elif slot.outcome is None:
                    slot.outcome = Outcome.failure(BatchTimeoutError(f"{slot.fid} did not start in time"))
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    ex.index = base + len(calls)
    return [s.outcome if s.outcome is not None else Outcome.failure(RuntimeError("no outcome")) for s in slots]


def _late(slot: _Slot, timeout_ms: int) -> BatchTimeoutError:
    return BatchTimeoutError(f"{slot.fid} did not finish within {timeout_ms} ms")


def _plan(ex: ActionExecution, base: int, calls: list[DurableCall]) -> list[_Slot]:
    slots = []
    diverged = False
    for i, c in enumerate(calls):
        kwargs = dict(c.kwargs or {})
        fid = c.durable_id if c.durable_id is not None else function_id(c.func)
        digest = args_digest(tuple(c.args), kwargs)
        index = base + i
        ex.fault(Phase.BEFORE_CALL, index, fid)
        slot = _Slot(index, c, fid, digest, "execute", kwargs=kwargs)
        if not diverged and index < len(ex.records):
            record = ex.records[index]
            if record.matches(fid, digest):
                if record.is_terminal:
                    slot.plan, slot.outcome = "replay", ex.decode(record, index)
                    ex.journal.append(_entry(ex, slot, "replayed"))
                elif c.reconciler is not None:
                    slot.plan = "reconcile"
            else:
                ex.mismatch(index, record, fid, digest)
                diverged = True
        slots.append(slot)
    return slots


def _finalize(ex: ActionExecution, slot: _Slot, outcome: Outcome) -> None:
    slot.outcome = outcome
    ex.journal.append(_entry(ex, slot, "reconciled" if slot.plan == "reconcile" else "executed"))
    ex.fault(Phase.AFTER_EFFECT, slot.index, slot.fid)
    ex.write(slot.index, [ex.encode(slot.fid, slot.digest, outcome, slot.index)])
    ex.fault(Phase.AFTER_RECORD, slot.index, slot.fid)


def _entry(ex: ActionExecution, slot: _Slot, source: Source) -> Any:
    from .durable import JournalEntry

    assert slot.outcome is not None or source != "replayed"
    kind: Literal["ok", "error"] = "error" if slot.outcome is not None and slot.outcome.error else "ok"
    return JournalEntry(ex.call_id(slot.index), slot.fid, slot.digest, kind, source, ex.failovers)
