"""P14: what crash coverage costs (``--durable-coverage``, ``durable sweep --coverage``; spec COV-8). CPU time of
this process for repeated full sweeps of the tutorial's two-action refund agent
(pytest_durable/examples/buggy_refund/refund_notify.py, 14 fault points) on the memory store, four ways, side by side:

* off: what every session without the option runs (the runtime's observer hook unset);
* the tally alone: fault points and durable state recorded through the observer hook, no line measurement;
* coverage.py alone: a plain coverage.py measurement of the same run, no crash coverage (the floor of measuring
  lines at all);
* crash coverage: the tally, coverage.py and the context switches around every action execution, as the option
  runs it.

Target: crash coverage costs at most twice what coverage.py alone costs (the contexts are not where most of the
time goes).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import coverage

from pytest_durable.examples.buggy_refund import services
from pytest_durable.examples.buggy_refund.refund_notify import RefundAgent
from reference_runtime.exploration import reached
from reference_runtime.exploration.coverage_report import Measuring
from reference_runtime.exploration.lines import Lines
from reference_runtime.exploration.reached import Tally
from reference_runtime.exploration.sweep import sweep
from reference_runtime.stores.memory import InMemoryStore

from ._util import judge, table

INPUTS = [("order-7", {"order": "order-7", "amount": 30})]
#: Sweeps per measurement, and measurements per way (the best is kept).
SWEEPS, REPEATS = 30, 3


def sweeps() -> float:
    """CPU seconds of SWEEPS full sweeps, each on fresh fakes (their lists would grow otherwise)."""
    start = time.process_time()
    for _ in range(SWEEPS):
        services.PAYMENTS, services.MAILER = services.Payments(), services.Mailer()
        outcomes = sweep(RefundAgent, INPUTS, InMemoryStore)
        assert all(o.ok for o in outcomes)
    return time.process_time() - start


def off() -> float:
    return sweeps()


def tally_alone() -> float:
    reached.activate(Tally())
    try:
        return sweeps()
    finally:
        reached.activate(None)


def coverage_alone() -> float:
    cov = coverage.Coverage(data_file=None, config_file=False, omit=reached.untraced())
    cov.start()
    try:
        return sweeps()
    finally:
        cov.stop()


def crash_coverage() -> float:
    measuring = Measuring.start()
    try:
        return sweeps()
    finally:
        measuring.finish()


def best(way: Callable[[], float]) -> float:
    return min(way() for _ in range(REPEATS))


def main() -> list[tuple[str, ...]]:
    assert coverage.Coverage.current() is None, "run the benchmarks outside a coverage.py run"
    assert Lines  # the measurement the option uses
    ways = [
        ("off", off),
        ("tally alone (observer hook)", tally_alone),
        ("coverage.py alone", coverage_alone),
        ("crash coverage (--durable-coverage)", crash_coverage),
    ]
    times = {name: best(way) for name, way in ways}
    base = times["off"]
    floor = times["coverage.py alone"]
    rows: list[tuple[str, ...]] = [("P14 crash coverage", "ms/sweep", "vs off", "vs coverage.py alone")]
    for name, seconds in times.items():
        rows.append((name, f"{seconds / SWEEPS * 1e3:.2f}", f"{seconds / base:.2f}", f"{seconds / floor:.2f}"))
    print(table(rows))
    judge("P14 crash coverage / coverage.py alone", times["crash coverage (--durable-coverage)"] / floor, 2)
    return rows


if __name__ == "__main__":
    main()
