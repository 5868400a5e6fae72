"""Virtual time, fault-point learning for sweeps and schedule exploration (PLG-6, PLG-10..PLG-15)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


def test_durations_and_junit_times_are_real_under_the_virtual_clock(pytester: pytest.Pytester) -> None:
    """PLG-10: --durations and JUnit show real durations under durable_clock, not the frozen instant (setup)
    nor the virtual seconds slept (call)."""
    pytester.makepyfile(
        test_sleepy="""
def test_sleepy(durable, durable_clock):
    durable_clock.sleep(5000)
    assert durable_clock.now() - 1767225600.0 == 5000
"""
    )
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess("--durations=0", "--durations-min=0", "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    shown = {
        when: float(sec) for sec, when in re.findall(r"^([\d.]+)s (setup|call|teardown) ", result.stdout.str(), re.M)
    }
    assert set(shown) == {"setup", "call", "teardown"}, result.stdout.str()
    assert all(seconds < 1000 for seconds in shown.values()), shown
    case = ET.parse(pytester.path / "out.xml").getroot().find(".//testcase")
    assert case is not None and float(case.get("time", "-1")) < 1000


RETRYING = """
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action
from reference_runtime.retry import Backoff, RetryPolicy

LEFT = {}

def flaky(key):
    LEFT[key] = LEFT.get(key, 3) - 1
    if LEFT[key] > 0:
        raise ConnectionError("transient")
    return f"charged {key}"

