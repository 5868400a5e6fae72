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
    runner = Runner(agents.ThreeCalls, store, checkpoint_every=2,
                    injector=FaultInjector([CrashAt(Phase.AFTER_RECORD, seq=1, key="b")]))
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
