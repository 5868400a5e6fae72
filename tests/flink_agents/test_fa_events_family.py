"""The flink_agents event family is there for every reader of a store, though the runtime's event module
never imports the adapter (spec EVT-1, API-3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys
import flink_agents.api.events.event
from reference_runtime.events import Event, rebuild_event

assert "reference_runtime.flink_agents_compat.events" not in sys.modules
event = rebuild_event("flink_agents.api.events.event:Event", Event("order", {"n": 1}), {})
print(type(event).__module__, type(event).__qualname__, event.flink_class.__qualname__, event.attributes)
"""


def test_a_reader_that_never_ran_an_agent_rebuilds_flink_agents_events() -> None:
    """EVT-1, API-3: in a fresh process that imported flink_agents and the runtime's event module, but no
    adapter and no agent, a stored flink_agents event comes back as the class it was stored as."""
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "reference_runtime.flink_agents_compat.events",
        "WrappedEvent",
        "Event",
        "{'n':",
        "1}",
    ]
