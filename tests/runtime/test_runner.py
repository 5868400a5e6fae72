"""The keyed runner: sequence numbers, routing, outputs, async interleaving, checkpoints (spec RUN-*)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from reference_runtime import (
    ActionFailedError,
    Agent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    SimulatedCrash,
    action,
)
from reference_runtime.stores.memory import InMemoryStore

from . import agents


class Echo(Agent):
    @action(InputEvent)
    @staticmethod
    def echo(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(f"{ctx.key}:{ctx.seq}:{event.attributes['input']}"))


def test_sequence_numbers_count_inputs_per_key_from_zero() -> None:
    """RUN-1: each key numbers its inputs 0, 1, 2 … independently."""
    result = Runner(Echo).run([("a", "x"), ("b", "y"), ("a", "z")])
    assert result.outputs == {"a": ["a:0:x", "a:1:z"], "b": ["b:0:y"]}


class Router(Agent):
    @action(InputEvent)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(Event("left", {"v": 1}))
        ctx.send_event(Event("right", {"v": 2}))

    @action("left", "right")
    @staticmethod
    def both(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(f"both:{event.type}"))

    @action("right")
    @staticmethod
    def only_right(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent("right-only"))


def test_actions_are_triggered_by_event_type_and_events_flow_within_a_run() -> None:
    """RUN-2, RUN-3, RUN-4: events sent by an action trigger every action listening to their type, in order;
    output events are collected per key."""
    result = Runner(Router).run([("k", 0)])
    assert result.outputs == {"k": ["both:left", "both:right", "right-only"]}
    assert [e.action for e in result.emitted] == ["both", "both", "only_right"]


class Rendezvous(Agent):
    """Each key's durable call waits until the other key's call is running too: only possible if an
    awaiting action lets other keys progress."""

    barrier = threading.Barrier(2, timeout=10)

    @action(InputEvent)
    @staticmethod
    async def meet(event: Event, ctx: RunnerContext) -> None:
        await ctx.durable_execute_async(Rendezvous.wait)
        ctx.send_event(OutputEvent("met"))

    @staticmethod
    def wait() -> str:
        Rendezvous.barrier.wait()
        return "ok"


def test_async_actions_let_other_keys_progress() -> None:
    """RUN-5: while one key awaits durable work, another key's action runs."""
    Rendezvous.barrier.reset()
    result = Runner(Rendezvous).run([("a", 0), ("b", 0)])
    assert result.outputs == {"a": ["met"], "b": ["met"]}


class ThreadSpy(Agent):
    threads: list[tuple[str, int]] = []

    @action(InputEvent)
    @staticmethod
    async def spy(event: Event, ctx: RunnerContext) -> None:
        ThreadSpy.threads.append(("action", threading.get_ident()))
        await ctx.durable_execute_async(ThreadSpy.where)
        ThreadSpy.threads.append(("action", threading.get_ident()))

    @staticmethod
    def where() -> None:
        ThreadSpy.threads.append(("pool", threading.get_ident()))


def test_durable_async_work_runs_off_the_runner_thread() -> None:
    """RUN-6: actions run on the runner's thread, async durable work on the pool."""
    ThreadSpy.threads.clear()
    Runner(ThreadSpy).run([("a", 0)])
    action_threads = {t for kind, t in ThreadSpy.threads if kind == "action"}
    pool_threads = {t for kind, t in ThreadSpy.threads if kind == "pool"}
    assert len(action_threads) == 1 and pool_threads and not (pool_threads & action_threads)


def test_checkpoint_prunes_finished_states_and_failover_restores_it() -> None:
    """RUN-7/RUN-8/REC-1: checkpoints capture memory, seqs and offset; completed states are pruned;
    a failover restores the checkpoint and replays only the inputs after it."""
    agents.reset()
    store = InMemoryStore()
    runner = Runner(
        agents.ThreeCalls,
        store,
        checkpoint_every=2,
        injector=FaultInjector([CrashAt(Phase.AFTER_RECORD, seq=1, key="b")]),
    )
    result = runner.run([("a", 1), ("b", 1), ("a", 2), ("b", 2)])
    assert result.failovers == 1
    cp = runner.checkpoints[0]
    assert cp.offset == 2 and cp.next_seq == {"a": 1, "b": 1}
    assert len(store) == 0  # the final checkpoint pruned every completed state
    assert result.outputs == {"a": [60, 90], "b": [60, 90]}
    assert result.memory["a"] == {"total": 90, "count": 2}
    # Inputs before the checkpoint were not processed again: their calls ran once.
    assert all(agents.EFFECTS[f"{k}/0/work/{i}"] == 1 for k in "ab" for i in range(3))


def test_prune_happens_only_when_the_checkpoint_completes() -> None:
    """RUN-8: a crash during the checkpoint leaves the states in place for recovery."""
    store = InMemoryStore()
    runner = Runner(Echo, store, injector=FaultInjector([CrashAt(Phase.CHECKPOINT)]))
    runner.inputs.append(("k", 1))
    with pytest.raises(SimulatedCrash):
        runner.process()
    assert len(store) == 1


class Broken(Agent):
    @action(InputEvent)
    @staticmethod
    def broken(event: Event, ctx: RunnerContext) -> Any:
        raise RuntimeError("bug in user code")


def test_an_action_that_raises_fails_the_run_with_its_location() -> None:
    """RUN-9: user code errors surface as ActionFailedError naming key, seq and action."""
    with pytest.raises(ActionFailedError) as info:
        Runner(Broken).run([("k", 1)])
    assert (info.value.key, info.value.seq, info.value.action) == ("k", 0, "broken")
    assert isinstance(info.value.__cause__, RuntimeError)


