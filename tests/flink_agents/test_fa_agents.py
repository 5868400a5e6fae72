"""How the adapter finds a flink_agents agent's actions, and what it refuses (spec FA-1, FA-5)."""

from __future__ import annotations

from typing import Any

import pytest
from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.function import JavaFunction
from flink_agents.api.runner_context import RunnerContext

from reference_runtime import Runner
from reference_runtime.errors import UnsupportedFeatureError


def shout(event: Event, ctx: RunnerContext) -> None:
    text = ctx.durable_execute(str.upper, InputEvent.from_event(event).input)
    ctx.send_event(OutputEvent(output=f"{text}{ctx.get_action_config_value('suffix')}"))


def test_an_agent_instance_built_with_add_action_runs() -> None:
    """FA-1, FA-6: an Agent() instance with add_action (and its **config) is an agent for the runner."""
    agent = Agent()
    agent.add_action("shout", [InputEvent.EVENT_TYPE], shout, suffix="!")
    assert Runner(agent).run([("k", "hi"), ("k", "yo")]).outputs == {"k": ["HI!", "YO!"]}


class Base(Agent):
    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def inherited(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=1))


class Derived(Base):
    pass


def test_an_inherited_action_is_refused_as_flink_agents_refuses_it() -> None:
    """FA-1: Flink Agents' planner refuses @action methods inherited from a base agent; so does the adapter."""
    with pytest.raises(TypeError, match=r"Inherited @action 'Base\.inherited'"):
        Runner(Derived)


class CrossLanguage(Agent):
    @action(
        InputEvent.EVENT_TYPE,
        target=JavaFunction(
            qualname="org.example.Actions",
            method_name="run",
            parameter_types=["org.apache.flink.agents.api.Event", "org.apache.flink.agents.api.context.RunnerContext"],
        ),
    )
    @staticmethod
    def java(event: Event, ctx: RunnerContext) -> None:
        raise NotImplementedError


def test_a_cross_language_action_is_one_clear_error() -> None:
    """FA-5: an action that targets a Java function cannot run in-process and says so."""
    with pytest.raises(UnsupportedFeatureError, match="cross-language"):
        Runner(CrossLanguage)


def test_an_added_action_that_cannot_be_resolved_by_name_is_one_clear_error() -> None:
    """FA-1: add_action functions are resolved by module and qualname, as in a Flink job."""

    def local(event: Any, ctx: Any) -> None:
        return None

    agent = Agent()
    agent.add_action("local", [InputEvent.EVENT_TYPE], local)
    with pytest.raises(TypeError, match="define the function at module level"):
        Runner(agent)


def switch(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=ctx.config.get_bool("shop.open")))


@pytest.mark.parametrize(("value", "expected"), [("yes", True), ("OFF", False), (1, True), ("false", False)])
def test_config_get_bool_uses_the_runtimes_one_boolean_parser(value: Any, expected: bool) -> None:
    """FA-6, CFG-3: ``ctx.config.get_bool`` reads a switch with the runtime's boolean parser (DE-14)."""
    agent = Agent()
    agent.add_action("switch", [InputEvent.EVENT_TYPE], switch)
    assert Runner(agent, config={"shop.open": value}).run([("k", 0)]).outputs == {"k": [expected]}


def test_config_get_bool_refuses_a_non_boolean_with_a_config_error() -> None:
    """FA-6, CFG-3: a value that is no boolean is one ConfigError naming the key and the value."""
    from reference_runtime.config import ConfigError

    agent = Agent()
    agent.add_action("switch", [InputEvent.EVENT_TYPE], switch)
    with pytest.raises(ConfigError, match=r"config 'shop\.open' must be a boolean .*got 'maybe'") as info:
        Runner(agent, config={"shop.open": "maybe"}).run([("k", 0)])
    assert (info.value.key, info.value.value) == ("shop.open", "maybe")
