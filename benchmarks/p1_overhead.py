"""P1: durable-call overhead against a plain call, with the memory and SQLite stores, and against DBOS
steps on SQLite doing the same work. Ratios are measured side by side in one run."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from reference_runtime import Agent, Event, InputEvent, Runner, RunnerContext, action
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.sqlite import SqliteStore

from ._util import best_of, table

N = 2000


def work(i: int) -> int:
    return i * 2 + 1


class Loop(Agent):
    @action(InputEvent)
    @staticmethod
    def loop(event: Event, ctx: RunnerContext) -> None:
        for i in range(event.attributes["input"]):
            ctx.durable_execute(work, i)


def plain(n: int) -> None:
    for i in range(n):
        work(i)


def ours(store_factory: Any, n: int) -> float:
    def once() -> None:
        Runner(Loop, store_factory()).run([("k", n)])

    return best_of(once, 3) / n


def dbos_steps(tmp: Path, n: int) -> float | None:
    try:
        from dbos import DBOS
    except ImportError:
        return None
    config: Any = {"name": "p1bench", "system_database_url": f"sqlite:///{tmp / 'dbos.sqlite'}",
              "log_level": "WARNING", "run_admin_server": False}
    DBOS(config=config)

    @DBOS.step()
    def step(i: int) -> int:
        return work(i)

    @DBOS.workflow()
    def workflow(count: int) -> None:
        for i in range(count):
            step(i)

    DBOS.launch()
    try:
        return best_of(lambda: workflow(n), 3) / n
    finally:
        DBOS.destroy()


def main() -> list[tuple[str, ...]]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        counter = iter(range(10**6))
        plain_t = best_of(lambda: plain(N * 100), 5) / (N * 100)
        mem_t = ours(InMemoryStore, N)
        sqlite_full = ours(lambda: SqliteStore(tmp / f"full-{next(counter)}.db"), N // 4)
        sqlite_normal = ours(lambda: SqliteStore(tmp / f"norm-{next(counter)}.db", synchronous="NORMAL"), N // 4)
        dbos_t = dbos_steps(tmp, N // 4)
    rows: list[tuple[str, ...]] = [("P1 per-call cost", "µs/call", "x plain", "x DBOS step")]

    def row(name: str, t: float | None) -> tuple[str, ...]:
        if t is None:
            return (name, "n/a (dbos not installed)", "", "")
        vs_dbos = f"{t / dbos_t:.2f}" if dbos_t else "n/a"
        return (name, f"{t * 1e6:.2f}", f"{t / plain_t:.0f}", vs_dbos)

    rows += [
        row("plain function call", plain_t),
        row("durable_execute, memory store", mem_t),
        row("durable_execute, SQLite synchronous=FULL", sqlite_full),
        row("durable_execute, SQLite synchronous=NORMAL", sqlite_normal),
        row("DBOS @step in @workflow, SQLite", dbos_t),
    ]
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
