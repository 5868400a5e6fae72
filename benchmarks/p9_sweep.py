"""P9: a full sweep (one crash-and-recover scenario per fault point, each checked) of an agent making N
durable calls in one action, on the memory store. CPU time of this process. Targets: N = 500 in <= 2.5 s;
the cost of one scenario at most linear in N (spec COST-4).

Both sweep paths in one run: starting each scenario from a snapshot of the crash-free run (the default,
PLG-16) and re-executing the run up to each crash (``re_execute=True``). Then one scenario's cost, from
its snapshot, at N = 50, 500 and 5000 (points sampled evenly over the run). The floor rows bound the
snapshot path from below: every scenario must run the agent's action again from its start (the agent's
code cannot be resumed mid-function), replaying the calls recorded before the crash and executing the
others, so a sweep costs at least one recovery run per distinct store state at a crash (N + 1 of them:
the three points of a call share one), and each such run at least what a crash-free run costs.
"""

from __future__ import annotations

import time

from pytest_durable.sweep import Scenario, check, points_to_crash, selector_for, sweep
from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.exploration import snapshot_start as snap
from reference_runtime.stores.memory import InMemoryStore

from ._util import judge, point, table

#: Calls of the agent whose whole sweep is timed on both paths.
FULL = 500
#: Calls at which one scenario's cost is measured.
SIZES = (50, 500, 5000)
#: Scenarios timed per size.
SAMPLES = 40
FIGURE = "P9 one sweep scenario by agent calls"


def step(i: int) -> int:
    return i * 2


class Many(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        total = sum(ctx.durable_execute(step, i) for i in range(event.attributes["input"]))
        ctx.send_event(OutputEvent(total))


def sweep_cost(calls: int, re_execute: bool) -> tuple[float, int, int]:
    """CPU seconds of a full sweep, its points, and how many started from a snapshot."""
    start = time.process_time()
    outcomes = sweep(Many, [("k", calls)], InMemoryStore, re_execute=re_execute)
    elapsed = time.process_time() - start
    assert all(o.ok for o in outcomes), [o.violations for o in outcomes if not o.ok][:1]
    return elapsed, len(outcomes), sum(o.start == "snapshot" for o in outcomes)


def scenario_cost(calls: int) -> tuple[float, float, float]:
    """Per scenario started from its snapshot (no recovery shared), in seconds: the scenario with its
    checks, its bare recovery run alone to its end, replaying from the plan the scenarios made (COST-8: the
    floor of one scenario that does not stop early), and one crash-free run."""
    ref = snap.record(Many, [("k", calls)], InMemoryStore, None, {})
    snap.prepare(ref, None)
    points = points_to_crash(ref.trace)
    picked = points[:: max(1, len(points) // SAMPLES)][:SAMPLES]
    start = time.process_time()
    for p in picked:
        scenario = Scenario((selector_for(p),))
        result, injector, _ = snap.start(ref, p, scenario, None, {})
        assert check(scenario, ref.result, result, injector).ok
    scenario_s = (time.process_time() - start) / len(picked)
    stores = []
    for p in picked:
        store = InMemoryStore()
        ref.log.replay(store, ref.injector.marks[p].store)
        stores.append(store)
    start = time.process_time()
    for store in stores:
        runner = Runner(Many, store)
        runner.fail_over()
        with ref.replaying():  # replays planned by the scenarios (COST-8)
            runner.run([("k", calls)])
    bare_s = (time.process_time() - start) / len(stores)
    start = time.process_time()
    for _ in range(3):
        Runner(Many, InMemoryStore()).run([("k", calls)])
    run_s = (time.process_time() - start) / 3
    return scenario_s, bare_s, run_s


def main() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("P9 full sweep", "calls", "points", "from snapshot", "s", "ratio")]
    fast, points, snapshots = sweep_cost(FULL, re_execute=False)
    slow, _, _ = sweep_cost(FULL, re_execute=True)
    rows.append(("snapshot path (default)", str(FULL), str(points), str(snapshots), f"{fast:.2f}", "1.00"))
    rows.append(("re-execution path", str(FULL), str(points), "0", f"{slow:.2f}", f"{slow / fast:.2f}"))
    print(table(rows))
    judge(f"P9 full sweep of a {FULL}-call agent", fast, 2.5, " s")
    print()
    per: list[tuple[str, ...]] = [
        (
            "P9 one scenario",
            "calls",
            "ms/scenario",
            "µs/scenario/call",
            "bare recovery µs/call",
            "crash-free run µs/call",
            "every recovery in full s",
        )
    ]
    for n in SIZES:
        one, bare, run = scenario_cost(n)
        distinct = n + 4  # one recovery per call, plus the action's start and end and the checkpoint
        for series, seconds in (("scenario from snapshot", one), ("bare recovery run", bare), ("crash-free run", run)):
            point(FIGURE, f"{series} (ms)", n, seconds * 1e3, xlabel="durable calls", ylabel="ms")
        per.append(
            (
                "snapshot path, memory store",
                str(n),
                f"{one * 1e3:.2f}",
                f"{one / n * 1e6:.2f}",
                f"{bare / n * 1e6:.2f}",
                f"{run / n * 1e6:.2f}",
                f"{distinct * bare:.2f}",
            )
        )
    print(table(per))
    return rows + per


if __name__ == "__main__":
    main()
