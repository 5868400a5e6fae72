"""Where durable work runs and how many run at once, observed from inside the work: durable_execute on
the action's thread (DE-15), the serial tool paths (TOOL-3), the defaults of tool-call.parallelism and
num-async-threads (BAT-3, RUN-17) and the chat.async key (TOOL-5).

Tools here meet at a rendezvous: each waits until ``target`` tools have run at once (or a timeout
passes), so calls that may overlap do, and the highest number seen running together is exact.
"""

from __future__ import annotations

import os
import threading
from typing import Any, ClassVar

import pytest

from reference_runtime import (
    Agent,
    ChatRequestEvent,
    ChatResponseEvent,
    DurableCall,
    Event,
    InputEvent,
    OutputEvent,
    Runner,
    RunnerContext,
    ToolRequestEvent,
    ToolResponseEvent,
    action,
)
from reference_runtime.stores.memory import InMemoryStore

LOCK = threading.Condition()
STATE: dict[str, Any] = {}


def reset(target: int, timeout: float, linger: float = 0.0) -> None:
    STATE.clear()
    STATE.update(now=0, max=0, target=target, timeout=timeout, linger=linger, threads=[])


def meet(i: int) -> int:
    """Wait until ``target`` calls run at once (or the timeout): concurrency becomes observable."""
    with LOCK:
        STATE["now"] += 1
        STATE["max"] = max(STATE["max"], STATE["now"])
        STATE["threads"].append(threading.get_ident())
        LOCK.notify_all()
        # Once ``target`` ran together, nobody waits any more (a barrier that never re-arms).
        LOCK.wait_for(lambda: STATE["max"] >= STATE["target"], timeout=STATE["timeout"])
        if STATE["linger"]:
            # Leave room for a call beyond the target to start: it would show as max > target.
            LOCK.wait_for(lambda: STATE["max"] > STATE["target"], timeout=STATE["linger"])
        STATE["now"] -= 1
    return i


# -- DE-15: durable_execute runs in the action's own thread, before it returns --------------------------------

TRACE: list[tuple[str, int]] = []


def where(tag: str) -> str:
    TRACE.append((tag, threading.get_ident()))
    return tag


class SyncCalls(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        TRACE.append(("action", threading.get_ident()))
        ctx.durable_execute(where, "sync-action")
        TRACE.append(("after", threading.get_ident()))


class SyncCallInAsyncAction(Agent):
    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        TRACE.append(("action", threading.get_ident()))
        ctx.durable_execute(where, "async-action")
        TRACE.append(("after", threading.get_ident()))


@pytest.mark.parametrize("agent", [SyncCalls, SyncCallInAsyncAction])
def test_durable_execute_runs_synchronously_in_the_actions_thread(agent: type[Agent]) -> None:
    """DE-15: ``durable_execute`` runs the function in the action's own thread, to its end, before it
    returns (the async variant is the one that goes to the pool)."""
    TRACE.clear()
    Runner(agent, InMemoryStore()).run([("k", 0)])
    tags = [tag for tag, _ in TRACE]
    assert tags[0] == "action" and tags[-1] == "after" and len(tags) == 3
    assert len({ident for _, ident in TRACE}) == 1, TRACE


# -- TOOL-3: with tool-call.async or tool-call.parallel off, one tool at a time --------------------------------


class Tools(Agent):
    tools: ClassVar[dict[str, Any]] = {"meet": meet}
    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 4}
    RUNNER_THREAD: ClassVar[list[int]] = []

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        Tools.RUNNER_THREAD[:] = [threading.get_ident()]
        n = event.attributes["input"]
        ctx.send_event(
            ToolRequestEvent(
                "m", [{"id": f"c{i}", "function": {"name": "meet", "arguments": {"i": i}}} for i in range(n)]
            )
        )

    @action(ToolResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(event.attributes["responses"]))


