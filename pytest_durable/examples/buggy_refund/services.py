"""Stand-ins for the outside world: a payment provider and a mailer that remember every call."""

from __future__ import annotations


class Payments:
    def __init__(self) -> None:
        self.refunds: list[tuple[str, int, str]] = []

    def refund(self, order: str, amount: int, request_id: str) -> str:
        # Like a real provider, a repeated request id is refunded once.
        if all(r != request_id for _, _, r in self.refunds):
            self.refunds.append((order, amount, request_id))
        return f"receipt {request_id}"


class Mailer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str | None]] = []

    def send(self, to: str, text: str, message_id: str | None = None) -> None:
        # Like most mail APIs, a repeated message id is delivered once; without one, every call is a mail.
        if message_id is None or all(m != message_id for _, _, m in self.sent):
            self.sent.append((to, text, message_id))


PAYMENTS = Payments()
MAILER = Mailer()
