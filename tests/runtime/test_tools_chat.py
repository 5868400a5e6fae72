"""Built-in tool-call and chat actions (spec TOOL-1..TOOL-4), crash-tested at every fault point."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any, ClassVar

import pytest

from reference_runtime import (
    Agent,
    ChatRequestEvent,
    ChatResponseEvent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
)
from reference_runtime.stores.memory import InMemoryStore

TOOL_RUNS: Counter[str] = Counter()


def add(a: int, b: int) -> int:
    TOOL_RUNS[f"add({a},{b})"] += 1
    return a + b


def shout(text: str) -> str:
    TOOL_RUNS[f"shout({text})"] += 1
    return text.upper()


class ScriptedModel:
    """Asks for two tools (one unknown), then answers with a fresh number every time it is asked: a model
    whose answer differs on every call, so asking twice would show."""

    def __init__(self) -> None:
        self.asked: Counter[int] = Counter()
        self.counter = itertools.count()

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        self.asked[turn] += 1
        if turn == 0:
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": "t1", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}},
                {"id": "t2", "function": {"name": "shout", "arguments": '{"text": "hi"}'}},
                {"id": "t3", "function": {"name": "no_such_tool", "arguments": {}}},
            ]}
        tool_text = ",".join(f"{m['tool_call_id']}={m['content']}" for m in messages if m.get("role") == "tool")
        return {"role": "assistant", "content": f"answer#{next(self.counter)} [{tool_text}]"}


MODEL = ScriptedModel()


class ReAct(Agent):
    tools: ClassVar[dict[str, Any]] = {"add": add, "shout": shout}
    chat_models: ClassVar[dict[str, Any]] = {"scripted": MODEL}

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent("scripted", [{"role": "user", "content": event.attributes["input"]}]))

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(event.attributes["response"]))


def reset() -> None:
    TOOL_RUNS.clear()
    MODEL.asked.clear()


def crash_free(**config: Any) -> tuple[Any, list[Any]]:
    reset()
    injector = FaultInjector()
    result = Runner(ReAct, InMemoryStore(), injector=injector, config=config or None).run([("u", "q")])
    return result, list(injector.trace)


def test_react_loop_runs_end_to_end() -> None:
    """TOOL-1, TOOL-2: model → tools → model → answer; the unknown tool is answered inline as an error."""
    result, _ = crash_free()
    (answer,) = result.outputs["u"]
    assert answer.startswith("answer#") and answer.endswith("[t1=3,t2=HI,t3=None]")
    assert Counter({"add(1,2)": 1, "shout(hi)": 1}) == TOOL_RUNS
    fids = [e.function_id for e in result.journal]
    assert "tool-call-t1" in fids and "tool-call-t2" in fids
    assert "tool-call-t3" not in fids, "TOOL-2: no durable call for an unknown tool"


@pytest.mark.parametrize("config", [{"tool-call.async": False}, {"tool-call.parallel": False}])
def test_serial_tool_path(config: dict[str, Any]) -> None:
    """TOOL-3: with async or parallel off, tools run one after another and give the same answer."""
    result, _ = crash_free(**config)
    assert result.outputs["u"][0].endswith("[t1=3,t2=HI,t3=None]")
    tool_calls = [e for e in result.journal if e.function_id.startswith("tool-call-")]
    assert [e.call_id.call_index for e in tool_calls] == [0, 1]


_, POINTS = crash_free()


@pytest.mark.parametrize("point", POINTS, ids=[p.describe() for p in POINTS])
def test_recovery_never_asks_a_recorded_question_again(point: Any) -> None:
    """TOOL-4: whatever the crash point, a question whose answer was recorded is not asked again, tools
    with a recorded result do not run again, and the run ends with exactly one answer."""
    reset()
    injector = FaultInjector([CrashAt.point(point)])
    result = Runner(ReAct, InMemoryStore(), injector=injector).run([("u", "q")])
    assert injector.fired
    (answer,) = result.outputs["u"]
    assert answer.endswith("[t1=3,t2=HI,t3=None]")
    crashed_in_flight = point.phase in (Phase.AFTER_EFFECT, Phase.AFTER_PENDING, Phase.BEFORE_CALL)
    for turn, n in MODEL.asked.items():
        asked_at_crash = crashed_in_flight and point.function_id == "chat-scripted"
        assert n == 1 or (asked_at_crash and n == 2), f"turn {turn} asked {n} times after a crash at {point}"
    for tool, n in TOOL_RUNS.items():
        assert n == 1 or (crashed_in_flight and point.function_id.startswith("tool-call-") and n == 2), tool
