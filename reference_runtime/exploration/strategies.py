"""Hypothesis strategies for crash schedules (spec PLG-5), public so they compose with input strategies
(``pytest_durable.strategies``). Hypothesis is imported when a strategy is built, not with this module.

Learn the fault points of a crash-free run first (``durable.points(Agent, inputs)``), then::

    @given(scenario=strategies.scenarios(points, max_crashes=3))
    def test_refund(durable, scenario):
        durable.check_scenario(Refund, inputs, scenario)

Hypothesis shrinks a failing schedule towards fewer crashes, the points where bugs show first and first
occurrences; ``Scenario.decorator()`` prints the minimal one as a marker to pin in the test.

``durable.explore()`` uses :func:`reachable_scenarios`, which draws every crash of a schedule from the
points actually reached after the previous crash fired, so each selector it generates fires (PLG-15).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from reference_runtime.faults import CrashAt, FaultPoint, Phase

from .scenario import MismatchMode, Scenario, selector_for

if TYPE_CHECKING:
    from hypothesis import strategies as st

__all__ = [
    "PRIORITY",
    "TraceAfter",
    "crash_schedules",
    "crash_selectors",
    "fireable",
    "reachable_scenarios",
    "scenarios",
]

#: Where crashes show bugs first (PLG-15): a crash before completion replays every recorded call (so time,
#: randomness or an effect outside a durable call shows), after an effect re-runs an unrecorded call, then
#: the rest; a crash before a call starts shows least.
PRIORITY = (
    Phase.BEFORE_COMPLETE,
    Phase.AFTER_EFFECT,
    Phase.AFTER_RECORD,
    Phase.AFTER_PENDING,
    Phase.BETWEEN_ACTIONS,
    Phase.AFTER_COMPLETE,
    Phase.CHECKPOINT,
    Phase.BEFORE_CALL,
)


def fireable(points: Sequence[FaultPoint], max_nth: int = 2) -> list[CrashAt]:
    """Every selector that fires if armed before ``points`` are reached in this order: one per distinct point
    and occurrence (``nth`` up to ``max_nth``), most revealing first: the points of the first input reached
    (in :data:`PRIORITY` order of their phases), then those of the next input; run-level points last."""
    seen: Counter[CrashAt] = Counter()
    inputs: dict[tuple[str | None, int | None], int] = {}
    ranked: list[tuple[int, int, int, CrashAt]] = []
    for position, point in enumerate(points):
        first = selector_for(point)
        seen[first] += 1
        if seen[first] > max(1, max_nth):
            continue
        where = (point.key, point.seq)
        rank = len(points) if point.key is None else inputs.setdefault(where, len(inputs))
        ranked.append((rank, PRIORITY.index(point.phase), position, selector_for(point, seen[first])))
    return [selector for *_, selector in sorted(ranked, key=lambda r: r[:3])]


def crash_selectors(points: Sequence[FaultPoint], max_nth: int = 2) -> st.SearchStrategy[CrashAt]:
    """One selector that fires when armed before ``points`` (a crash-free run's trace, or its distinct
    points): ``nth`` > 1 only for a point reached that often. Shrinks towards :func:`fireable`'s order."""
    from hypothesis import strategies as st

    choices = fireable(points, max_nth)
    if not choices:
        raise ValueError("no fault points: run the agent crash-free first and pass the points it reached")
    return st.sampled_from(choices)


def crash_schedules(
    points: Sequence[FaultPoint], *, min_crashes: int = 1, max_crashes: int = 3, max_nth: int = 2
) -> st.SearchStrategy[tuple[CrashAt, ...]]:
    """Several crashes in order; each is armed when the previous one fired, so later ones can land in
    the recovery of earlier ones. Shrinks towards fewer crashes. Only the first is sure to fire: use
    :func:`reachable_scenarios` for schedules whose every crash fires."""
    from hypothesis import strategies as st

    return st.lists(crash_selectors(points, max_nth), min_size=min_crashes, max_size=max_crashes).map(tuple)


def scenarios(
    points: Sequence[FaultPoint],
    *,
    min_crashes: int = 1,
    max_crashes: int = 3,
    max_nth: int = 2,
    mismatch: Sequence[MismatchMode] = ("lenient", "strict"),
    reconcilers: Sequence[bool] = (True, False),
) -> st.SearchStrategy[Scenario]:
    """Crash schedules combined with a mismatch mode and reconcilers on or off (spec DE-14). Shrinks
    towards the first choice of each (lenient, reconcilers on)."""
    from hypothesis import strategies as st

    modes: list[Literal["lenient", "strict"]] = list(mismatch)
    return st.builds(
        Scenario,
        crash_schedules(points, min_crashes=min_crashes, max_crashes=max_crashes, max_nth=max_nth),
        st.sampled_from(modes),
        st.sampled_from(list(reconcilers)),
    )


#: The points a run reaches after the last crash of a scenario fired (the crash-free trace for no crash);
#: empty if that scenario cannot be run to its last crash.
TraceAfter = Callable[[Scenario], Sequence[FaultPoint]]


def reachable_scenarios(
    trace_after: TraceAfter,
    *,
    min_crashes: int = 1,
    max_crashes: int = 3,
    max_nth: int = 2,
    mismatch: Sequence[MismatchMode] = ("lenient", "strict"),
    reconcilers: Sequence[bool] = (True, False),
) -> st.SearchStrategy[Scenario]:
    """Scenarios whose every crash fires (PLG-15): each selector is drawn from :func:`fireable` over the
    points reached after the previous crash (``trace_after``), so later crashes land in recovery only where
    recovery really goes. Shrinks towards fewer crashes, the most revealing points and the first modes."""
    from hypothesis import strategies as st

    modes: list[Literal["lenient", "strict"]] = list(mismatch)
    switches = list(reconcilers)

    @st.composite
    def build(draw: st.DrawFn) -> Scenario:
        mode = draw(st.sampled_from(modes))
        on = draw(st.sampled_from(switches))
        wanted = draw(st.integers(min_crashes, max_crashes))
        schedule: tuple[CrashAt, ...] = ()
        while len(schedule) < wanted:
            choices = fireable(trace_after(Scenario(schedule, mode, on)), max_nth)
            if not choices:
                break
            schedule += (draw(st.sampled_from(choices)),)
        return Scenario(schedule, mode, on)

    return build()
