"""A ticket-triage agent written only against the flink_agents API (0.3.1): the module a Flink Agents
user already has. Nothing in it knows about pytest-durable; test_fa_triage.py crash-tests it as is."""

from __future__ import annotations

from typing import Any, ClassVar

from flink_agents.api.agents.agent import Agent
from flink_agents.api.configuration import ConfigOption
from flink_agents.api.decorators import action
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext

from . import helpdesk

URGENT_WORDS = ConfigOption(key="triage.urgent-words", config_type=str, default="down,outage")


def classify(text: str, urgent_words: str) -> str:
    """Stands in for a model call: which queue a ticket goes to."""
    if any(word in text.lower() for word in urgent_words.split(",")):
        return "urgent"
    return "billing" if "invoice" in text.lower() else "general"


def open_case(ticket: str, queue: str) -> str:
    # The request id is made from the ticket, so a recovery that repeats the call opens no second case.
    return helpdesk.HELPDESK.open_case(f"triage-{ticket}", ticket, queue)


class Classified(Event):
    """Sent by `classify_ticket`, handled by `route`."""

    EVENT_TYPE: ClassVar[str] = "ticket_classified"

    def __init__(self, ticket: str, queue: str) -> None:
        super().__init__(type=Classified.EVENT_TYPE, attributes={"ticket": ticket, "queue": queue})

    @classmethod
    def from_event(cls, event: Event) -> Classified:
        classified = cls(ticket=event.attributes["ticket"], queue=event.attributes["queue"])
        classified.id = event.id
        return classified

    @property
    def ticket(self) -> str:
        return str(self.attributes["ticket"])

    @property
    def queue(self) -> str:
        return str(self.attributes["queue"])


class TriageAgent(Agent):
    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def classify_ticket(event: Event, ctx: RunnerContext) -> None:
        ticket: dict[str, Any] = InputEvent.from_event(event).input
        queue = ctx.durable_execute(classify, ticket["text"], ctx.config.get(URGENT_WORDS))
        counts = ctx.short_term_memory.get("queues") or {}
        ctx.short_term_memory.set("queues", {**counts, queue: counts.get(queue, 0) + 1})
        ctx.send_event(Classified(ticket=ticket["id"], queue=queue))

    @action(Classified.EVENT_TYPE)
    @staticmethod
    def route(event: Event, ctx: RunnerContext) -> None:
        classified = Classified.from_event(event)
        case = ctx.durable_execute(open_case, classified.ticket, classified.queue)
        ctx.send_event(OutputEvent(output={"ticket": classified.ticket, "queue": classified.queue, "case": case}))