class Retrying(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        LEFT.clear()
        policy = RetryPolicy(max_attempts=5, backoff=Backoff(initial=30.0), retry_on=(ConnectionError,))
        ctx.send_event(OutputEvent(ctx.durable_execute(flaky, event.attributes["input"], retry=policy)))

class Broken(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        raise KeyError("no such customer")
"""

NO_REAL_SLEEP = """
import time

def _no_real_sleep(seconds):
    raise AssertionError(f"a real time.sleep({seconds}) happened")

time.sleep = _no_real_sleep
"""


def test_sweep_collection_learns_on_the_virtual_clock(pytester: pytest.Pytester) -> None:
    """PLG-11, PLG-6: a module sweeping a retrying agent (30 s backoff) collects without one real sleep, also
    when -k deselects its tests; the ids still name the fault points."""
    pytester.makepyfile(
        agent_mod=RETRYING,
        conftest=NO_REAL_SLEEP,
        test_user="""
import pytest
from agent_mod import Retrying

@pytest.mark.durable_sweep(Retrying, [("order-1", "a")])
def test_refund(durable):
    durable.run()
""",
    )
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["test_user.py::test_refund[[]crash=none[]]", "test_user.py::test_refund[[]crash=call0:after-effect[]]"]
    )
    deselected = pytester.runpytest_subprocess("-k", "not refund")
    assert deselected.ret == pytest.ExitCode.NO_TESTS_COLLECTED, deselected.stdout.str()


def test_an_agent_failing_while_its_points_are_learnt_is_one_test_error(pytester: pytest.Pytester) -> None:
    """PLG-12: the failure is reported on the sweep's one test with the reason; the session goes on."""
    pytester.makepyfile(
        agent_mod=RETRYING,
        test_user="""
import pytest
from agent_mod import Broken

@pytest.mark.durable_sweep(Broken, [("order-1", "a")])
def test_refund(durable):
    durable.run()

def test_plain():
    pass
""",
    )
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "test_user.py::test_refund: the crash-free run of Broken on the marker's inputs failed while "
            "its fault points were learnt, so no crash test can run: ActionFailedError: *KeyError*no such customer*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


# -- time leaking into durable calls (PLG-13, PLG-14) ---------------------------------------------------------

from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

from reference_runtime import (  # noqa: E402
    Agent,
    Event,
    InputEvent,
    NondeterminismError,
    OutputEvent,
    RunnerContext,
    action,
)
from reference_runtime.exploration.harness import DurableHarness, DurableInvariantError  # noqa: E402
from reference_runtime.exploration.journal import JournalMismatch  # noqa: E402
from reference_runtime.stores.memory import InMemoryStore  # noqa: E402


def charge(order: str, at: float) -> str:
    return f"charged {order}"


class Timestamped(Agent):
    """Passes time.time() into a durable call: recovery at a later instant digests the call differently."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        import time

        receipt = ctx.durable_execute(charge, event.attributes["input"], time.time())
        ctx.send_event(OutputEvent(ctx.durable_execute(str.upper, receipt)))


INPUTS = [("order-1", "a")]


def harness(**kw: Any) -> DurableHarness:
    return DurableHarness(InMemoryStore, "memory:", **{"seed": 1, **kw})


@pytest.fixture
def frozen() -> Iterator[DurableHarness]:
    from freezegun import freeze_time

    from reference_runtime.exploration.clock import FrozenClock

    with freeze_time("2026-01-01") as f:
        h = harness()
        h.clock = FrozenClock(f)
        yield h


CHECKS: dict[str, Callable[[DurableHarness], Any]] = {
    "sweep": lambda h: h.sweep(Timestamped, INPUTS),
    "explore": lambda h: h.explore(Timestamped, INPUTS, max_examples=1),
    "assert_deterministic": lambda h: h.assert_deterministic(Timestamped, INPUTS),
    "strict crash": lambda h: h.crash(Timestamped, INPUTS, "call0:after-record", mismatch="strict"),
}
MESSAGES = {
    "sweep": "REC-3: call order-1/0/handle/0 had a persisted record but executed again",
    "explore": "REC-3: call order-1/0/handle/0 had a persisted record but executed again",
    "assert_deterministic": "Timestamped is nondeterministic: run 2 differs from run 1",
    "strict crash": "non-deterministic durable call: recorded .*charge .* at call index 0",
}
ERRORS: dict[str, type[Exception]] = {
    "sweep": DurableInvariantError,
    "explore": DurableInvariantError,
    "assert_deterministic": JournalMismatch,
    "strict crash": NondeterminismError,
}


@pytest.mark.parametrize("check", CHECKS)
def test_the_virtual_clock_moves_across_failovers_and_between_runs(frozen: DurableHarness, check: str) -> None:
    """PLG-13: under durable_clock an agent passing the time into a durable call fails every check with the
    nondeterminism message, because recovery and each compared run happen a restart later."""
    with pytest.raises(ERRORS[check], match=MESSAGES[check]):
        CHECKS[check](frozen)


@pytest.fixture
def coarse_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """time.time() with the 15.6 ms resolution of some platforms' clocks."""
    import math
    import time

    real = time.time
    monkeypatch.setattr(time, "time", lambda: math.floor(real() / 0.015625) * 0.015625)


@pytest.mark.parametrize("check", CHECKS)
def test_time_leaks_are_caught_on_a_coarse_real_clock(coarse_clock: None, check: str) -> None:
    """PLG-14: on a real clock with 15.6 ms ticks, crash and recovery (and two compared runs) never fall in
    one tick, so the time dependence is caught every time, not by luck."""
    for _ in range(3):
        with pytest.raises(ERRORS[check], match=MESSAGES[check]):
            CHECKS[check](harness())


# -- explore(): schedules that fire, small budgets (PLG-15) -----------------------------------------------------

from pytest_durable.strategies import fireable, reachable_scenarios  # noqa: E402
from pytest_durable.sweep import learn  # noqa: E402
from reference_runtime import Phase  # noqa: E402
from reference_runtime.exploration import harness as harness_module  # noqa: E402
from reference_runtime.exploration.ledger import Ledger  # noqa: E402
from reference_runtime.exploration.scenario import Scenario  # noqa: E402

BOOKS = Ledger()


def lookup(order: str) -> str:
    return f"customer of {order}"


def pay(order: str) -> str:
    return f"paid {order}"


PAY = BOOKS.wrap(pay, "pay")  # the payment service does not deduplicate: a re-run pays twice


class Charger(Agent):
    """Pays through a non-idempotent call without a reconciler: only a crash after the payment's effect and
    before its record shows the double payment."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        who = ctx.durable_execute(lookup, event.attributes["input"])
        ctx.send_event(OutputEvent(ctx.durable_execute(PAY, who)))


@pytest.fixture
def books() -> Ledger:
    BOOKS.__init__()  # type: ignore[misc]
    return BOOKS


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("budget", [1, 2, 3])
def test_small_budgets_cover_the_points_where_bugs_show(books: Ledger, seed: int, budget: int) -> None:
    """PLG-15: whatever the seed, one schedule catches time leaking into a call and three catch a double
    payment (the most revealing points come first, not the minimal example at call0:before-call)."""
    with pytest.raises(DurableInvariantError, match="REC-3"):
        harness(seed=seed).explore(Timestamped, INPUTS, max_examples=budget)
    if budget == 3:
        h = harness(seed=seed)
        h._ledger = books
        with pytest.raises(DurableInvariantError, match=r"PLG-3: effect pay for order-1/0/handle/1 duplicated"):
            h.explore(Charger, [("order-1", "a"), ("order-2", "b")], max_examples=budget)


def test_every_explored_schedule_fires_and_only_those_are_reported(
    books: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PLG-15: explore generates only schedules whose crashes all fire, several of them multi-crash, and counts
    the schedules that fired."""
    runs: list[tuple[int, int]] = []
    real_check = harness_module.check

    def spy(scenario: Scenario, *args: Any, **kwargs: Any) -> Any:
        outcome = real_check(scenario, *args, **kwargs)
        runs.append((len(scenario.schedule), len(outcome.fired)))
        return outcome

    monkeypatch.setattr(harness_module, "check", spy)
    h = harness(seed=5)
    assert h.explore(Pair, [("k", "a"), ("j", "b")], max_crashes=3, max_examples=40) == 40
    assert len(runs) == 40
    assert all(scheduled == fired for scheduled, fired in runs), runs
    assert sum(1 for scheduled, _ in runs if scheduled >= 2) >= 5


class Pair(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        first = ctx.durable_execute(lookup, event.attributes["input"])
        ctx.send_event(OutputEvent(ctx.durable_execute(pay, first)))


def test_fireable_orders_the_first_input_by_revealing_phase_and_limits_nth() -> None:
    """PLG-15: nth only up to the times a point is reached; before-complete and after-effect lead."""
    _, points = learn(Pair, [("k", "a"), ("j", "b")], InMemoryStore)
    order = fireable(points, max_nth=2)
    assert [c.phase for c in order[:3]] == [Phase.BEFORE_COMPLETE, Phase.AFTER_EFFECT, Phase.AFTER_EFFECT]
    assert {c.key for c in order[:8]} == {"k"} and all(c.nth == 1 for c in order)
    assert order[-1].phase is Phase.CHECKPOINT


def test_reachable_scenarios_draw_from_what_recovery_reaches() -> None:
    """PLG-15: a strategy fed with the points after each crash yields only schedules that fire."""
    from hypothesis import given, settings

    h = harness()
    calls: list[Scenario] = []

    def trace_after(scenario: Scenario) -> Any:
        calls.append(scenario)
        return h._trace_after(Pair, [("k", "a")], scenario, {})

    @settings(max_examples=15, deadline=None, database=None)
    @given(reachable_scenarios(trace_after, min_crashes=2, max_crashes=3))
    def fires(scenario: Scenario) -> None:
        outcome = h.check_scenario(Pair, [("k", "a")], scenario)
        assert len(outcome.fired) == len(scenario.schedule) >= 2

    fires()
    assert calls
