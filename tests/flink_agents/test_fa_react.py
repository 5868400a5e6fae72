"""A ReAct agent with a fake chat model runs end to end; what cannot run in-process says so (FA-5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup

from pytest_durable.sweep import learn, points_to_crash, run_scenario
from reference_runtime import Runner
from reference_runtime.errors import UnsupportedFeatureError
from reference_runtime.exploration.scenario import Scenario, selector_for
from reference_runtime.stores.memory import InMemoryStore

from . import react_flink

INPUTS = [("ann", "Lyon"), ("bo", "Oslo")]
ASKED: list[str] = []  # every question the fake model was asked
EXPECTED = {"ann": ["It is sunny in Lyon."], "bo": ["It is sunny in Oslo."]}


class FakeAssistant(BaseChatModelSetup):
    """Asked about a city, calls the forecast tool; given the tool's answer, replies with it."""

    connection: str = "fake"
    model: str = "fake"

    @property
    def model_kwargs(self) -> dict[str, Any]:
        return {}

    def chat(
        self, messages: Sequence[ChatMessage], prompt_args: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> ChatMessage:
        last = messages[-1]
        ASKED.append(last.content)
        if last.role == MessageRole.TOOL:
            return ChatMessage(role=MessageRole.ASSISTANT, content=f"It is {last.content}.")
        call = {
            "id": f"call-{last.content}",
            "type": "function",
            "function": {"name": "forecast", "arguments": {"city": last.content}},
        }
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def _resources() -> dict[str, Any]:
    ASKED.clear()
    react_flink.FORECASTS.clear()
    return {"assistant": FakeAssistant()}


def test_a_react_agent_runs_with_a_fake_chat_model() -> None:
    """FA-5, FA-1: with the fake supplied through `resources`, the real built-in chat and tool actions run
    the loop: the model is asked twice per input, the tool runs once per input."""
    result = Runner(react_flink.WeatherAgent, resources=_resources()).run(INPUTS)
    assert result.outputs == EXPECTED
    assert result.memory == {
        "ann": {"last_answer": "It is sunny in Lyon."},
        "bo": {"last_answer": "It is sunny in Oslo."},
    }
    assert sorted(react_flink.FORECASTS) == ["Lyon", "Oslo"] and len(ASKED) == 4


def test_every_crash_of_the_react_loop_recovers_to_the_same_answer() -> None:
    """FA-5, EVT-1: crashed at each fault point of the loop, recovery gives the crash-free outputs and
    memory; a chat or tool call whose record was persisted is never made again (at most one extra model
    question or forecast, for a crash between the effect and its record)."""
    store = InMemoryStore
    inputs = [("ann", "Lyon"), ("ann", "Oslo")]  # one key: no other key's call is in flight at a crash
    baseline, points = learn(react_flink.WeatherAgent, inputs, store, resources=_resources())
    assert baseline.outputs == {"ann": ["It is sunny in Lyon.", "It is sunny in Oslo."]}
    crash_points = points_to_crash(points)
    assert {p.action for p in crash_points} >= {"ask", "chat_model_action", "tool_call_action", "answer"}
    for point in crash_points:
        resources = _resources()
        result, injector = run_scenario(
            react_flink.WeatherAgent, inputs, store, Scenario((selector_for(point),)), resources=resources
        )
        where = point.describe()
        assert injector.fired, where
        assert (result.outputs, result.memory) == (baseline.outputs, baseline.memory), where
        extra = 1 if point.phase.value == "after-effect" else 0
        assert len(ASKED) <= 4 + extra and len(react_flink.FORECASTS) <= 2 + extra, where


def test_a_real_chat_model_is_refused_with_the_hook_to_use() -> None:
    """FA-5, FA-9: without a fake, the declared Ollama setup is built as on a cluster, and the Ollama
    connection it opens is one clear error naming the resource and the `resources` hook (not a connection
    attempt)."""
    pattern = r"resource 'ollama' \(chat_model_connection\) of WeatherAgent is a OllamaChatModelConnection.*resources="
    with pytest.raises(UnsupportedFeatureError, match=pattern) as info:
        Runner(react_flink.WeatherAgent).run(INPUTS[:1])
    assert "real service" in str(info.value)


class _LongTermMemoryUser(react_flink.Agent):
    @react_flink.action(react_flink.InputEvent.EVENT_TYPE)
    @staticmethod
    def remember(event: react_flink.Event, ctx: react_flink.RunnerContext) -> None:
        memory = ctx.long_term_memory
        ctx.send_event(react_flink.OutputEvent(output=type(memory).__name__))


def test_long_term_memory_is_refused_unless_a_fake_is_supplied() -> None:
    """FA-5: ctx.long_term_memory raises UnsupportedFeatureError naming long-term memory and the hook;
    a fake under resources['long_term_memory'] is returned instead."""
    with pytest.raises(UnsupportedFeatureError, match=r"long-term memory.*long_term_memory"):
        Runner(_LongTermMemoryUser).run([("k", 1)])

    class FakeMemory:
        pass

    result = Runner(_LongTermMemoryUser, resources={"long_term_memory": FakeMemory()}).run([("k", 1)])
    assert result.outputs == {"k": ["FakeMemory"]}


def test_the_durable_fixture_crashes_the_react_agent_with_its_fake(durable: Any) -> None:
    """FA-1, FA-5: `durable.run(..., crash_at=..., resources=...)` passes the fake to the runner."""
    recovered = durable.run(react_flink.WeatherAgent, INPUTS[:1], crash_at="call0:after-record", resources=_resources())
    assert recovered.outputs == {"ann": ["It is sunny in Lyon."]}
    assert recovered.crashes
