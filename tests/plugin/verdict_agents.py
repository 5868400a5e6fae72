"""Agents that ship an effect twice after a crash, for the shared-verdict tests (CLI-1, CLI-2)."""

from __future__ import annotations

from typing import Any

from reference_runtime import (
    Agent,
    Backoff,
    Event,
    InputEvent,
    OutputEvent,
    RetryPolicy,
    RunnerContext,
    action,
    current_call,
)

SENT: list[str] = []
CHARGED: list[int] = []


def notify(text: str) -> None:
    SENT.append(text)


def charge(amount: int) -> str:
    CHARGED.append(amount)
    return f"charged {amount}"


def double(x: int) -> int:
    return x * 2


class OutsideEffect(Agent):
    """Bug 1: the notification is sent outside any durable call, so a crash before the action completes
    sends it again when the action re-runs."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        value = ctx.durable_execute(double, event.attributes["input"])
        notify(f"sent {value}")
        ctx.send_event(OutputEvent(value))


class NonIdempotent(Agent):
    """Bug 2: a non-idempotent call without a reconciler; a crash after its effect, before its record,
    charges again on recovery (DE-6)."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(charge, event.attributes["input"])))


class Payments:
    """A stateful fake payment provider: it remembers every charge by request id."""

    def __init__(self) -> None:
        self.charges: dict[str, int] = {}

    def charge(self, request_id: str, amount: int) -> str:
        self.charges[request_id] = amount
        return f"receipt {request_id}"

    def receipt(self, request_id: str) -> str | None:
        return f"receipt {request_id}" if request_id in self.charges else None


#: Where the agent finds the provider; each test puts its own fake (or a durable.world) here.
PAYMENTS: Any = Payments()


def pay(amount: int) -> str:
    return str(PAYMENTS.charge(current_call().idempotency_key, amount))


class Reconciled(Agent):
    """Bug 2 fixed with a reconciler that asks the provider whether this call's charge happened."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        amount = event.attributes["input"]

        def check() -> str:
            return PAYMENTS.receipt(current_call().idempotency_key) or pay(amount)

        ctx.send_event(OutputEvent(ctx.durable_execute(pay, amount, reconciler=check)))


#: Attempts of :func:`flaky_once` so far, over every run of the process.
FLAKY_ATTEMPTS: list[str] = []


def flaky_once(key: str) -> str:
    """Fails every other attempt with a transient error."""
    FLAKY_ATTEMPTS.append(key)
    if len(FLAKY_ATTEMPTS) % 2:
        raise ConnectionError("transient")
    return f"done {key}"


class RetriesAfterAnHour(Agent):
    """A call retried after long backoffs (an hour, capped at the policy's 30 s): on a real clock a sweep of it
    would wait that long at every recovery."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        policy = RetryPolicy(max_attempts=3, backoff=Backoff(initial=3600.0, jitter=0.0), retry_on=(ConnectionError,))
        ctx.send_event(OutputEvent(ctx.durable_execute(flaky_once, event.attributes["input"], retry=policy)))
