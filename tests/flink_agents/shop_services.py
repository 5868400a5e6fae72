"""The outside world of the shop agents: a bank that charges on every call and a mailer that delivers a
message id once. Plain Python, shared by the flink_agents agent and its reference_runtime twin."""

from __future__ import annotations


class Bank:
    def __init__(self) -> None:
        self.charges: list[tuple[str, int]] = []

    def charge(self, order: str, amount: int) -> str:
        """Charges on every call; the receipt counts the charges of the order, so a repeat shows."""
        self.charges.append((order, amount))
        return f"receipt {order} {amount} #{sum(o == order for o, _ in self.charges)}"

    def receipt_for(self, order: str) -> str | None:
        for o, amount in self.charges:
            if o == order:
                return f"receipt {o} {amount} #1"
        return None


class Mailer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def send(self, message_id: str, text: str) -> None:
        if all(m != message_id for m, _ in self.sent):
            self.sent.append((message_id, text))


BANK = Bank()
MAILER = Mailer()


# -- the durable functions both agents call (one module, so their function ids are the same) -----------


def price_of(items: list[int]) -> int:
    return sum(items)


def charge(order: str, amount: int) -> str:
    return BANK.charge(order, amount)


def reconciler_for(order: str, amount: int):  # type: ignore[no-untyped-def]
    """Ask the bank whether the charge happened; charge if it did not."""

    def check() -> str:
        return BANK.receipt_for(order) or BANK.charge(order, amount)

    return check


def notify(order: str, text: str) -> str:
    """Tool: mail the customer (the message id is the order, so a repeat is delivered once)."""
    MAILER.send(f"mail-{order}", text)
    return f"mailed {order}"
