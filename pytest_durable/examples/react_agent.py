"""A ReAct agent whose tools have real side effects in a SQLite file, kept exactly-once under crashes.

Each tool shows one technique:

* ``send_email`` (a tool the model calls) uses the **idempotency call id**
  (``current_call().idempotency_key``): the outbox table has it as primary key, so a re-executed call inserts
  nothing new.
* ``reserve_seat`` (called by the action) uses a **reconciler**: if a crash leaves the call PENDING, recovery
  asks the table whether the reservation exists instead of reserving again.
* ``ChargeCard`` is a **two-phase commit**: prepare stages a payment row, commit flips it to visible; the
  runtime records prepare before commit and commits exactly once after any crash.

Run ``python -m pytest_durable.examples.react_agent [DB]``: it crashes the agent at every fault point in turn, recovers,
and prints how many rows each table holds (1 each, every time).
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from reference_runtime import (
    Agent,
    ChatRequestEvent,
    ChatResponseEvent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Runner,
    RunnerContext,
    action,
    current_call,
)
from reference_runtime.stores import SqliteStore

DB = {"path": ""}


def _db() -> sqlite3.Connection:
    conn = sqlite3.connect(DB["path"], isolation_level=None)
    conn.executescript(
        "CREATE TABLE IF NOT EXISTS outbox (call_id TEXT PRIMARY KEY, body TEXT);"
        "CREATE TABLE IF NOT EXISTS seats (seat TEXT PRIMARY KEY, holder TEXT);"
        "CREATE TABLE IF NOT EXISTS payments (txn TEXT PRIMARY KEY, amount INTEGER, state TEXT);"
    )
    return conn


def send_email(to: str, body: str) -> str:
    with _db() as conn:
        conn.execute("INSERT OR IGNORE INTO outbox VALUES (?, ?)", (current_call().idempotency_key, f"{to}: {body}"))
    return "sent"


def reserve_seat(seat: str, holder: str) -> str:
    with _db() as conn:
        conn.execute("INSERT INTO seats VALUES (?, ?)", (seat, holder))  # fails if run twice
    return seat


class ChargeCard:
    """Two-phase commit against the payments table."""

    def __init__(self, amount: int) -> None:
        self.amount = amount

    def prepare(self) -> str:
        txn = f"txn:{current_call().idempotency_key}"
        with _db() as conn:
            conn.execute("INSERT OR IGNORE INTO payments VALUES (?, ?, 'prepared')", (txn, self.amount))
        return txn

    def commit(self, txn: str) -> str:
        with _db() as conn:
            conn.execute("UPDATE payments SET state = 'committed' WHERE txn = ?", (txn,))
        return txn

    def abort(self, txn: str) -> None:
        with _db() as conn:
            conn.execute("UPDATE payments SET state = 'aborted' WHERE txn = ?", (txn,))

    def is_committed(self, txn: str) -> bool:
        with _db() as conn:
            row = conn.execute("SELECT state FROM payments WHERE txn = ?", (txn,)).fetchone()
        return bool(row and row[0] == "committed")


def seat_reconciler(seat: str, holder: str) -> Any:
    """Recovery's question for a PENDING reservation: did it land? If not, make it now."""

    def reconcile() -> str:
        with _db() as conn:
            row = conn.execute("SELECT holder FROM seats WHERE seat = ?", (seat,)).fetchone()
        return seat if row and row[0] == holder else reserve_seat(seat, holder)

    return reconcile


class TravelModel:
    """A scripted model: first asks for the e-mail tool, then answers from its result."""

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        results = [m for m in messages if m.get("role") == "tool"]
        if not results:
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "mail", "function": {"name": "send_email", "arguments": {"to": "ann", "body": "booked"}}},
                ],
            }
        return {"role": "assistant", "content": "done: " + ", ".join(str(m["content"]) for m in results)}


class TravelAgent(Agent):
    tools: ClassVar[dict[str, Any]] = {"send_email": send_email}
    chat_models: ClassVar[dict[str, Any]] = {"travel": TravelModel()}

    @action(InputEvent)
    @staticmethod
    def plan(event: Event, ctx: RunnerContext) -> None:
        # The payment is a two-phase commit run directly by the action.
        txn = ctx.durable_execute(ChargeCard(event.attributes["input"]))
        seat = ctx.durable_execute(reserve_seat, "12A", "ann", reconciler=seat_reconciler("12A", "ann"))
        ctx.short_term_memory.set("booking", {"txn": txn, "seat": seat})
        ctx.send_event(ChatRequestEvent("travel", [{"role": "user", "content": "book seat 12A for ann"}]))

    @action(ChatResponseEvent)
    @staticmethod
    def reply(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(event.attributes["response"]))


def count_rows(path: str) -> dict[str, int]:
    DB["path"] = path
    with _db() as conn:
        rows = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("outbox", "seats", "payments")}
        rows["committed"] = conn.execute("SELECT COUNT(*) FROM payments WHERE state = 'committed'").fetchone()[0]
    return rows


def run_once(workdir: Path, crash: CrashAt | None) -> tuple[Any, dict[str, int]]:
    DB["path"] = str(workdir / "world.db")
    store_path = workdir / "state.db"
    for p in (Path(DB["path"]), store_path):
        p.unlink(missing_ok=True)
    runner = Runner(
        TravelAgent,
        SqliteStore(store_path),
        injector=FaultInjector([crash] if crash else []),
        reopen_store=lambda: SqliteStore(store_path),
    )
    result = runner.run([("ann", 120)])
    return result, count_rows(DB["path"])


def main(argv: list[str]) -> int:
    workdir = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="react-agent-"))
    workdir.mkdir(parents=True, exist_ok=True)
    DB["path"] = str(workdir / "world.db")
    learn = FaultInjector()
    Path(DB["path"]).unlink(missing_ok=True)
    baseline = Runner(TravelAgent, SqliteStore(workdir / "baseline.db"), injector=learn).run([("ann", 120)])
    print(f"crash-free: {baseline.outputs['ann']} rows={count_rows(DB['path'])}")
    bad = 0
    for point in learn.trace:
        result, rows = run_once(workdir, CrashAt.point(point))
        ok = rows == {"outbox": 1, "seats": 1, "payments": 1, "committed": 1} and result.outputs == baseline.outputs
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} crash at {point.describe():<95} rows={rows}")
    print(f"{len(learn.trace)} crash points, {bad} with duplicated or lost effects")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
