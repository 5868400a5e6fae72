"""A sweep that checked no side effect says so (PLG-24), and a failing sweep shows the test and the
verdict, not the harness's own frames (PLG-24)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

AGENT = """
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action

CHARGED = []

def charge(amount):
    CHARGED.append(amount)
    return f"charged {amount}"

class Charges(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(charge, event.attributes["input"])))
"""

UNCHECKED = """
import pytest
from agent import Charges

@pytest.mark.durable_sweep(Charges, [("k", 5)])
def test_marker(durable):
    durable.run()

def test_world_books_nothing(durable):
    durable.world(dict)
    durable.sweep(Charges, [("k", 5)])
"""

CHECKED = """
import agent
from agent import Charges

def test_booked(durable, durable_ledger, monkeypatch):
    monkeypatch.setattr(agent, "charge", durable_ledger.wrap(agent.charge, "charge"))
    durable.sweep(Charges, [("k", 5)])
"""

BROKEN = """
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action

SEEN = []

class Broken(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        value = ctx.durable_execute(str, event.attributes["input"])
        SEEN.append(value)  # outside any durable call: a recovery counts it again
        ctx.send_event(OutputEvent(len(SEEN)))
"""


def test_a_sweep_that_booked_no_effect_says_so(pytester: pytest.Pytester) -> None:
    """PLG-24: sweeps (the marker's points, durable.sweep with a durable.world whose fakes book nothing) that
    booked no effect pass, and the summary says how many of their points checked no side effect."""
    pytester.makepyfile(agent=AGENT, test_unchecked=UNCHECKED)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["durable: 12 of 12 fault points swept checked no side effect: *(PLG-24)"])


def test_a_sweep_that_booked_its_effects_has_no_such_line(pytester: pytest.Pytester) -> None:
    """PLG-24, PLG-3: with the effect booked to the ledger, the charge a recovery repeats (the call has no
    reconciler) fails the sweep, and no point is said to have checked no side effect."""
    pytester.makepyfile(agent=AGENT, test_checked=CHECKED)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "PLG-3: effect charge for k/0/handle/0 duplicated" in out and "checked no side effect" not in out


def test_a_failing_sweep_shows_no_harness_frames(pytester: pytest.Pytester) -> None:
    """PLG-24: the harness's frames are hidden from a failing sweep's traceback (``__tracebackhide__``), so
    the failure shows the test's line and the violations."""
    pytester.makepyfile(
        agent=BROKEN,
        test_broken="""
import pytest
import agent
from agent import Broken

@pytest.fixture(autouse=True)
def fresh():
    agent.SEEN.clear()

@pytest.mark.durable_sweep(Broken, [("k", 1)])
def test_marker(durable):
    durable.run()

def test_sweep(durable):
    durable.sweep(Broken, [("k", 1)])
""",
    )
    result = pytester.runpytest("-p", "no:randomly")
    out = result.stdout.str()
    assert "REC-6" in out and "durable.sweep(Broken" in out and "durable.run()" in out
    assert result.parseoutcomes()["failed"] >= 2
    assert "harness.py" not in out and "__tracebackhide__" not in out
