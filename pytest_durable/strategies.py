"""Hypothesis strategies for crash schedules (spec PLG-5), to compose with input strategies: the names of
:mod:`reference_runtime.exploration.strategies`, where the engine keeps them (docs/plugin/reference.md)."""

from reference_runtime.exploration.strategies import (
    PRIORITY,
    TraceAfter,
    crash_schedules,
    crash_selectors,
    fireable,
    reachable_scenarios,
    scenarios,
)

__all__ = [
    "PRIORITY",
    "TraceAfter",
    "crash_schedules",
    "crash_selectors",
    "fireable",
    "reachable_scenarios",
    "scenarios",
]
