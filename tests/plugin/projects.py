"""Sources of the small user projects the plugin tests write with pytester."""

from __future__ import annotations

#: A user's agent module: ``Refund`` makes one durable call, ``charge``, and outputs its receipt.
REFUND_AGENT = """
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action

def charge(amount):
    return f"charged {amount}"

class Refund(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(charge, event.attributes["input"])))
"""
