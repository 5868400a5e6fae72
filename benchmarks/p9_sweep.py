"""P9: a full sweep (one crash-and-recover scenario per fault point, each checked) of an agent with
50, 200 and 500 durable calls, on the memory store (target: 500 calls in <= 2.5 s; per-scenario cost at
most linear in calls). CPU time of this process.

Each scenario runs the agent up to its crash point, fails over and recovers: recovery replays the
recorded calls and executes the rest, so a scenario does one durable-call operation per call of the
agent and more. The floor row times one crash-free run plus one full replay, the least any scenario can do.
"""

from __future__ import annotations

import time

from pytest_durable.sweep import sweep
from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.stores.memory import InMemoryStore

from ._util import point, table

SIZES = (50, 200, 500)


def step(i: int) -> int:
    return i * 2


class Many(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        total = sum(ctx.durable_execute(step, i) for i in range(event.attributes["input"]))
        ctx.send_event(OutputEvent(total))


def sweep_cost(calls: int) -> tuple[float, int]:
    start = time.process_time()
    outcomes = sweep(Many, [("k", calls)], InMemoryStore)
    elapsed = time.process_time() - start
    assert all(o.ok for o in outcomes), [o.violations for o in outcomes if not o.ok][:1]
    return elapsed, len(outcomes)


def floor(calls: int) -> float:
    """One crash-free run and one run that replays every call (a crash just before completion)."""
    from reference_runtime import CrashAt, FaultInjector, Phase

    start = time.process_time()
    for _ in range(5):
        Runner(Many, InMemoryStore()).run([("k", calls)])
        Runner(Many, InMemoryStore(), injector=FaultInjector([CrashAt(Phase.BEFORE_COMPLETE)])).run([("k", calls)])
    return (time.process_time() - start) / 5


def main() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("P9 full sweep", "calls", "points", "s", "µs/scenario/call", "floor µs/call")]
    for n in SIZES:
        t, points = sweep_cost(n)
        fl = floor(n)
        point("P9 full sweep by agent calls", "sweep (s)", n, t, xlabel="durable calls", ylabel="s", logx=False)
        point(
            "P9 full sweep by agent calls",
            "floor: points x (crash-free + replay run) (s)",
            n,
            fl * points,
            xlabel="durable calls",
            ylabel="s",
            logx=False,
        )
        rows.append(
            (
                "sweep, memory store",
                str(n),
                str(points),
                f"{t:.2f}",
                f"{t / points / n * 1e6:.2f}",
                f"{fl / n * 1e6:.2f}",
            )
        )
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
