"""Agents and durable functions shared by the runtime tests (a module, so function ids are stable)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action, current_call

#: Every real side effect, keyed by idempotency call id; tests reset it.
EFFECTS: Counter[str] = Counter()


def reset() -> None:
    EFFECTS.clear()


def step(i: int) -> int:
    EFFECTS[current_call().idempotency_key] += 1
    return i * 10


def fail_once(i: int) -> int:
    EFFECTS[current_call().idempotency_key] += 1
    raise ValueError(f"boom {i}")


class ThreeCalls(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        total = 0
        for i in range(3):
            total += ctx.durable_execute(step, i + event.attributes["input"])
        ctx.short_term_memory.set("total", total)
        ctx.short_term_memory.set("count", (ctx.short_term_memory.get("count") or 0) + 1)
        ctx.send_event(OutputEvent(total))


class AsyncCalls(Agent):
    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        total = 0
        for i in range(3):
            total += await ctx.durable_execute_async(step, i + event.attributes["input"])
        ctx.short_term_memory.set("total", total)
        ctx.send_event(OutputEvent(total))


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


class WithReconciler(Agent):
    RECONCILED: list[str] = []

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]

        def check() -> int:
            # Ask the "external system" whether the effect happened; finish it if it did not.
            call_id = current_call().idempotency_key
            WithReconciler.RECONCILED.append(call_id)
            return value * 10 if EFFECTS[call_id] else step(value)

        out = ctx.durable_execute(step, value, reconciler=check)
        ctx.send_event(OutputEvent(out))


class Failing(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        try:
            ctx.durable_execute(fail_once, event.attributes["input"])
        except ValueError as exc:
            ctx.send_event(OutputEvent(f"caught {exc}"))


def outputs_of(result: Any) -> dict[str, list[Any]]:
    return dict(result.outputs)
