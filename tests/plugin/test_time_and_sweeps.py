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