class CountsAndFailsOnceOnTwo(Agent):
    """A counter in memory ``n``; the first execution on input 2 raises after it has set ``n``."""

    attempts: list[int] = []

    @action(InputEvent)
    @staticmethod
    def count(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        CountsAndFailsOnceOnTwo.attempts.append(value)
        n = (ctx.short_term_memory.get("n") or 0) + 1
        ctx.short_term_memory.set("n", n)
        if value == 2 and CountsAndFailsOnceOnTwo.attempts.count(2) == 1:
            raise RuntimeError("fails once")
        ctx.send_event(OutputEvent(f"{value}#{n}"))


def test_an_input_whose_action_raised_is_covered_by_no_checkpoint_and_runs_again_after_failover() -> None:
    """REC-1, RUN-7: a checkpoint is taken only after every input it covers has finished, so an input whose
    action raised is processed again after failover, not dropped; the failed attempt's memory write is gone.
    Flink Agents 0.2.0 to main can drop such an input (docs/sources.md, "Failing action and checkpoint")."""
    CountsAndFailsOnceOnTwo.attempts = []
    runner = Runner(CountsAndFailsOnceOnTwo, InMemoryStore(), checkpoint_every=1)
    runner.inputs.extend([("a", 1), ("a", 2), ("a", 3)])
    with pytest.raises(ActionFailedError) as info:
        runner.process()
    assert (info.value.key, info.value.seq) == ("a", 1)
    assert [cp.offset for cp in runner.checkpoints] == [1]  # none covers input 2
    runner.fail_over()
    runner.process()
    result = runner.result()
    assert result.outputs == {"a": ["1#1", "2#2", "3#3"]}
    assert result.memory["a"] == {"n": 3}
    assert CountsAndFailsOnceOnTwo.attempts == [1, 2, 2, 3]


class ThreeCallsOnALoop(Agent):
    """agents.ThreeCalls as an async action that never suspends: run by the event loop, one task per key."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        agents.ThreeCalls.work(event, ctx)


@pytest.mark.parametrize(
    "crash", [CrashAt(Phase.AFTER_EFFECT, key="a", call_index=1), CrashAt(Phase.BEFORE_COMPLETE, key="b")]
)
def test_synchronous_agents_run_in_the_order_the_event_loop_gives(crash: CrashAt) -> None:
    """RUN-10: without an event loop, a synchronous agent reaches the same fault points in the same order
    as on the loop: every key of the segment runs to its end even after another key crashed."""
    traces = []
    for agent in (agents.ThreeCalls, ThreeCallsOnALoop):
        agents.reset()
        injector = FaultInjector([crash])
        runner = Runner(agent, InMemoryStore(), injector=injector)
        assert runner._sync is (agent is agents.ThreeCalls)
        result = runner.run([("a", 1), ("b", 1), ("c", 1)])
        assert result.outputs == {"a": [60], "b": [60], "c": [60]}
        traces.append([(p.phase, p.key, p.call_index) for p in injector.trace])
    assert traces[0] == traces[1]
    fired = injector.fired[0]
    crash_at = traces[0].index((fired.phase, fired.key, fired.call_index))
    # The recovery starts by re-entering the crashed key's action at its first call.
    recovery_at = traces[0].index((Phase.BEFORE_CALL, fired.key, 0), crash_at)
    # Key c, after the crashing key, still ran to its end between the crash and the failover.
    assert (Phase.AFTER_COMPLETE, "c", None) in traces[0][crash_at:recovery_at]


class ReturnsAwaitable(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> Any:
        ctx.send_event(OutputEvent("sent"))
        return ctx.durable_execute_async(agents.step, event.attributes["input"])


def test_a_synchronous_action_may_return_an_awaitable() -> None:
    """RUN-10: the awaitable a synchronous action returns is awaited to its end (on a loop of its own)
    before the action completes, and its durable call is replayed after a crash."""
    agents.reset()
    injector = FaultInjector([CrashAt(Phase.BEFORE_COMPLETE)])
    result = Runner(ReturnsAwaitable, InMemoryStore(), injector=injector).run([("k", 4)])
    assert result.outputs == {"k": ["sent"]} and result.failovers == 1
    assert dict(agents.EFFECTS) == {"k/0/work/0": 1}
    assert [e.source for e in result.journal] == ["executed", "replayed"]


def test_a_synchronous_run_that_awaits_a_future_is_refused() -> None:
    """RUN-10: the loop-less driver cannot wait on a future; it says so instead of hanging."""
    from reference_runtime.runner import _drive

    class Pending:
        def __await__(self) -> Any:
            yield self

    async def waits() -> None:
        await Pending()

    with pytest.raises(RuntimeError, match="declare the action async"):
        _drive(waits())


class InterruptedAt(Agent):
    ran: list[str] = []

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        InterruptedAt.ran.append(ctx.key)
        if ctx.key == "a":
            raise KeyboardInterrupt


def test_an_interrupt_stops_a_synchronous_run_at_once() -> None:
    """RUN-10: Ctrl-C is not held back until the other keys of the segment have run."""
    InterruptedAt.ran.clear()
    with pytest.raises(KeyboardInterrupt):
        Runner(InterruptedAt).run([("a", 0), ("b", 0)])
    assert InterruptedAt.ran == ["a"]
