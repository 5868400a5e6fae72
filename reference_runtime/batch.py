"""Parallel durable batches: ``durable_execute_all_async`` (PR #926 semantics; spec BAT-*).

A batch is a driver over the slot lifecycle of :class:`~reference_runtime.durable.ActionExecution`
(DE-16). It occupies call indexes ``base … base+n-1``: every slot is opened against its record first,
every new slot is reserved as PENDING in one persist before any work starts (BAT-2), work runs on the
async pool with a sliding window (BAT-3), retries included (BAT-7), and each slot is finalized at its own
index as its work finishes, so the records do not depend on completion order (BAT-4).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .config import RuntimeSettings
from .durable import ActionExecution, Outcome, Slot, validate_reconciler
from .retry import RetryPolicy


@dataclass(frozen=True)
class DurableCall:
    """One call of a batch. ``durable_id`` overrides the function id and ``retry`` retries the function
    inside its slot, as for ``durable_execute`` (BAT-7)."""

    func: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None
    reconciler: Callable[[], Any] | None = None
    durable_id: str | None = None
    retry: RetryPolicy | None = None


class BatchTimeoutError(TimeoutError):
    """A batch call did not finish within ``tool-call.batch.timeout.ms``."""


async def run_batch(ex: ActionExecution, calls: list[DurableCall], settings: RuntimeSettings) -> list[Outcome]:
    """Run ``calls`` as one durable batch and return their outcomes in input order."""
    for n, c in enumerate(calls):
        if not isinstance(c, DurableCall):
            raise TypeError(f"durable_execute_all_async takes DurableCall objects, got {type(c).__name__}")
        validate_reconciler(c.reconciler)
        if c.retry is not None and not isinstance(c.retry, RetryPolicy):
            raise TypeError(
                f"DurableCall(retry={c.retry!r}) at position {n} of the batch: expected a RetryPolicy(...) or None"
            )
    parallelism, timeout_ms = settings.batch_parallelism, settings.tool_call_batch_timeout_ms
    base = ex.index
    slots: list[Slot] = []
    for n, c in enumerate(calls):
        slot = ex.open_slot(
            base + n, c.func, tuple(c.args), dict(c.kwargs or {}), c.reconciler, c.durable_id, c.retry, reserve=False
        )
        recorded = slot[2]
        if recorded is not None:  # a replay: journaled now, nothing to run (BAT-5)
            ex.finalize(slot, recorded)
        slots.append(slot)
    new = [s for s in slots if s[1] == "execute"]
    if new:
        # One persist reserves every new slot, so a crash during the batch sees all of them in flight.
        ex.reserve(new)
    outcomes: list[Outcome | None] = [s[2] for s in slots]
    started = [False] * len(slots)
    window = asyncio.Semaphore(parallelism)
    # The deadline is kept on the runtime's clock, so a virtual clock drives it (spec BAT-6): slots then
    # check it themselves when their turn comes and when they finish. Only a real clock also needs the
    # event loop's timer, to stop waiting for a straggler.
    clock = ex.clock
    deadline = clock.now() + timeout_ms / 1000 if timeout_ms > 0 else None

    halted: list[BaseException] = []

    def finalize(n: int, outcome: Outcome) -> None:
        outcomes[n] = outcome
        ex.finalize(slots[n], outcome)

    async def run(n: int) -> None:
        async with window:
            if halted:
                # A crash in another slot is a dead process: nothing may start after it (not even in the
                # moment between its window slot being released and the batch noticing).
                return
            if deadline is not None and clock.now() >= deadline:
                return  # its turn came after the deadline: it never starts and stays PENDING
            started[n] = True
            try:
                outcome = await ex.run_async(slots[n])
                if halted:
                    return  # another slot crashed while this one ran: a dead process records nothing more
                if deadline is not None and clock.now() > deadline:
                    # Finished after the deadline (its retries included, BAT-8): the work happened, but the
                    # batch reports it failed.
                    outcome = Outcome.failure(_late(slots[n], timeout_ms))
                finalize(n, outcome)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                # A crash in the work (e.g. between two attempts) or in its persist ends the batch before
                # this slot's window place is released, so no other slot starts after it.
                halted.append(exc)
                raise

    tasks = {asyncio.ensure_future(run(n)): n for n, s in enumerate(slots) if s[1] != "replay"}
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
            for t, n in tasks.items():
                if t in pending and started[n]:
                    # Started but unfinished: the work may still land, but the batch reports it failed.
                    finalize(n, Outcome.failure(_late(slots[n], timeout_ms)))
                elif outcomes[n] is None:
                    fid = slots[n][0].function_id
                    outcomes[n] = Outcome.failure(BatchTimeoutError(f"{fid} did not start in time"))
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    ex.index = base + len(calls)
    return [o if o is not None else Outcome.failure(RuntimeError("no outcome")) for o in outcomes]


def _late(slot: Slot, timeout_ms: int) -> BatchTimeoutError:
    return BatchTimeoutError(f"{slot[0].function_id} did not finish within {timeout_ms} ms")
