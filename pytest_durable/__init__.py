"""pytest-durable: crash-test Flink-Agents-style agents at every durable call. Fixtures are the API.

The names here are the types those fixtures hand a test (for annotations and ``isinstance``) and the
Python side of ``durable inspect``. They are imported on first use: pytest loads this package for every
session through the plugin's entry point, and a session that uses no durable fixture must not pay for
the runtime (spec PLG-4, API-1).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Where each name lives: the crash-exploration engine (``reference_runtime.exploration``), the store reader
#: (``reference_runtime.inspection``) and this package's command line.
_ENGINE = "reference_runtime.exploration"
_EXPORTS = {
    "FrozenClock": f"{_ENGINE}.clock",
    "DurableHarness": f"{_ENGINE}.harness",
    "DurableInvariantError": f"{_ENGINE}.harness",
    "DurableRun": f"{_ENGINE}.harness",
    "CallView": "reference_runtime.inspection",
    "InspectError": "reference_runtime.inspection",
    "StateView": "reference_runtime.inspection",
    "inspect_store": "reference_runtime.inspection",
    "render_inspection": "pytest_durable.cli.inspect",
    "JournalMismatch": f"{_ENGINE}.journal",
    "Effect": f"{_ENGINE}.ledger",
    "Ledger": f"{_ENGINE}.ledger",
    "LedgerError": f"{_ENGINE}.ledger",
    "LedgerRow": f"{_ENGINE}.ledger",
    "Scenario": f"{_ENGINE}.scenario",
    "ScheduleSyntaxError": f"{_ENGINE}.scenario",
    "LearningFailed": f"{_ENGINE}.sweep",
    "Shard": f"{_ENGINE}.sweep",
    "World": f"{_ENGINE}.world",
}

if TYPE_CHECKING:
    from reference_runtime.exploration.clock import FrozenClock
    from reference_runtime.exploration.harness import DurableHarness, DurableInvariantError, DurableRun
    from reference_runtime.exploration.journal import JournalMismatch
    from reference_runtime.exploration.ledger import Effect, Ledger, LedgerError, LedgerRow
    from reference_runtime.exploration.scenario import Scenario, ScheduleSyntaxError
    from reference_runtime.exploration.sweep import LearningFailed, Shard
    from reference_runtime.exploration.world import World
    from reference_runtime.inspection import CallView, InspectError, StateView, inspect_store

    from .cli.inspect import render_inspection


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_durable' has no attribute {name!r}")
    # Not cached here: a nested in-process pytest run (pytester) drops the modules it imported when it ends,
    # and the next run must get the classes of the modules it imports itself.
    return getattr(importlib.import_module(module), name)


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
    "Shard",
    "StateView",
    "World",
    "inspect_store",
    "render_inspection",
]
