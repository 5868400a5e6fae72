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
