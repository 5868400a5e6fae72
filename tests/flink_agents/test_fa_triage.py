"""Crash tests of the unchanged Flink Agents agent (run with the python of scripts/flink-agents-venv.sh)."""

from __future__ import annotations

from typing import Any

import pytest

from . import helpdesk
from .triage_agent import TriageAgent

INPUTS = [
    ("acme", {"id": "T-1", "text": "Checkout is down!"}),
    ("acme", {"id": "T-2", "text": "Wrong invoice total"}),
    ("zeta", {"id": "T-3", "text": "How do I export data?"}),
]


@pytest.fixture(autouse=True)
def ledger(durable_ledger: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every case the helpdesk opens goes through the side-effect ledger (it deduplicates on request id)."""
    booked = durable_ledger.wrap(
        helpdesk.HELPDESK.open_case, "open_case", dedup=lambda request_id, ticket, queue: request_id
    )
    monkeypatch.setattr(helpdesk.HELPDESK, "open_case", booked)
    return durable_ledger


@pytest.mark.durable_sweep(TriageAgent, INPUTS)
def test_triage_survives_every_crash(durable: Any) -> None:
    result = durable.run()
    assert [o["queue"] for o in result.outputs["acme"]] == ["urgent", "billing"]
    assert result.memory["acme"] == {"queues": {"urgent": 1, "billing": 1}}
    durable.ledger.assert_exactly_once()


@pytest.mark.durable_sweep(TriageAgent, INPUTS[:1], config={"triage.urgent-words": "checkout"})
def test_config_reaches_the_agent(durable: Any) -> None:
    assert durable.run().outputs["acme"][0]["queue"] == "urgent"


def test_triage_is_deterministic(durable: Any) -> None:
    durable.assert_deterministic(TriageAgent, INPUTS)


def test_triage_explores_crash_schedules(durable: Any) -> None:
    durable.explore(TriageAgent, INPUTS, max_crashes=2, max_examples=25)