@pytest.mark.parametrize(
    ("config", "serial", "on_runner_thread"),
    [
        ({}, False, False),
        ({"tool-call.async": False}, True, True),
        ({"tool-call.parallel": False}, True, False),
        ({"tool-call.async": "false", "tool-call.parallel": False}, True, True),
    ],
    ids=["default-parallel", "async-off", "parallel-off", "both-off"],
)
def test_tool_flags_decide_between_one_parallel_batch_and_one_tool_at_a_time(
    config: dict[str, Any], serial: bool, on_runner_thread: bool
) -> None:
    """TOOL-3: by default the tools of a request run side by side on the pool; with ``tool-call.async``
    off they run one at a time on the runner's thread, with ``tool-call.parallel`` off one at a time on
    the pool. Observed from inside the tools, not from call indexes."""
    reset(target=3, timeout=0.2 if serial else 10.0)
    result = Runner(Tools, InMemoryStore(), config=config).run([("k", 3)])
    assert result.outputs == {"k": [{"c0": 0, "c1": 1, "c2": 2}]}
    assert STATE["max"] == (1 if serial else 3)
    runner_thread = Tools.RUNNER_THREAD[0]
    assert all((t == runner_thread) is on_runner_thread for t in STATE["threads"]), STATE["threads"]


# -- BAT-3 default and RUN-17: tool-call.parallelism defaults to the CPU count; num-async-threads sizes the pool


class Batch(Agent):
    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        calls = [DurableCall(meet, (i,)) for i in range(event.attributes["input"])]
        outcomes = await ctx.durable_execute_all_async(calls)
        ctx.send_event(OutputEvent([o.value for o in outcomes]))


@pytest.mark.parametrize("cpus", [1, 3])
def test_parallelism_defaults_to_the_cpu_count(monkeypatch: pytest.MonkeyPatch, cpus: int) -> None:
    """BAT-3: without ``tool-call.parallelism``, a batch runs as many calls at once as there are CPUs."""
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    reset(target=cpus, timeout=10.0, linger=0.1)
    result = Runner(Batch, InMemoryStore()).run([("k", 6)])
    assert result.outputs == {"k": [[0, 1, 2, 3, 4, 5]]}
    assert STATE["max"] == cpus


@pytest.mark.parametrize(
    ("options", "threads"),
    [
        ({"config": {"num-async-threads": 2}}, 2),
        ({"async_threads": 3, "config": {"num-async-threads": 2}}, 3),
        ({"async_threads": 2, "config": {}}, 2),
    ],
    ids=["config", "alias-wins", "alias-alone"],
)
def test_num_async_threads_sizes_the_pool_that_caps_a_batch(options: dict[str, Any], threads: int) -> None:
    """RUN-17: the async pool has ``num-async-threads`` threads (``Runner(async_threads=...)``, another name
    for the key, overrides it), so a batch allowed 4 at once runs only that many, on that many threads."""
    reset(target=threads, timeout=10.0, linger=0.2)
    config = {"tool-call.parallelism": 4, **options["config"]}
    runner = Runner(Batch, InMemoryStore(), config=config, async_threads=options.get("async_threads"))
    assert runner.settings.num_async_threads == threads
    result = runner.run([("k", 4)])
    assert result.outputs == {"k": [[0, 1, 2, 3]]}
    assert STATE["max"] == threads
    assert len(set(STATE["threads"])) <= threads


# -- TOOL-5: chat.async ----------------------------------------------------------------------------------------


class ThreadModel:
    """A chat model that answers at once and remembers on which thread it was asked."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        self.threads.append(threading.get_ident())
        return {"role": "assistant", "content": f"re: {messages[-1]['content']}"}


MODEL = ThreadModel()


class Chat(Agent):
    chat_models: ClassVar[dict[str, Any]] = {"m": MODEL}
    RUNNER_THREAD: ClassVar[list[int]] = []

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        Chat.RUNNER_THREAD[:] = [threading.get_ident()]
        ctx.send_event(ChatRequestEvent("m", [{"role": "user", "content": event.attributes["input"]}]))

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(event.attributes["response"]))


@pytest.mark.parametrize(
    ("config", "on_pool"),
    [({}, True), ({"chat.async": True}, True), ({"chat.async": False}, False), ({"chat.async": "false"}, False)],
    ids=["default", "on", "off", "off-as-string"],
)
def test_chat_async_decides_where_the_model_is_asked(config: dict[str, Any], on_pool: bool) -> None:
    """TOOL-5: with ``chat.async`` on (the default) the model is asked through ``durable_execute_async``
    on the async pool; off, through ``durable_execute`` on the runner's thread. The answer is the same
    and is recorded under the same durable id either way."""
    MODEL.threads.clear()
    result = Runner(Chat, InMemoryStore(), config=config).run([("k", "hi")])
    assert result.outputs == {"k": ["re: hi"]}
    (asked_on,) = MODEL.threads
    assert (asked_on != Chat.RUNNER_THREAD[0]) is on_pool
    assert [e.function_id for e in result.journal] == ["chat-m"]
