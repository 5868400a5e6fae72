"""The tutorial's fixed refund agent grown to two actions, for the crash-coverage chapter
(docs/plugin/coverage.md): ``refund`` refunds and hands the receipt to ``notify``, which e-mails the customer.
Both durable calls have reconcilers, since neither service can be asked to deduplicate here."""

from __future__ import annotations

from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action, current_call

from . import services


def issue_refund(order: str, amount: int) -> str:
    return services.PAYMENTS.refund(order, amount, current_call().idempotency_key)


def find_refund(order: str, amount: int) -> str:
    """The reconciler's question to the provider: did the interrupted attempt refund?"""
    key = current_call().idempotency_key
    if any(request_id == key for _, _, request_id in services.PAYMENTS.refunds):
        return f"receipt {key}"
    return issue_refund(order, amount)  # the crash came before the provider saw the refund


def send_email(order: str, text: str) -> None:
    services.MAILER.send(order, text, current_call().idempotency_key)


class RefundAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def refund(event: Event, ctx: RunnerContext) -> None:
        order, amount = event.attributes["input"]["order"], event.attributes["input"]["amount"]
        receipt = ctx.durable_execute(issue_refund, order, amount, reconciler=lambda: find_refund(order, amount))
        ctx.send_event(Event(type="Refunded", attributes={"order": order, "receipt": receipt}))

    @action("Refunded")
    @staticmethod
    def notify(event: Event, ctx: RunnerContext) -> None:
        order, receipt = event.attributes["order"], event.attributes["receipt"]

        def mail_sent() -> None:
            if not any(message_id == current_call().idempotency_key for _, _, message_id in services.MAILER.sent):
                send_email(order, f"refunded: {receipt}")

        ctx.durable_execute(send_email, order, f"refunded: {receipt}", reconciler=mail_sent)
        ctx.short_term_memory.set("last_receipt", receipt)
        ctx.send_event(OutputEvent(receipt))
