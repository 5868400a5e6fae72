"""Hypothesis strategies for crash schedules (spec PLG-5), public so they compose with input strategies.

Learn the fault points of a crash-free run first (``durable.points(Agent, inputs)``), then::

    @given(scenario=strategies.scenarios(points, max_crashes=3))
    def test_refund(durable, scenario):
        durable.check_scenario(Refund, inputs, scenario)

Hypothesis shrinks a failing schedule towards fewer crashes, earlier points and first occurrences;
``Scenario.decorator()`` prints the minimal one as a marker to pin in the test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from hypothesis import strategies as st

from reference_runtime.faults import CrashAt, FaultPoint

from .scenario import MismatchMode, Scenario, selector_for
from .sweep import points_to_crash


def crash_selectors(points: Sequence[FaultPoint], max_nth: int = 2) -> st.SearchStrategy[CrashAt]:
    """One selector narrowed to a point of ``points``; ``nth`` > 1 picks a later occurrence (a point
    reached again, e.g. during recovery). Shrinks towards earlier points and ``nth=1``."""
    unique = points_to_crash(points)
    if not unique:
        raise ValueError("no fault points: run the agent crash-free first and pass the points it reached")
    return st.builds(selector_for, st.sampled_from(unique), st.integers(1, max(1, max_nth)))


def crash_schedules(points: Sequence[FaultPoint], *, min_crashes: int = 1, max_crashes: int = 3,
                    max_nth: int = 2) -> st.SearchStrategy[tuple[CrashAt, ...]]:
    """Several crashes in order; each is armed when the previous one fired, so later ones can land in
    the recovery of earlier ones. Shrinks towards fewer crashes."""
    return st.lists(crash_selectors(points, max_nth), min_size=min_crashes, max_size=max_crashes).map(tuple)


def scenarios(points: Sequence[FaultPoint], *, min_crashes: int = 1, max_crashes: int = 3, max_nth: int = 2,
              mismatch: Sequence[MismatchMode] = ("lenient", "strict"),
              reconcilers: Sequence[bool] = (True, False)) -> st.SearchStrategy[Scenario]:
    """Crash schedules combined with a mismatch mode and reconcilers on or off (spec DE-14). Shrinks
    towards the first choice of each (lenient, reconcilers on)."""
    modes: list[Literal["lenient", "strict"]] = list(mismatch)
    return st.builds(Scenario, crash_schedules(points, min_crashes=min_crashes, max_crashes=max_crashes,
                                               max_nth=max_nth),
                     st.sampled_from(modes), st.sampled_from(list(reconcilers)))
