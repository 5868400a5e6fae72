"""P7: runs per second on a runner that already holds 100, 10 000 or 100 000 keys, with and without a
checkpoint after every input (target: 10 000 and 100 000 keys within 1.3x of 100 keys).

Each measured run processes one input of an existing key (read memory, one durable call, write memory,
one output), on the memory store, as a long-lived job does. Setting up the keys is not timed. CPU time
of this process (``time.process_time``), so other load on the machine does not skew the ratios.
"""

from __future__ import annotations

import time

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.stores.memory import InMemoryStore

from ._util import judge, point, rotated, spaced, table

KEYS = (100, 10_000, 100_000)
RUNS = 2_000


def bump(n: int) -> int:
    return n + 1


class Count(Agent):
    @action(InputEvent)
    @staticmethod
    def count(event: Event, ctx: RunnerContext) -> None:
        mem = ctx.short_term_memory
        n = ctx.durable_execute(bump, mem.get("n") or 0)
        mem.set("n", n)
        ctx.send_event(OutputEvent(n))


ATTEMPTS = 5


def _timed(runner: Runner, keys: int, attempt: int) -> float:
    """CPU seconds of RUNS runs, each one input of an existing key, spread over the keys."""
    step = max(1, keys // RUNS)
    start = time.process_time()
    for j in range(RUNS):
        runner.run([(f"key-{(j * step + attempt) % keys}", 1)])
    return time.process_time() - start


def measure() -> dict[tuple[str, int], float]:
    """Runs per second at each number of keys: the best of ATTEMPTS, the sizes taking turns attempt by attempt
    in a rotated order, so a slow spell of the host reaches them alike (measured one size after the other,
    one size read 1.3x slower than the others in some runs of all benchmarks)."""
    out: dict[tuple[str, int], float] = {}
    for label, every in (("no checkpoint per input", None), ("checkpoint per input", 1)):
        runners = {}
        for keys in KEYS:
            runners[keys] = Runner(Count, InMemoryStore(), checkpoint_every=every)
            runners[keys].run([(f"key-{i}", 0) for i in range(keys)])
        best = dict.fromkeys(KEYS, float("inf"))
        for attempt in range(ATTEMPTS):
            for keys in rotated(KEYS, attempt):
                best[keys] = min(best[keys], _timed(runners[keys], keys, attempt))
        runners.clear()
        for keys in KEYS:
            out[(label, keys)] = rate = RUNS / best[keys]
            point("P7 runs per second by keys held", label, keys, rate, xlabel="keys held", ylabel="runs/s")
    return out


def main() -> list[tuple[str, ...]]:
    figures = measure()
    rows: list[tuple[str, ...]] = [("P7 runs/s by keys held", "keys", "runs/s", "x 100 keys (time)")]
    for (label, keys), rate in figures.items():
        rows.append(
            (
                label,
                f"{keys:,}".replace(",", " "),
                f"{rate:,.0f}".replace(",", " "),
                f"{figures[(label, KEYS[0])] / rate:.2f}",
            )
        )
    print(table(rows))
    worst = max(figures[(label, KEYS[0])] / rate for (label, _), rate in figures.items())
    judge(f"P7 runs/s at up to {spaced(KEYS[-1])} keys against {KEYS[0]}, worst", worst, 1.3)
    return rows


if __name__ == "__main__":
    main()
