"""The refund agent of the tutorial (docs/plugin/tutorial.md), with its two bugs."""

from __future__ import annotations

import time

from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action

from . import services


def issue_refund(order: str, amount: int, request_id: str) -> str:
    return services.PAYMENTS.refund(order, amount, request_id)


class RefundAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def refund(event: Event, ctx: RunnerContext) -> None:
        order, amount = event.attributes["input"]["order"], event.attributes["input"]["amount"]
        request_id = f"{order}-{time.time()}"  # bug 2: a new argument on every execution
        receipt = ctx.durable_execute(issue_refund, order, amount, request_id)
        services.MAILER.send(order, f"refunded {amount}")  # bug 1: a side effect outside any durable call
        ctx.short_term_memory.set("last_receipt", receipt)
        ctx.send_event(OutputEvent(receipt))
