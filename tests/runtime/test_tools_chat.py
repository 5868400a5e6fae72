"""Built-in tool-call and chat actions (spec TOOL-1..TOOL-4), crash-tested at every fault point."""

from __future__ import annotations

import dataclasses
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
    FaultPoint,
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
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "t1", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}},
                    {"id": "t2", "function": {"name": "shout", "arguments": '{"text": "hi"}'}},
                    {"id": "t3", "function": {"name": "no_such_tool", "arguments": {}}},
                ],
            }
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


def _selectors(trace: list[FaultPoint]) -> list[tuple[FaultPoint, int]]:
    """Each point of a crash-free trace with its occurrence number among the points its selector matches
    (a second chat turn reaches the first turn's selectors again), in an order that does not depend on
    which parallel tool finished first, so every pytest-xdist worker collects the same test ids: the call
    points of one action execution sort by call index and phase, and each action-level point closes them."""
    seen: Counter[CrashAt] = Counter()
    phase_order = {ph: n for n, ph in enumerate(Phase)}
    group, keyed = 0, []
    for p in trace:
        selector = CrashAt.point(p)
        seen[selector] += 1
        keyed.append(((group, p.call_index is None, p.call_index or 0, phase_order[p.phase]), (p, seen[selector])))
        if p.call_index is None:
            group += 1
    return [item for _, item in sorted(keyed, key=lambda k: k[0])]


POINTS = _selectors(crash_free()[1])


@pytest.mark.parametrize(("point", "nth"), POINTS, ids=[p.describe() + (f" #{n}" if n > 1 else "") for p, n in POINTS])
def test_recovery_never_asks_a_recorded_question_again(point: FaultPoint, nth: int) -> None:
    """TOOL-4, REC-3, REC-5: whatever the crash point, a question or tool call whose record was persisted
    before the crash does not run again; one that ran without its record landing (parallel tools: a
    crash at one tool can leave another finished but unrecorded) runs exactly once more; one that had not
    run yet runs once. The run ends with exactly one answer."""
    reset()
    selector = dataclasses.replace(CrashAt.point(point), nth=nth)
    injector = FaultInjector([selector])
    runner = Runner(ReAct, InMemoryStore(), injector=injector)
    before: dict[str, Counter[Any]] = {}
    fail_over = runner.fail_over

    def snapshot_then_fail_over() -> None:
        before.setdefault("tools", Counter(TOOL_RUNS))
        before.setdefault("asked", Counter(MODEL.asked))
        fail_over()

    runner.fail_over = snapshot_then_fail_over  # type: ignore[method-assign]
    result = runner.run([("u", "q")])
    assert injector.fired == [point]
    (answer,) = result.outputs["u"]
    assert answer.endswith("[t1=3,t2=HI,t3=None]")
    # What was persisted when the process died: everything up to the crash point in the trace.
    crash_at = [i for i, p in enumerate(injector.trace) if selector.matches(p)][nth - 1]
    recorded = [p.function_id for p in injector.trace[: crash_at + 1] if p.phase == Phase.AFTER_RECORD]
    ran_before = before.get("tools", Counter()), before.get("asked", Counter())
    for fid, name in (("tool-call-t1", "add(1,2)"), ("tool-call-t2", "shout(hi)")):
        first, again = ran_before[0][name], TOOL_RUNS[name] - ran_before[0][name]
        expected = 0 if fid in recorded else 1
        assert (first, again) in ((0, 1), (1, expected)), f"{name}: ran {first}+{again} times, crash at {point}"
    recorded_turns = recorded.count("chat-scripted")  # turns are asked and recorded one after another
    for turn in (0, 1):
        first, again = ran_before[1][turn], MODEL.asked[turn] - ran_before[1][turn]
        expected = 0 if turn < recorded_turns else 1
        assert (first, again) in ((0, 1), (1, expected)), f"turn {turn}: asked {first}+{again} times at {point}"


ECHOES: Counter[str] = Counter()


def echo(a: str, b: str) -> str:
    ECHOES[a + b] += 1
    return a + b


class SharingModel:
    """Asks for a tool whose two arguments are one (non-interned) string object, as a model client that
    reuses a parsed value would; after recovery the request comes back from the store with two."""

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        if any(m.get("role") == "tool" for m in messages):
            return {"role": "assistant", "content": "done"}
        shared = "".join(["ec", "ho"])
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "e1", "function": {"name": "echo", "arguments": {"a": shared, "b": shared}}}],
        }


class SharedArgs(Agent):
    tools: ClassVar[dict[str, Any]] = {"echo": echo}
    chat_models: ClassVar[dict[str, Any]] = {"sharing": SharingModel()}

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent("sharing", [{"role": "user", "content": "go"}]))

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(event.attributes["response"]))


def test_a_recorded_tool_call_is_found_again_when_its_arguments_come_back_from_the_store() -> None:
    """TOOL-1, REC-3: the tool's args digest does not depend on which argument values happened to be one
    object in the first run (pickle writes a repeated object as a back-reference), so a tool call
    recorded before a crash replays instead of running again."""
    ECHOES.clear()
    injector = FaultInjector([CrashAt(Phase.AFTER_RECORD, action="tool_call_action")])
    result = Runner(SharedArgs, InMemoryStore(), injector=injector).run([("u", "q")])
    assert injector.fired and result.outputs == {"u": ["done"]}
    assert dict(ECHOES) == {"echoecho": 1}
