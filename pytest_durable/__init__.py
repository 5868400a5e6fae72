"""pytest-durable: crash-test Flink-Agents-style agents at every durable call. Fixtures are the API.

The names here are the types those fixtures hand a test (for annotations and ``isinstance``) and the
Python side of ``durable inspect``. They are imported on first use: pytest loads this package for every
session through the plugin's entry point, and a session that uses no durable fixture must not pay for
the runtime (spec PLG-4, API-1).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "FrozenClock": "clock",
    "DurableHarness": "harness",
    "DurableInvariantError": "harness",
    "DurableRun": "harness",
    "CallView": "inspect",
    "InspectError": "inspect",
    "StateView": "inspect",
    "inspect_store": "inspect",
    "render_inspection": "inspect",
    "JournalMismatch": "journal",
    "Effect": "ledger",
    "Ledger": "ledger",
    "LedgerError": "ledger",
    "LedgerRow": "ledger",
    "Scenario": "scenario",
    "ScheduleSyntaxError": "scenario",
    "LearningFailed": "sweep",
    "World": "world",
}

if TYPE_CHECKING:
    from .clock import FrozenClock
    from .harness import DurableHarness, DurableInvariantError, DurableRun
    from .inspect import CallView, InspectError, StateView, inspect_store, render_inspection
    from .journal import JournalMismatch
    from .ledger import Effect, Ledger, LedgerError, LedgerRow
    from .scenario import Scenario, ScheduleSyntaxError
    from .sweep import LearningFailed
    from .world import World


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_durable' has no attribute {name!r}")
    # Not cached here: a nested in-process pytest run (pytester) drops the modules it imported when it ends,
    # and the next run must get the classes of the modules it imports itself.
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "CallView",
    "DurableHarness",
    "DurableInvariantError",
    "DurableRun",
    "Effect",
    "FrozenClock",
    "InspectError",
    "JournalMismatch",
    "LearningFailed",
    "Ledger",
    "LedgerError",
    "LedgerRow",
    "Scenario",
    "ScheduleSyntaxError",
    "StateView",
    "World",
    "inspect_store",
    "render_inspection",
]
