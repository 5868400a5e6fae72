"""Agents the runner conformance checks run (a module of their own, so function ids are stable).

Every durable function reports its execution to :data:`LEDGER`, keyed by the idempotency call id the
runtime gives it (``current_call()``, spec IDN-5), so a check can count real executions per call across
crashes and recoveries. Checks call :func:`reset` before each run.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

from reference_runtime import (
    Agent,
    CallContext,
    DurableCall,
    Event,
    InputEvent,
    OutputEvent,
    RunnerContext,
    action,
    current_call,
)


class Ledger:
    """What really happened: executions of durable functions and reconcilers, in order, thread-safe.

    ``log`` interleaves ``("effect", call id)`` with whatever else is appended (the runner suite's
    observed store appends its writes), so a check can tell what was durable before an effect ran.
    ``version`` is the "code version" agents branch on to simulate a code change across a recovery.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.effects: Counter[str] = Counter()
        self.contexts: list[CallContext] = []
        self.reconciled: list[str] = []
        self.log: list[tuple[str, Any]] = []
        self.version = 1

    def reset(self) -> None:
        with self.lock:
            self.effects.clear()
            self.contexts.clear()
            self.reconciled.clear()
            self.log.clear()
            self.version = 1

    def effect(self) -> str:
        call = current_call()
        with self.lock:
            self.effects[call.idempotency_key] += 1
            self.contexts.append(call)
            self.log.append(("effect", call.idempotency_key))
        return call.idempotency_key

    def reconcile(self) -> str:
        call = current_call()
        with self.lock:
            self.reconciled.append(call.idempotency_key)
        return call.idempotency_key

    def note(self, what: str, detail: Any) -> None:
        with self.lock:
            self.log.append((what, detail))


LEDGER = Ledger()


def reset() -> None:
    LEDGER.reset()


# -- durable functions ------------------------------------------------------------------------------------

def step(i: int) -> int:
    """A side effect with a result: ``10 * i``."""
    LEDGER.effect()
    return i * 10


def step_v2(i: int) -> int:
    """The "new code" of :class:`Evolving`: another function id, another result."""
    LEDGER.effect()
    return i * 100


def reconciler_for(i: int) -> Callable[[], int]:
    """A reconciler asking "the external system" whether the effect of ``step(i)`` happened; if it did
    not, it performs it. Either way the call's result is ``10 * i``."""

    def check() -> int:
        key = LEDGER.reconcile()
        if LEDGER.effects[key]:
            return i * 10
        return step(i)

    return check


# -- agents -----------------------------------------------------------------------------------------------

class Steps(Agent):
    """Three synchronous durable calls, keyed memory and one output per input."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        total = 0
        for i in range(3):
            total += ctx.durable_execute(step, i + event.attributes["input"])
        ctx.short_term_memory.set("total", total)
        ctx.short_term_memory.set("count", (ctx.short_term_memory.get("count") or 0) + 1)
        ctx.send_event(OutputEvent(total))


class AsyncSteps(Agent):
    """:class:`Steps` on the asynchronous path."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        total = 0
        for i in range(3):
            total += await ctx.durable_execute_async(step, i + event.attributes["input"])
        ctx.short_term_memory.set("total", total)
        ctx.send_event(OutputEvent(total))


class Evolving(Agent):
    """Three calls; from code version 2 on, call 1 is a different function (a non-deterministic change)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        out = []
        for i in range(3):
            fn = step_v2 if i == 1 and LEDGER.version >= 2 else step
            out.append(ctx.durable_execute(fn, i + event.attributes["input"]))
        ctx.send_event(OutputEvent(out))


class Reconciled(Agent):
    """One synchronous call with a reconciler."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        ctx.send_event(OutputEvent(ctx.durable_execute(step, value, reconciler=reconciler_for(value))))


class AsyncReconciled(Agent):
    """One asynchronous call with a reconciler."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(step, value, reconciler=reconciler_for(value))))


class Batch(Agent):
    """One durable batch over the input list, one call at a time (so the crash points are ordered)."""

    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        outcomes = await ctx.durable_execute_all_async([DurableCall(step, (i,)) for i in event.attributes["input"]])
        ctx.send_event(OutputEvent([o.value if o.is_success() else f"error: {o.error}" for o in outcomes]))


class BatchReconciled(Agent):
    """:class:`Batch` with a reconciler on every call."""

    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        calls = [DurableCall(step, (i,), reconciler=reconciler_for(i)) for i in event.attributes["input"]]
        outcomes = await ctx.durable_execute_all_async(calls)
        ctx.send_event(OutputEvent([o.value for o in outcomes]))


class TwoStage(Agent):
    """Two chained actions, each with a durable call, memory writes (values, nested objects, counters) and
    an output; the second reads what the first left in sensory memory."""

    @action(InputEvent)
    @staticmethod
    def first(event: Event, ctx: RunnerContext) -> None:
        value = ctx.durable_execute(step, event.attributes["input"])
        ctx.sensory_memory.set("seen", value)
        ctx.short_term_memory.set("count", (ctx.short_term_memory.get("count") or 0) + 1)
        conv = ctx.short_term_memory.new_object("conv")
        conv.set(f"turn{ctx.seq}", {"in": event.attributes["input"], "out": value})
        ctx.send_event(OutputEvent(f"first {value}"))
        ctx.send_event(Event("mid", {"value": value}))

    @action("mid")
    @staticmethod
    def second(event: Event, ctx: RunnerContext) -> None:
        seen = ctx.sensory_memory.get("seen")
        value = ctx.durable_execute(step, event.attributes["value"] + 1)
        ctx.short_term_memory.set("last", [seen, value])
        ctx.short_term_memory.new_object("stats").set("n", (ctx.short_term_memory.get("stats.n") or 0) + 1)
        ctx.send_event(OutputEvent(f"second {value}"))


#: Agents the capability probes run, with their inputs and crash-free outputs.
PROBES: dict[str, tuple[type[Agent], list[tuple[str, Any]], dict[str, list[Any]]]] = {
    "runner": (Steps, [("k", 1)], {"k": [60]}),
    "runner_async": (AsyncSteps, [("k", 1)], {"k": [60]}),
    "runner_batch": (Batch, [("k", [1, 2])], {"k": [[10, 20]]}),
}
