"""Stand-in for the outside world: a helpdesk API that opens a case per request id and a notifier."""

from __future__ import annotations


class Helpdesk:
    def __init__(self) -> None:
        self.cases: dict[str, tuple[str, str]] = {}

    def open_case(self, request_id: str, ticket: str, queue: str) -> str:
        # Like most ticketing APIs, a repeated request id returns the case it already opened.
        if request_id not in self.cases:
            self.cases[request_id] = (ticket, queue)
        return f"case-{sorted(self.cases).index(request_id) + 1:03d}"


HELPDESK = Helpdesk()
