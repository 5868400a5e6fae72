"""P8: what memory operations cost with 10, 1 000 and 100 000 fields already in a key's short-term
memory (target: 100 000 fields within 2x of 10): one ``set``, an action's completion, a checkpoint and
a failover. CPU time of this process, so other load on the machine does not skew the ratios.
"""

from __future__ import annotations

import time

from reference_runtime import Agent, CrashAt, Event, FaultInjector, InputEvent, Phase, Runner, RunnerContext, action
from reference_runtime.memory import FlatMemory, MemoryView
from reference_runtime.stores.memory import InMemoryStore

from ._util import judge, point, spaced, table

FIELDS = (10, 1_000, 100_000)
REPEAT = 500


class Fill(Agent):
    """Input n > 0: write fields f0..f(n-1); input 0: set one more field (the measured run)."""

    @action(InputEvent)
    @staticmethod
    def fill(event: Event, ctx: RunnerContext) -> None:
        mem = ctx.short_term_memory
        n = event.attributes["input"]
        if n:
            for i in range(n):
                mem.set(f"f{i}", i)
        else:
            mem.set("last", (mem.get("last") or 0) + 1)


def _cpu(fn: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(repeat):
            fn()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best / repeat


def set_cost(fields: int) -> float:
    memory = FlatMemory()
    view = MemoryView(memory)
    for i in range(fields):
        view.set(f"f{i}", i)
    view.commit()
    memory.freeze()  # a checkpoint exists, so commits log what they replace
    counter = iter(range(10**9))

    def one() -> None:
        v = MemoryView(memory)
        v.set(f"g{next(counter)}", 1)  # a new field: the parent object gains a child
        v.commit()

    return _cpu(one, REPEAT)


def run_cost(fields: int, checkpoint: bool) -> float:
    runner = Runner(Fill, InMemoryStore(), checkpoint_every=1 if checkpoint else None)
    runner.run([("k", fields)])
    return _cpu(lambda: runner.run([("k", 0)]), REPEAT)


def failover_cost(fields: int) -> float:
    runner = Runner(Fill, InMemoryStore(), checkpoint_every=1)
    runner.run([("k", fields)])

    def one() -> None:
        # crash after the action completed (its writes are committed), then fail over and recover
        runner.injector = FaultInjector([CrashAt(Phase.AFTER_COMPLETE)])
        runner.run([("k", 0)])

    return _cpu(one, REPEAT // 5)


def main() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("P8 with N memory fields", "N", "µs", "x 10 fields")]
    worst = 0.0
    for name, fn in (
        ("set one new field", set_cost),
        ("run completing one action", lambda n: run_cost(n, False)),
        ("run + checkpoint", lambda n: run_cost(n, True)),
        ("crash, failover and recovery", failover_cost),
    ):
        base = None
        for n in FIELDS:
            t = fn(n)
            base = base or t
            point("P8 memory operations by fields held", name, n, t * 1e6, xlabel="memory fields", ylabel="µs")
            rows.append((name, f"{n:,}".replace(",", " "), f"{t * 1e6:.1f}", f"{t / base:.2f}"))
            worst = max(worst, t / base)
    print(table(rows))
    judge(f"P8 memory operations, {spaced(FIELDS[-1])} fields against {FIELDS[0]}, worst", worst, 2)
    return rows


if __name__ == "__main__":
    main()
