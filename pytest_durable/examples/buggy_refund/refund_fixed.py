"""The refund agent of the tutorial after both fixes."""

from __future__ import annotations

from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action, current_call

from . import services


def issue_refund(order: str, amount: int) -> str:
    # fix 2: the request id is the durable call's idempotency id, the same on every recovery.
    return services.PAYMENTS.refund(order, amount, current_call().idempotency_key)


def send_email(order: str, text: str) -> None:
    services.MAILER.send(order, text, current_call().idempotency_key)


class RefundAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def refund(event: Event, ctx: RunnerContext) -> None:
        order, amount = event.attributes["input"]["order"], event.attributes["input"]["amount"]
        receipt = ctx.durable_execute(issue_refund, order, amount)
        ctx.durable_execute(send_email, order, f"refunded {amount}")  # fix 1: the effect is a durable call
        ctx.short_term_memory.set("last_receipt", receipt)
        ctx.send_event(OutputEvent(receipt))
