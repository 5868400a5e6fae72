"""Agents the runner conformance checks run (a module of their own, so function ids are stable).

Every durable function books its execution on the engine's side-effect ledger
(:class:`reference_runtime.exploration.ledger.Ledger`, with ``executions=True``), keyed by the idempotency call
id the runtime gives it (``current_call()``, spec IDN-5), so a check, or the engine's sweep, counts real
executions per call across crashes and recoveries. :data:`LEDGER` holds what the run in progress observed; every
run starts afresh (:func:`reset`, or the engine's ``new_run`` for each run of a sweep).

It is a module-level object because a durable function gets nothing but its arguments from a runner under test
(and its arguments are digested, so nothing per-run can travel in them); the checks hand the same object to the
stores and injectors they make.
"""

from __future__ import annotations

import threading
import time
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
from reference_runtime.exploration.ledger import Ledger

#: The name every execution of a kit agent's durable function is booked under.
EXECUTION = "execution"


class Observed:
    """What really happened in the run in progress: executions of durable functions (booked on :attr:`ledger`)
    and reconcilers, in order, thread-safe.

    ``log`` interleaves ``("effect", call id)`` with whatever else is appended (the runner suite's observed
    store appends its writes), so a check can tell what was durable before an effect ran. ``version`` is the
    "code version" agents branch on to simulate a code change across a recovery.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ledger = Ledger(executions=True)
        self.ledger.on_new_run(self._fresh)
        self._fresh()

    def _fresh(self) -> None:
        with self.lock:
            self.contexts: list[CallContext] = []
            self.reconciled: list[str] = []
            self.log: list[tuple[str, Any]] = []
            self.version = 1
            #: ``(what, thread ident)`` of action bodies and durable functions, for thread-confinement checks.
            self.threads: list[tuple[str, int]] = []
            #: Calls of a batch running at this moment, and the most seen at once.
            self.active = 0
            self.max_active = 0
            #: Batch calls that waited out their deadline without seeing the parallelism they wait for.
            self.gate_timeouts = 0
            self.flag = threading.Event()

    def reset(self) -> None:
        """Start a new run: nothing observed yet."""
        self.ledger.new_run("a conformance check's run")

    @property
    def effects(self) -> Counter[str]:
        """Executions per idempotency call id in the run in progress."""
        return Counter({r.call_id: r.attempts for r in self.ledger.rows() if r.attempts})

    def on_thread(self, what: str) -> None:
        with self.lock:
            self.threads.append((what, threading.get_ident()))

    def effect(self) -> str:
        call = current_call()
        self.ledger.book(EXECUTION, call.idempotency_key)
        with self.lock:
            self.contexts.append(call)
            self.log.append(("effect", call.idempotency_key))
        return call.idempotency_key

    def reconcile(self) -> str:
        call = current_call()
        self.ledger.book_reconciled(EXECUTION, call.idempotency_key)
        with self.lock:
            self.reconciled.append(call.idempotency_key)
        return call.idempotency_key

    def note(self, what: str, detail: Any) -> None:
        with self.lock:
            self.log.append((what, detail))


LEDGER = Observed()


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


def gate(i: int, parallelism: int) -> int:
    """A batch call that waits (at most 1 s) until ``parallelism`` calls run at once, then finishes after
    ``(6 - i) * 3`` ms, so later calls finish first. Once one call has waited out its second in vain the
    batch is known to fall short, and later calls do not wait again (a serial runner would otherwise
    cost a second per call)."""
    LEDGER.effect()
    with LEDGER.lock:
        LEDGER.active += 1
        LEDGER.max_active = max(LEDGER.max_active, LEDGER.active)
        full = LEDGER.max_active >= parallelism or LEDGER.gate_timeouts > 0
    deadline = time.monotonic() + 1.0
    while not full and time.monotonic() < deadline:
        time.sleep(0.002)
        with LEDGER.lock:
            full = LEDGER.max_active >= parallelism
    if not full:
        with LEDGER.lock:
            LEDGER.gate_timeouts += 1
    time.sleep(max(0, 6 - i) * 0.003)
    with LEDGER.lock:
        LEDGER.active -= 1
    return i * 10


def where_am_i(i: int) -> int:
    """Durable work that notes the thread it runs on."""
    LEDGER.effect()
    LEDGER.on_thread("durable")
    return i


def wait_for_flag(i: int) -> bool:
    """Durable work that waits (at most 2 s) for another key's action to raise the flag."""
    LEDGER.effect()
    return LEDGER.flag.wait(2.0)


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


class Threads(Agent):
    """An asynchronous action awaiting durable work, then a chained synchronous action; both note their
    thread, as does the durable work."""

    @action(InputEvent)
    @staticmethod
    async def first(event: Event, ctx: RunnerContext) -> None:
        LEDGER.on_thread("action")
        value = await ctx.durable_execute_async(where_am_i, event.attributes["input"])
        ctx.short_term_memory.set("v", value)
        ctx.send_event(Event("next", {"value": value}))

    @action("next")
    @staticmethod
    def second(event: Event, ctx: RunnerContext) -> None:
        LEDGER.on_thread("action")
        ctx.send_event(OutputEvent(event.attributes["value"]))


class Sensory(Agent):
    """Two chained actions: the first reads sensory memory (empty at the start of a run) and writes it, the
    second reads what the first wrote."""

    @action(InputEvent)
    @staticmethod
    def first(event: Event, ctx: RunnerContext) -> None:
        before = ctx.sensory_memory.get("seen")
        ctx.sensory_memory.set("seen", event.attributes["input"])
        ctx.send_event(Event("next", {"before": before}))

    @action("next")
    @staticmethod
    def second(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent([event.attributes["before"], ctx.sensory_memory.get("seen")]))


class Ordered(Agent):
    """Two actions on the same event type, declared ``zeta`` then ``alpha``."""

    @action(InputEvent)
    @staticmethod
    def zeta(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("order", [*(ctx.short_term_memory.get("order") or []), "zeta"])

    @action(InputEvent)
    @staticmethod
    def alpha(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("order", [*(ctx.short_term_memory.get("order") or []), "alpha"])
        ctx.send_event(OutputEvent(ctx.short_term_memory.get("order")))


class Failing(Agent):
    """A durable call, then a failure for the input ``"boom"``."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        ctx.durable_execute(step, 1 if value == "boom" else value)
        if value == "boom":
            raise ValueError("boom")
        ctx.send_event(OutputEvent(value))


class Interleaved(Agent):
    """Key ``slow`` awaits durable work that waits for key ``fast``'s action to raise a flag."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        if event.attributes["input"] == "fast":
            LEDGER.flag.set()
            ctx.send_event(OutputEvent("fast"))
            return
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(wait_for_flag, 0)))


class ParallelBatch(Agent):
    """A batch of six calls with ``tool-call.parallelism`` 3; later calls finish first."""

    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 3}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        outcomes = await ctx.durable_execute_all_async([DurableCall(gate, (i, 3)) for i in range(6)])
        ctx.send_event(OutputEvent([o.value for o in outcomes]))


#: Agents the capability probes run, with their inputs and crash-free outputs.
PROBES: dict[str, tuple[type[Agent], list[tuple[str, Any]], dict[str, list[Any]]]] = {
    "runner": (Steps, [("k", 1)], {"k": [60]}),
    "runner_async": (AsyncSteps, [("k", 1)], {"k": [60]}),
    "runner_batch": (Batch, [("k", [1, 2])], {"k": [[10, 20]]}),
}
