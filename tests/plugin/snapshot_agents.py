"""Agents for the snapshot-start differential tests (PLG-16, PLG-17) that no other test module has: a
retrying call on a virtual clock, a two-phase commit, memory written per call, a random result, a
nondeterministic argument, an agent that always fails, a durable function that counts
across runs (what a snapshot cannot see), and a tool loop of async actions awaiting one call at a time."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action, current_call
from reference_runtime.retry import Backoff, RetryPolicy

from ..runtime.tool_loop_agent import ToolCall, ToolResult

TRIES: dict[str, int] = {}
COMMITTED: dict[str, int] = {}
CALLS = {"n": 0}


def reset() -> None:
    TRIES.clear()
    COMMITTED.clear()
    CALLS["n"] = 0


def flaky(x: int) -> int:
    """Fails twice per idempotency id and run, then succeeds: the same retries in every run."""
    key = f"{current_call().idempotency_key}#{current_call().attempt}"
    TRIES[key] = TRIES.get(key, 0) + 1
    if current_call().attempt < 3:
        raise ConnectionError(f"transient {x}")
    return x + 1


POLICY = RetryPolicy(
    max_attempts=4, backoff=Backoff(initial=2.0, multiplier=2.0, jitter=0.0), retry_on=(ConnectionError,)
)


class Retrying(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        a = ctx.durable_execute(flaky, event.attributes["input"], retry=POLICY)
        b = ctx.durable_execute(flaky, a, retry=POLICY)
        ctx.send_event(OutputEvent(a + b))


@dataclass
class Transfer:
    amount: int

    def prepare(self) -> str:
        return f"txn-{current_call().idempotency_key}"

    def commit(self, txn: str) -> str:
        COMMITTED[txn] = self.amount
        return txn

    def abort(self, txn: str) -> None:
        COMMITTED.pop(txn, None)

    def is_committed(self, txn: str) -> bool:
        return txn in COMMITTED


class TwoPhase(Agent):
    @action(InputEvent)
    @staticmethod
    def pay(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(Transfer(event.attributes["input"]))))


def square(x: int) -> int:
    return x * x


class Remembering(Agent):
    """Memory written between calls, read back on the next input of the key."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        seen = ctx.short_term_memory.get("seen") or 0
        for i in range(event.attributes["input"]):
            ctx.short_term_memory.set(f"sq{i}", ctx.durable_execute(square, i + seen))
        ctx.short_term_memory.set("seen", seen + 1)
        ctx.send_event(OutputEvent(seen))


def roll() -> float:
    return random.random()


class RandomResult(Agent):
    """A random value inside a durable call: recorded, so replayed, but different in every run."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        first = ctx.durable_execute(roll)
        ctx.durable_execute(square, 3)
        ctx.send_event(OutputEvent(round(first, 3)))


class RandomArgument(Agent):
    """A random argument: its digest differs on every execution (PLG-2)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.durable_execute(square, random.randint(0, 10**9))
        ctx.send_event(OutputEvent("done"))


def counted(x: int) -> int:
    CALLS["n"] += 1
    return CALLS["n"] % 2


class CountsAcrossRuns(Agent):
    """A durable function whose result depends on how often it ran before in the process."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        parity = [ctx.durable_execute(counted, i) for i in range(3)]
        ctx.send_event(OutputEvent(parity))


def tick(x: int) -> int:
    CALLS["n"] += 1
    return CALLS["n"] % 4


class CountsModFour(Agent):
    """Two crash-free runs agree (four calls move the counter by four), but a run that crashed and
    recovered has moved it by another amount: only running a point both ways shows it."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent([ctx.durable_execute(tick, i) for i in range(4)]))


def identity(x: Any) -> Any:
    return x


class FailsAlways(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.durable_execute(identity, 1)
        raise RuntimeError("broken agent")


#: Executions of :func:`tallied` in the action execution running now (reset as the action starts).
EXECUTED = {"n": 0}


def tallied(i: int) -> int:
    EXECUTED["n"] += 1
    return i * 3


class CountsExecutions(Agent):
    """Deterministic in its durable results, yet its end depends on how many of its calls ran rather than
    replayed, a state outside them: after a crash it remembers fewer executions than without one. The
    difference shows only at the end of the action, long after a recovery converged on the crash-free run's
    store (spec COST-7): a scenario stopped there would miss it."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        EXECUTED["n"] = 0
        total = sum(ctx.durable_execute(tallied, i) for i in range(event.attributes["input"]))
        ctx.short_term_memory.set("executed", EXECUTED["n"])
        ctx.send_event(OutputEvent(total))


def ask(history: list[str]) -> str:
    """A fake chat model: asks for a tool in each of three rounds, then answers."""
    return f"final {history[-1]}" if len(history) > 3 else f"ask {len(history)}"


async def look_up(request: str) -> str:
    """A coroutine function: awaited in the action's own task, not run on the pool."""
    return request.upper()


def use_tool(request: str) -> str:
    return f"tool({request})"


def slow_tool(request: str) -> str:
    # Long enough that a call made meanwhile on the runner's thread lands first in every run, so that two
    # sweeps of an agent racing the two can be compared (the pool's threads are started already, P5).
    time.sleep(0.02)
    return f"tool({request})"


class AsyncToolLoop(Agent):
    """A tool loop of async actions that await one durable call at a time: ``think`` asks the model (on the
    pool) and sends a tool call, ``act`` looks the request up (a coroutine) and runs the tool (on the pool),
    three rounds and an answer. With one key in flight nothing else runs while a call does (PLG-16)."""

    @action(InputEvent, ToolResult)
    @staticmethod
    async def think(event: Event, ctx: RunnerContext) -> None:
        memory = ctx.short_term_memory
        if event.type == InputEvent.TYPE:
            history = [f"question {event.attributes['input']}"]
        else:
            history = [*memory.get("history"), event.attributes["text"]]
        answer = await ctx.durable_execute_async(ask, history)
        memory.set("history", history)
        if answer.startswith("final"):
            ctx.send_event(OutputEvent(answer))
        else:
            ctx.send_event(ToolCall(attributes={"request": answer}))

    @action(ToolCall)
    @staticmethod
    async def act(event: Event, ctx: RunnerContext) -> None:
        found = await ctx.durable_execute_async(look_up, event.attributes["request"])
        ctx.send_event(ToolResult(attributes={"text": await ctx.durable_execute_async(use_tool, found)}))


class SideCall(Agent):
    """Makes a synchronous durable call from a task of its own while its async call's work is in flight: one
    call in flight at a time, yet a fault point is reached meanwhile, and thread timing decides which call
    lands first (what no snapshot stands for, PLG-17)."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        async def side() -> str:
            return str(ctx.durable_execute(use_tool, "side"))

        found = await asyncio.gather(ctx.durable_execute_async(slow_tool, "main"), side())
        ctx.send_event(OutputEvent(sorted(found)))
