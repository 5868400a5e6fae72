"""Agents and durable functions shared by the runtime tests (a module, so function ids are stable).

``step``, the three-call agents and the reconciled agent are the conformance kit's own: one definition
serves the kit's checks and these tests. Real side effects are counted in the kit's ledger.
"""

from __future__ import annotations

from typing import Any

from conformance.agents import LEDGER, reset, step
from conformance.agents import AsyncSteps as AsyncCalls
from conformance.agents import Reconciled as WithReconciler
from conformance.agents import Steps as ThreeCalls
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action

__all__ = [
    "AsyncCalls",
    "Chained",
    "Failing",
    "ThreeCalls",
    "WithReconciler",
    "fail_once",
    "reset",
    "step",
]


def __getattr__(name: str) -> Any:
    """``EFFECTS``: every real side effect of the run in progress, keyed by idempotency call id;
    ``RECONCILED``: the idempotency call ids of the calls whose reconciler ran (``WithReconciler``). Both are
    read from the kit's ledger each time, which :func:`reset` starts afresh."""
    if name == "EFFECTS":
        return LEDGER.effects
    if name == "RECONCILED":
        return LEDGER.reconciled
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def fail_once(i: int) -> int:
    LEDGER.effect()
    raise ValueError(f"boom {i}")


class Chained(Agent):
    """Two actions: the first records a call and forwards; the second consumes the custom event."""

    @action(InputEvent)
    @staticmethod
    def first(event: Event, ctx: RunnerContext) -> None:
        value = ctx.durable_execute(step, event.attributes["input"])
        ctx.sensory_memory.set("seen", value)
        ctx.send_event(Event("mid", {"value": value}))

    @action("mid")
    @staticmethod
    def second(event: Event, ctx: RunnerContext) -> None:
        assert ctx.sensory_memory.get("seen") == event.attributes["value"]
        value = ctx.durable_execute(step, event.attributes["value"])
        conv = ctx.short_term_memory.new_object("conv")
        conv.set(f"turn{ctx.seq}", value)
        ctx.send_event(OutputEvent(value))


class Failing(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        try:
            ctx.durable_execute(fail_once, event.attributes["input"])
        except ValueError as exc:
            ctx.send_event(OutputEvent(f"caught {exc}"))
