"""The README's refund agent: two durable calls per order, so a crash can land between them.

Call 0 looks the order up, call 1 refunds it. The payment provider (``PAYMENTS``, a stand-in that keeps every
refund in a dict) is told the durable call's idempotency key, as a real provider's idempotency header would
be, so the refund that recovery repeats after a crash between its effect and its record is booked once.

``python -m pytest_durable.examples.refund`` crashes the agent right after the refund's effect, recovers, and prints the
output and the refunds booked.
"""

from __future__ import annotations

from typing import Any

from reference_runtime import (
    Agent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
    current_call,
)

ORDERS: dict[str, dict[str, Any]] = {"order-7": {"customer": "ada", "paid": 30}}
#: idempotency key -> (order, amount): what the payment provider booked.
PAYMENTS: dict[str, tuple[str, int]] = {}


def look_up_order(order: str) -> dict[str, Any]:
    return dict(ORDERS[order])


def issue_refund(order: str, amount: int) -> str:
    # setdefault: a request repeated with the same idempotency key is booked once, as a real provider does.
    PAYMENTS.setdefault(current_call().idempotency_key, (order, amount))
    return f"refunded {amount}"


class RefundAgent(Agent):
    """Refunds ``{"amount": N}`` of the order named by the input's key, at most what was paid."""

    @action(InputEvent)
    @staticmethod
    def refund(event: Event, ctx: RunnerContext) -> None:
        order = ctx.durable_execute(look_up_order, ctx.key)  # call 0
        amount = min(event.attributes["input"]["amount"], order["paid"])
        ctx.send_event(OutputEvent(ctx.durable_execute(issue_refund, ctx.key, amount)))  # call 1


def main() -> int:
    crash = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=1)])
    result = Runner(RefundAgent, injector=crash).run([("order-7", {"amount": 30})])
    print(f"outputs {result.outputs}, failovers {result.failovers}, refunds booked {list(PAYMENTS.values())}")
    return 0 if result.outputs == {"order-7": ["refunded 30"]} and len(PAYMENTS) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
