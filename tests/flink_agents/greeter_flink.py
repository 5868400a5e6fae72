"""A small deterministic agent written only against flink_agents 0.3.1, for the plugin tests: a durable
call, a user event between two actions, short-term memory and an output."""

from __future__ import annotations

from typing import ClassVar

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext


def greeting(name: str, style: str) -> str:
    return f"{style} {name}"


class Greeted(Event):
    EVENT_TYPE: ClassVar[str] = "greeted"

    def __init__(self, text: str) -> None:
        super().__init__(type=Greeted.EVENT_TYPE, attributes={"text": text})

    @property
    def text(self) -> str:
        return str(self.attributes["text"])


class Greeter(Agent):
    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def greet(event: Event, ctx: RunnerContext) -> None:
        style = ctx.config.get_str("greeter.style", "hello")
        ctx.send_event(Greeted(ctx.durable_execute(greeting, InputEvent.from_event(event).input, style)))

    @action(Greeted.EVENT_TYPE)
    @staticmethod
    def remember(event: Event, ctx: RunnerContext) -> None:
        seen = ctx.short_term_memory.get("seen") or []
        ctx.short_term_memory.set("seen", [*seen, event.get_attr("text")])
        ctx.send_event(OutputEvent(output=event.get_attr("text")))
