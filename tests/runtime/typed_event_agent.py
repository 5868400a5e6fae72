"""An agent whose actions hand typed events to each other (used by tests/runtime/test_typed_events.py)."""

from __future__ import annotations

from typing import Any

from reference_runtime import Agent, Event, OutputEvent, RunnerContext, ToolResponseEvent, action


class Priced(Event):
    """A user event with a property over its attributes and a plain instance field."""

    TYPE = "priced"

    def __init__(self, item: str, price: int) -> None:
        super().__init__(self.TYPE, {"item": item, "price": price})
        self.currency = "EUR"  # an instance field, not an attribute

    @property
    def price(self) -> int:
        return int(self.attributes["price"])


class TypedChain(Agent):
    @action("_input_event")
    @staticmethod
    def quote(event: Event, ctx: RunnerContext) -> None:
        price = ctx.durable_execute(lookup, event.attributes["input"])
        ctx.send_event(Priced(event.attributes["input"], price))
        ctx.send_event(ToolResponseEvent("req-1", {"t1": price}, success={"t1": True}))

    @action(Priced)
    @staticmethod
    def bill(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, Priced), type(event)
        ctx.send_event(OutputEvent({"price": event.price, "currency": event.currency}))

    @action(ToolResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ToolResponseEvent), type(event)
        ctx.send_event(OutputEvent({"responses": event.responses}))


def lookup(item: Any) -> int:
    return len(str(item)) * 10
