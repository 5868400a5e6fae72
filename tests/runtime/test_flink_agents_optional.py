"""flink_agents is an optional extra (spec FA-7): nothing imports it, or pydantic, unless an agent does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reference_runtime import Runner
from reference_runtime.flink_agents_compat import is_agent, is_flink_agent, runtime_agent

from .typed_event_agent import TypedChain

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import conformance, conformance.runner_suite, conformance.store_suite
import pytest_durable.plugin, reference_runtime.exploration.harness, pytest_durable.cli
import reference_runtime, reference_runtime.flink_agents_compat
from reference_runtime import Runner
from reference_runtime.stores.memory import InMemoryStore
from tests.runtime.typed_event_agent import TypedChain
Runner(TypedChain, InMemoryStore()).run([("k", "book")])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("flink_agents", "pyflink", "pydantic"))
print(loaded)
"""


def test_importing_and_running_loads_neither_flink_agents_nor_pydantic() -> None:
    """FA-7: the runtime, the plugin, the conformance kit and the adapter's package import neither
    flink_agents nor pydantic, and running a reference agent does not either (a fresh interpreter)."""
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_reference_agent_is_not_taken_for_a_flink_agent() -> None:
    """FA-1, FA-7: reference agents pass through unchanged; anything else is one clear TypeError."""
    assert is_agent(TypedChain) and not is_flink_agent(TypedChain)
    assert runtime_agent(TypedChain) is TypedChain
    with pytest.raises(TypeError, match=r"reference_runtime\.Agent subclass or a flink_agents Agent"):
        Runner(object)
