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
    pytester.makepyfile(test_sleepy='''
def test_sleepy(durable, durable_clock):
    durable_clock.sleep(5000)
    assert durable_clock.now() - 1767225600.0 == 5000
''')
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess("--durations=0", "--durations-min=0", "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    shown = {when: float(sec) for sec, when in re.findall(r"^([\d.]+)s (setup|call|teardown) ",
                                                          result.stdout.str(), re.M)}
    assert set(shown) == {"setup", "call", "teardown"}, result.stdout.str()
    assert all(seconds < 1000 for seconds in shown.values()), shown
    case = ET.parse(pytester.path / "out.xml").getroot().find(".//testcase")
    assert case is not None and float(case.get("time", "-1")) < 1000


RETRYING = '''
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
'''

NO_REAL_SLEEP = '''
import time

def _no_real_sleep(seconds):
    raise AssertionError(f"a real time.sleep({seconds}) happened")

time.sleep = _no_real_sleep
'''


def test_sweep_collection_learns_on_the_virtual_clock(pytester: pytest.Pytester) -> None:
    """PLG-11, PLG-6: a module sweeping a retrying agent (30 s backoff) collects without one real sleep, also
    when -k deselects its tests; the ids still name the fault points."""
    pytester.makepyfile(agent_mod=RETRYING, conftest=NO_REAL_SLEEP, test_user='''
import pytest
from agent_mod import Retrying

@pytest.mark.durable_sweep(Retrying, [("order-1", "a")])
def test_refund(durable):
    durable.run()
''')
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["test_user.py::test_refund[[]crash=none[]]",
                                 "test_user.py::test_refund[[]crash=call0:after-effect[]]"])
    deselected = pytester.runpytest_subprocess("-k", "not refund")
    assert deselected.ret == pytest.ExitCode.NO_TESTS_COLLECTED, deselected.stdout.str()


def test_an_agent_failing_while_its_points_are_learnt_is_one_test_error(pytester: pytest.Pytester) -> None:
    """PLG-12: the failure is reported on the sweep's one test with the reason; the session goes on."""
    pytester.makepyfile(agent_mod=RETRYING, test_user='''
import pytest
from agent_mod import Broken

@pytest.mark.durable_sweep(Broken, [("order-1", "a")])
def test_refund(durable):
    durable.run()

def test_plain():
    pass
''')
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "test_user.py::test_refund: the crash-free run of Broken on the marker's inputs failed while "
        "its fault points were learnt, so no crash test can run: ActionFailedError: *KeyError*no such customer*"])
    assert "Traceback" not in result.stdout.str()


# -- time leaking into durable calls (PLG-13, PLG-14) ---------------------------------------------------------

from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

from pytest_durable.harness import DurableHarness, DurableInvariantError  # noqa: E402
from pytest_durable.journal import JournalMismatch  # noqa: E402
from reference_runtime import (  # noqa: E402
    Agent,
    Event,
    InputEvent,
    NondeterminismError,
    OutputEvent,
    RunnerContext,
    action,
)
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
    return DurableHarness(InMemoryStore, "memory:", seed=1, **kw)


@pytest.fixture
def frozen() -> Iterator[DurableHarness]:
    from freezegun import freeze_time

    from pytest_durable.clock import FrozenClock

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
MESSAGES = {"sweep": "REC-3: call order-1/0/handle/0 had a persisted record but executed again",
            "explore": "REC-3: call order-1/0/handle/0 had a persisted record but executed again",
            "assert_deterministic": "Timestamped is nondeterministic: run 2 differs from run 1",
            "strict crash": "non-deterministic durable call: recorded .*charge .* at call index 0"}
ERRORS: dict[str, type[Exception]] = {"sweep": DurableInvariantError, "explore": DurableInvariantError,
                                      "assert_deterministic": JournalMismatch, "strict crash": NondeterminismError}


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
