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

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

from reference_runtime import (
    Agent,
    Backoff,
    CallContext,
    DurableCall,
    Event,
    FaultPoint,
    InputEvent,
    OutputEvent,
    Phase,
    RetryPolicy,
    RunnerContext,
    SimulatedCrash,
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


# -- agents of the runner checks in conformance.runner_calls ------------------------------------------------


class QuotaError(Exception):
    """A user exception with two arguments: what a FAILED record must replay as (DE-9)."""


def over_quota(n: int) -> int:
    """A side effect that fails with a user exception."""
    LEDGER.effect()
    raise QuotaError(f"over quota by {n}", n)


def caught(exc: BaseException) -> list[Any]:
    """How the agents report an exception they caught: its class (module and name) and arguments."""
    return [f"{type(exc).__module__}.{type(exc).__qualname__}", list(exc.args)]


class Failures(Agent):
    """One call that raises :class:`QuotaError`; the action reports what it caught."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        try:
            ctx.durable_execute(over_quota, event.attributes["input"])
            ctx.send_event(OutputEvent("no exception"))
        except Exception as exc:
            ctx.send_event(OutputEvent(caught(exc)))


def reconciler_raising(i: int) -> Callable[[], int]:
    """A reconciler that finds the external system in a failed state: it raises :class:`QuotaError`."""

    def check() -> int:
        LEDGER.reconcile()
        raise QuotaError("reconciled as failed", i)

    return check


class ReconcilerRaises(Agent):
    """One call whose reconciler raises; the action reports the outcome it got."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        i = event.attributes["input"]
        try:
            ctx.send_event(OutputEvent(["ok", ctx.durable_execute(step, i, reconciler=reconciler_raising(i))]))
        except Exception as exc:
            ctx.send_event(OutputEvent(caught(exc)))


class MisusesContext(Agent):
    """A synchronous durable function that touches memory (input ``"memory"``) or sends an event
    (``"send_event"``) through the action's context (DE-11)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        what = event.attributes["input"]

        def misuse() -> int:
            LEDGER.effect()
            if what == "memory":
                ctx.short_term_memory.set("sneaky", 1)
            else:
                ctx.send_event(OutputEvent("sneaky"))
            return 0

        ctx.send_event(OutputEvent(ctx.durable_execute(misuse)))


def note(what: str) -> str:
    """Durable work that notes it ran (``("did", what)`` in the ledger's log)."""
    LEDGER.effect()
    LEDGER.note("did", what)
    return what


class Lazy(Agent):
    """Creates two asynchronous calls, notes it did, then awaits them in reverse order (DE-12)."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        first = ctx.durable_execute_async(note, "first")
        second = ctx.durable_execute_async(note, "second")
        LEDGER.note("did", "created")
        await asyncio.sleep(0.05)  # time for work started eagerly, on a pool, to show
        b = await second
        a = await first
        ctx.send_event(OutputEvent([a, b]))


class SyncThreads(Agent):
    """A synchronous action making two durable calls; action and durable work note their threads (DE-15)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        LEDGER.on_thread("action")
        total = ctx.durable_execute(where_am_i, event.attributes["input"])
        total += ctx.durable_execute(where_am_i, event.attributes["input"] + 1)
        LEDGER.on_thread("action")
        ctx.send_event(OutputEvent(total))


def flaky(i: int, fails: int) -> int:
    """Fails with ``ConnectionError`` on its first ``fails`` attempts, then returns ``10 * i``; notes each
    attempt (``("attempt", (idempotency key, attempt number, monotonic time))``)."""
    call = current_call()
    LEDGER.effect()
    LEDGER.note("attempt", (call.idempotency_key, call.attempt, time.monotonic()))
    if call.attempt <= fails:
        raise ConnectionError(f"attempt {call.attempt} of {i}")
    return i * 10


async def flaky_async(i: int, fails: int) -> int:
    """:func:`flaky` as a coroutine function."""
    return flaky(i, fails)


def wrong_kind(i: int) -> int:
    """Fails with an exception no retry policy of the agents retries on."""
    LEDGER.effect()
    LEDGER.note("attempt", (current_call().idempotency_key, current_call().attempt, time.monotonic()))
    raise KeyError(f"no {i}")


#: Retries ``ConnectionError`` three times with exponential backoff of 20, then 40 ms (no jitter).
RETRY = RetryPolicy(
    max_attempts=3, backoff=Backoff(initial=0.02, multiplier=2.0, maximum=1.0, jitter=0.0), retry_on=(ConnectionError,)
)
#: 1 100 attempts without waiting: attempt numbers past where ``2 ** attempt`` overflows a float (RETRY-7).
ENDLESS = RetryPolicy(max_attempts=1100, backoff=Backoff(initial=0.0, multiplier=2.0, maximum=0.0, jitter=0.0))


def outcome(ctx: RunnerContext, func: Callable[..., Any], *args: Any, **options: Any) -> Any:
    """The result of a durable call, or what it raised (:func:`caught`)."""
    try:
        return ctx.durable_execute(func, *args, **options)
    except Exception as exc:
        return caught(exc)


class Retrying(Agent):
    """Synchronous calls under :data:`RETRY`: one that succeeds at attempt 3, one that fails every attempt,
    one whose exception is not retried, one under :data:`ENDLESS`, and a ``retry`` that is no policy."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        i = event.attributes["input"]
        ctx.send_event(
            OutputEvent(
                [
                    outcome(ctx, flaky, i, 2, retry=RETRY),
                    outcome(ctx, flaky, i, 5, retry=RETRY),
                    outcome(ctx, wrong_kind, i, retry=RETRY),
                    outcome(ctx, flaky, i, 10_000, retry=ENDLESS),
                    outcome(ctx, step, i, retry=3),
                ]
            )
        )


class AsyncRetrying(Agent):
    """:class:`Retrying`'s first call on the asynchronous paths: a function on the pool, a coroutine
    function, and a batch call; then a reconciled call whose reconciler raises (never retried)."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        i = event.attributes["input"]
        pooled = await ctx.durable_execute_async(flaky, i, 2, retry=RETRY)
        coroutine = await ctx.durable_execute_async(flaky_async, i + 1, 2, retry=RETRY)
        (batched,) = await ctx.durable_execute_all_async([DurableCall(flaky, (i + 2, 2), retry=RETRY)])
        try:
            bad = await ctx.durable_execute_all_async([DurableCall(step, (i,)), DurableCall(step, (i,), retry=3)])  # type: ignore[arg-type]
            refused: Any = [o.value for o in bad]
        except TypeError as exc:
            refused = caught(exc)
        ctx.send_event(OutputEvent([pooled, coroutine, batched.value, refused]))


class CrashingRetry(Agent):
    """A call under :data:`RETRY` whose second attempt, in the first execution only, dies (a simulated
    process crash between two attempts, RETRY-5)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(dies_in_attempt_2, event.attributes["input"], retry=RETRY)))


def dies_in_attempt_2(i: int) -> int:
    call = current_call()
    LEDGER.effect()
    LEDGER.note("attempt", (call.idempotency_key, call.attempt, time.monotonic()))
    if call.attempt == 2 and not LEDGER.flag.is_set():
        LEDGER.flag.set()
        raise SimulatedCrash(
            FaultPoint(
                Phase.AFTER_EFFECT,
                call.call_id.key,
                call.call_id.seq,
                call.call_id.action,
                call.call_id.call_index,
                call.function_id,
                call.call_id.execution,
            )
        )
    if call.attempt < 3:
        raise ConnectionError(f"attempt {call.attempt}")
    return i * 10


def stuck(i: int) -> int:
    """Batch work that does not finish before its batch's deadline: it returns once the runner has recorded
    its slot as failed (the runner suite's observed store notes each write in the ledger), or after 3 s."""
    call = current_call()
    LEDGER.effect()
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        with LEDGER.lock:
            recorded = any(
                what == "write"
                and getattr(w, "index", None) == call.call_id.call_index
                and "FAILED" in getattr(w, "statuses", ())
                for what, w in LEDGER.log
            )
        if recorded:
            break
        time.sleep(0.005)
    return i * 10


def quick(i: int) -> int:
    LEDGER.effect()
    return i * 10


class TimedBatch(Agent):
    """A batch of three, one call at a time, with a 1 s deadline (the first call has that long to finish on a
    loaded machine): the first finishes, the second is still running at the deadline, the third never starts
    (BAT-6); then a batch whose only call succeeds on its second attempt, after a 1.5 s backoff that ends past
    the deadline (BAT-8)."""

    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1, "tool-call.batch.timeout.ms": 1000}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        outcomes = await ctx.durable_execute_all_async(
            [DurableCall(quick, (0,)), DurableCall(stuck, (1,)), DurableCall(quick, (2,))]
        )
        slow = RetryPolicy(max_attempts=2, backoff=Backoff(initial=1.5, jitter=0.0), retry_on=(ConnectionError,))
        (late,) = await ctx.durable_execute_all_async([DurableCall(flaky, (3, 1), retry=slow)])
        ctx.send_event(OutputEvent([o.value if o.is_success() else type(o.error).__name__ for o in [*outcomes, late]]))


class PoolBound(Agent):
    """A batch of four with ``tool-call.parallelism`` 4 on a pool of two threads (RUN-17)."""

    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 4, "num-async-threads": 2}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        outcomes = await ctx.durable_execute_all_async([DurableCall(gate, (i, 2)) for i in range(4)])
        ctx.send_event(OutputEvent([o.value for o in outcomes]))


class MemoryTour(Agent):
    """Every ``MemoryObject`` operation once, each result reported (MEM-1..MEM-6)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        mem = ctx.short_term_memory
        seen: dict[str, Any] = {}
        ref = mem.set("a.b", 1)
        seen["ref"] = [ref.path, mem.get(ref), mem.is_exist("a"), mem.is_exist("a.b"), mem.is_exist("zz")]
        obj = mem.new_object("obj")
        obj.set("x", [1, {"k": b"v"}])
        got = mem.get("obj.x")
        got[0] = 99
        seen["copied_out"] = mem.get("obj.x")
        kept = [1]
        mem.set("l", kept)
        kept.append(2)
        seen["copied_in"] = mem.get("l")
        seen["names"] = sorted(mem.get_field_names())
        seen["fields"] = {k: v for k, v in sorted(mem.get_fields().items())}
        seen["object_as_value"] = _raises(lambda: mem.set("obj", 5))
        mem.set("val", 1)
        seen["new_object_on_value"] = _raises(lambda: mem.new_object("val"))
        mem.new_object("val", overwrite=True).set("y", 2)
        seen["overwritten"] = mem.get("val.y")
        mem.new_object("obj").set("z", 3)  # an existing object is kept
        seen["kept"] = sorted(mem.get("obj").get_field_names())
        seen["bad_value"] = _raises(lambda: mem.set("bad", [{"k": {1, 2}}]), as_kind=TypeError)
        ctx.send_event(OutputEvent(seen))


def _raises(fn: Callable[[], Any], as_kind: type[Exception] | None = None) -> list[str] | None:
    """The class of what ``fn`` raised and its message, or None. With ``as_kind``, an exception of that kind
    (a subclass included: a runner may raise its own ``TypeError``) is reported under that kind's name."""
    try:
        fn()
    except Exception as exc:
        kind = as_kind if as_kind is not None and isinstance(exc, as_kind) else type(exc)
        return [kind.__name__, str(exc)]
    return None


class MemoryRelay(Agent):
    """Two chained actions: the first writes short-term memory, the second reads it and the previous run's
    value (MEM-13)."""

    @action(InputEvent)
    @staticmethod
    def first(event: Event, ctx: RunnerContext) -> None:
        value = ctx.durable_execute(step, event.attributes["input"])
        ctx.short_term_memory.set("relay", {"value": value, "seq": ctx.seq})
        ctx.send_event(Event("relayed", {}))

    @action("relayed")
    @staticmethod
    def second(event: Event, ctx: RunnerContext) -> None:
        now = ctx.short_term_memory.get("relay")
        before = ctx.short_term_memory.get("previous")
        ctx.short_term_memory.set("previous", now)
        ctx.send_event(OutputEvent([now, before]))


class Swallower(Agent):
    """A durable call inside ``try: … except Exception`` (FLT-3)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        try:
            value: Any = ctx.durable_execute(step, event.attributes["input"])
        except Exception as exc:
            value = ["swallowed", type(exc).__name__]
        ctx.send_event(OutputEvent(value))


class Unpicklable:
    """An argument ``cloudpickle`` refuses, with a stable ``str`` (IDN-3)."""

    def __reduce__(self) -> Any:
        raise TypeError("not picklable")

    def __repr__(self) -> str:
        return "Unpicklable()"


def echo_keywords(*args: Any, **kwargs: Any) -> list[Any]:
    """Durable work reporting the arguments it was given (IDN-8)."""
    LEDGER.effect()
    return [len(args), sorted(kwargs)]


def takes_an_argument(x: int) -> int:
    """Not a reconciler: it cannot be called without arguments (IDN-7)."""
    return x


class Identities(Agent):
    """Calls whose identities the runner must compute as the spec says (IDN-1..IDN-4, IDN-7, IDN-8)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        i = event.attributes["input"]
        seen = [
            ctx.durable_execute(step, i),
            ctx.durable_execute(step, i, durable_id="custom-id"),
            ctx.durable_execute(echo_keywords, 1, b=2, reconciler=lambda: [1, ["b"]], durable_id="echo", retry=RETRY),
            ctx.durable_execute(echo_keywords, Unpicklable()),
            _raises(lambda: ctx.durable_execute(step, i, reconciler=5)),  # type: ignore[arg-type]
            _raises(lambda: ctx.durable_execute(step, i, reconciler=takes_an_argument)),  # type: ignore[arg-type]
        ]
        ctx.send_event(OutputEvent(seen))


class Repeats(Agent):
    """The action ``again`` runs twice in one run on events with identical attributes, each execution with
    its own durable call (KEY-2)."""

    @action(InputEvent)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(Event("again", {"same": True}))
        ctx.send_event(Event("again", {"same": True}))

    @action("again")
    @staticmethod
    def again(event: Event, ctx: RunnerContext) -> None:
        count = (ctx.short_term_memory.get("count") or 0) + 1
        ctx.short_term_memory.set("count", count)
        ctx.send_event(OutputEvent(ctx.durable_execute(step, count)))


class Transfer:
    """A two-phase operation on a fake ledger: ``prepare`` reserves, ``commit`` books, ``abort`` releases.
    It holds a lock and a counter (state the runtime must not take for its identity, TPC-5); ``fail`` makes
    commit (``"commit"``), commit and abort (``"both"``) fail, or commit return what no codec can encode
    (``"unencodable"``)."""

    def __init__(self, amount: int, fail: str = "") -> None:
        self.amount = amount
        self.fail = fail
        self.lock = threading.Lock()
        self.calls = 0

    @property
    def idempotency_key(self) -> tuple[str, int]:
        return ("transfer", self.amount)

    def prepare(self) -> str:
        self.calls += 1
        LEDGER.effect()
        LEDGER.note("tpc", ("prepare", self.amount))
        return f"txn-{self.amount}"

    def commit(self, prepared: str) -> Any:
        self.calls += 1
        LEDGER.effect()
        LEDGER.note("tpc", ("commit", prepared))
        if self.fail in ("commit", "both"):
            raise ConnectionError(f"commit of {prepared} failed")
        if self.fail == "unencodable":
            return threading.Lock()
        return f"booked {prepared}"

    def abort(self, prepared: str) -> None:
        LEDGER.note("tpc", ("abort", prepared))
        if self.fail == "both":
            raise RuntimeError(f"abort of {prepared} failed")

    def is_committed(self, prepared: str) -> bool:
        return any(what == "tpc" and detail == ("commit", prepared) for what, detail in LEDGER.log)

    def commit_result(self, prepared: str) -> str:
        return f"booked {prepared}"


class TwoPhase(Agent):
    """One two-phase :class:`Transfer` per input (``[amount, fail]``); the action reports the outcome."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        amount, fail = event.attributes["input"]
        try:
            result: Any = ["ok", ctx.durable_execute(Transfer(amount, fail))]
        except Exception as exc:
            result = [*caught(exc), type(getattr(exc, "abort_error", None)).__name__, getattr(exc, "__notes__", [])]
        ctx.send_event(OutputEvent(result))


class TwoPhaseOptions(Agent):
    """A two-phase call with ``durable_id`` and ``retry``, and two it must refuse: with call arguments and
    with a reconciler (TPC-7)."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        amount = event.attributes["input"]
        ctx.send_event(
            OutputEvent(
                [
                    ctx.durable_execute(Transfer(amount), durable_id="transfer", retry=RETRY),
                    _raises(lambda: ctx.durable_execute(Transfer(amount + 1), 5)),
                    _raises(lambda: ctx.durable_execute(Transfer(amount + 2), reconciler=lambda: 0)),
                ]
            )
        )


#: How many rounds :class:`Rounds` runs its action for one input.
ROUNDS = 3


def round_call(i: int, n: int) -> int:
    """Round ``n``'s durable call of :class:`Rounds`: books its execution under its call id (which
    :attr:`Observed.contexts` notes too) and returns ``10 * i + n``."""
    LEDGER.effect()
    return 10 * i + n


def recall(history: list[str], last: str) -> str:
    """The durable call of :class:`Recalled`: books its execution and answers."""
    LEDGER.effect()
    return f"answer {len(history)} {last}"


class Recalled(Agent):
    """``think`` runs twice for one input: the first execution keeps one string in short-term memory under two
    names, the second passes both to one durable call. In the run that wrote them they are one string object,
    which a pickle writes once and then as a back-reference; once recovery rebuilt the memory from the store
    they are two equal strings. Equal arguments must hit their record however their objects are shared
    (IDN-10), as a chat model's history and last message do in a real tool loop."""

    @action(InputEvent, "again")
    @staticmethod
    def think(event: Event, ctx: RunnerContext) -> None:
        memory = ctx.short_term_memory
        if event.type == InputEvent.TYPE:
            text = f"question {event.attributes['input']}"
            memory.set("history", [text])
            memory.set("last", text)
            ctx.send_event(Event("again", {"input": event.attributes["input"]}))
        else:
            ctx.send_event(OutputEvent(ctx.durable_execute(recall, memory.get("history"), memory.get("last"))))


class Rounds(Agent):
    """A tool loop: the action ``think`` handles the input and the ``round`` event it sends itself, so it runs
    :data:`ROUNDS` times for one input (IDN-9, FLT-6), each execution making one durable call whose result it
    keeps in memory; the last round outputs them all."""

    @action(InputEvent, "round")
    @staticmethod
    def think(event: Event, ctx: RunnerContext) -> None:
        i = event.attributes["input"]
        n = event.attributes.get("round", 1)
        seen = [*(ctx.short_term_memory.get("seen") or []), ctx.durable_execute(round_call, i, n)]
        ctx.short_term_memory.set("seen", seen)
        if n < ROUNDS:
            ctx.send_event(Event("round", {"input": i, "round": n + 1}))
        else:
            ctx.short_term_memory.set("seen", [])
            ctx.send_event(OutputEvent(seen))
