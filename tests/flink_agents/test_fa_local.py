"""Flink Agents' local execution environment and LocalRunner, swapped for ones over the reference Runner
(spec FA-11)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import flink_agents.examples.quickstart as quickstart
import flink_agents.runtime.local_runner as local_runner
import pytest
from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext
from flink_agents.examples.quickstart.agents.custom_types_and_resources import ProductReview
from flink_agents.runtime.local_execution_environment import LocalExecutionEnvironment

from reference_runtime.errors import UnsupportedFeatureError
from reference_runtime.flink_agents_compat import local
from reference_runtime.flink_agents_compat.local import ReferenceExecutionEnvironment, ReferenceLocalRunner

from .example_fakes import FakeConnection, review_analyst


class Counter(Agent):
    """Counts the inputs of each key in short-term memory, durably doubles the input."""

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def count(event: Event, ctx: RunnerContext) -> None:
        seen = (ctx.short_term_memory.get("seen") or 0) + 1
        ctx.short_term_memory.set("seen", seen)
        doubled = ctx.durable_execute(lambda x: x * 2, InputEvent.from_event(event).input)
        ctx.send_event(OutputEvent(output={"seen": seen, "doubled": doubled, "mode": ctx.config.get_str("mode", "-")}))


@pytest.fixture
def installed() -> Iterator[None]:
    uninstall = local.install()
    try:
        yield
    finally:
        uninstall()


def test_install_makes_flink_agents_hand_out_the_reference_environment(installed: None) -> None:
    """FA-11: after `install()`, the local environment Flink Agents creates and the `LocalRunner` name are
    the reference runtime's; the function it returns undoes both."""
    assert isinstance(AgentsExecutionEnvironment.get_execution_environment(), ReferenceExecutionEnvironment)
    assert local_runner.LocalRunner is ReferenceLocalRunner


def test_uninstall_restores_flink_agents_own_environment() -> None:
    """FA-11: undoing the swap gives Flink Agents' own local environment back."""
    local.install()()
    assert isinstance(AgentsExecutionEnvironment.get_execution_environment(), LocalExecutionEnvironment)
    assert local_runner.LocalRunner is not ReferenceLocalRunner


def test_the_environment_runs_inputs_with_keyed_memory_and_its_config() -> None:
    """FA-11: `from_list`/`apply`/`execute`/`to_list` as Flink Agents' local environment, on the reference
    runtime: memory per key across inputs, durable calls, the environment's config in `ctx.config`."""
    env = ReferenceExecutionEnvironment()
    env.get_config().set_str("mode", "test")
    inputs: list[dict[str, object]] = []
    outputs = env.from_list(inputs).apply(Counter()).to_list()
    inputs += [{"key": "a", "value": 1}, {"k": "b", "v": 2}, {"key": "a", "value": 3}]
    env.execute()
    assert outputs == [
        {"a": {"seen": 1, "doubled": 2, "mode": "test"}},
        {"b": {"seen": 1, "doubled": 4, "mode": "test"}},
        {"a": {"seen": 2, "doubled": 6, "mode": "test"}},
    ]


def test_the_local_runner_takes_records_and_keeps_the_callers_keys() -> None:
    """FA-11: `run(key=..., value=...)` returns the key (a new UUID when absent) and outputs carry the key
    object as given, as LocalRunner's do; a record without a value is Flink Agents' RuntimeError."""
    runner = ReferenceLocalRunner(Counter(), None)
    assert runner.run(key=7, value=1) == 7
    generated = runner.run(value=5)
    assert isinstance(generated, uuid.UUID)
    assert runner.get_outputs() == [
        {7: {"seen": 1, "doubled": 2, "mode": "-"}},
        {generated: {"seen": 1, "doubled": 10, "mode": "-"}},
    ]
    with pytest.raises(RuntimeError, match="'v' or 'value'"):
        runner.run(key=1)


def test_a_yaml_agent_is_applied_by_name_with_its_resources_and_tool_requests_are_captured() -> None:
    """FA-11: `load_yaml` then `apply(name)` runs the YAML-declared quickstart agent, its shared
    resources added; `get_tool_request_events` returns the ToolRequestEvents its model caused."""
    env = ReferenceExecutionEnvironment(resources={"ollama_server": FakeConnection.answering(review_analyst)})
    env.load_yaml(Path(quickstart.__file__).parent / "yaml_review_analysis_agent.yaml")
    inputs = [{"key": "p2", "value": ProductReview(id="p2", review="It arrived broken, bad shipping")}]
    outputs = env.from_list(inputs).apply("review_analysis_agent").to_list()
    env.execute()
    assert outputs == [{"p2": {"id": "p2", "score": 1, "reasons": ["shipping damage"]}}]
    [request] = env.get_tool_request_events()
    assert request.tool_calls[0]["function"]["name"] == "notify_shipping_manager"
    with pytest.raises(ValueError, match=r"No agent named 'nope'.*load_yaml"):
        ReferenceExecutionEnvironment().from_list([]).apply("nope")


def test_misuse_is_refused_as_by_the_local_environment() -> None:
    """FA-11: the local environment's own refusals (apply twice, from_list twice, execute twice), and one
    UnsupportedFeatureError for what needs a Flink job (a DataStream or a Table)."""
    env = ReferenceExecutionEnvironment()
    builder = env.from_list([{"key": "a", "value": 1}]).apply(Counter())
    with pytest.raises(RuntimeError, match="apply multiple agents"):
        builder.apply(Counter())
    with pytest.raises(RuntimeError, match="from_list multiple times"):
        env.from_list([])
    env.execute()
    with pytest.raises(RuntimeError, match="execute multiple times"):
        env.execute()
    with pytest.raises(UnsupportedFeatureError, match="from_datastream needs a Flink job"):
        env.from_datastream(object())
    with pytest.raises(UnsupportedFeatureError, match="to_table needs a Flink job"):
        builder.to_table(None, None)
