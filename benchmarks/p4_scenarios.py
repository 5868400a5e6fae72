"""P4: crash-and-recover scenarios per second for a 50-call agent on the memory store (target >= 1000/s).

A scenario is what a sweep or a schedule runs per fault point: a run that crashes at the point, fails over,
recovers and finishes, plus the invariant check against the crash-free run. Printed side by side with a
crash-free run of the same agent, so the ratio shows what recovery and checking add.
"""

from __future__ import annotations

from pytest_durable.scenario import Scenario, selector_for
from pytest_durable.sweep import check, learn, points_to_crash, run_scenario
from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.stores.memory import InMemoryStore

from ._util import best_of, table

CALLS = 50


def step(i: int) -> int:
    return i * 2


class Fifty(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        total = sum(ctx.durable_execute(step, i) for i in range(CALLS))
        ctx.send_event(OutputEvent(total))


INPUTS = [("k", 0)]


def main() -> None:
    baseline, trace = learn(Fifty, INPUTS, InMemoryStore)
    points = points_to_crash(trace)

    def scenarios() -> None:
        for point in points:
            scenario = Scenario((selector_for(point),))
            result, injector = run_scenario(Fifty, INPUTS, InMemoryStore, scenario)
            assert check(scenario, baseline, result, injector).ok

    def crash_free() -> None:
        for _ in points:
            Runner(Fifty, InMemoryStore()).run(INPUTS)

    # Best of five rounds each, interleaved, so both sides see the same machine.
    sweep = plain = float("inf")
    for _ in range(5):
        sweep = min(sweep, best_of(scenarios, 1))
        plain = min(plain, best_of(crash_free, 1))
    n = len(points)
    rows = [("what", "runs", "per second", "vs crash-free run"),
            ("crash + recover + check", str(n), f"{n / sweep:.0f}", f"{sweep / plain:.2f}x the time"),
            ("crash-free run", str(n), f"{n / plain:.0f}", "1.00x")]
    print(f"{CALLS}-call agent, memory store, one scenario per fault point ({n} points); target >= 1000 scenarios/s")
    print(table(rows))


if __name__ == "__main__":
    main()
