"""The sweep engine, for building one's own checks: the names of
:mod:`reference_runtime.exploration.sweep` (learning, running, sweeping) and
:mod:`reference_runtime.exploration.verdict` (what a crash run must keep), where the engine lives."""

from reference_runtime.exploration.scenario import Scenario, selector_for
from reference_runtime.exploration.sweep import (
    FORCED,
    HARNESS_OWNED,
    SAMPLED,
    LearningFailed,
    MarkerError,
    NewStore,
    Shard,
    check_runner_options,
    learn,
    points_to_crash,
    run_scenario,
    scenario_options,
    shard_points,
    start_summary,
    sweep,
    sweep_marker,
    sweep_params,
)
from reference_runtime.exploration.verdict import PointOutcome, Verdict, check, memory_diff, recorded_attempts

__all__ = [
    "FORCED",
    "HARNESS_OWNED",
    "SAMPLED",
    "LearningFailed",
    "MarkerError",
    "NewStore",
    "PointOutcome",
    "Scenario",
    "Shard",
    "Verdict",
    "check",
    "check_runner_options",
    "learn",
    "memory_diff",
    "points_to_crash",
    "recorded_attempts",
    "run_scenario",
    "scenario_options",
    "selector_for",
    "shard_points",
    "start_summary",
    "sweep",
    "sweep_marker",
    "sweep_params",
]
