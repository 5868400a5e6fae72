"""The tutorial's tests. ``REFUND_AGENT=refund_fixed`` (the default) tests the fixed agent;
``REFUND_AGENT=refund_buggy`` shows the failures the tutorial walks through."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

from . import services

agent_module: Any = importlib.import_module(f"{__package__}.{os.environ.get('REFUND_AGENT', 'refund_fixed')}")
RefundAgent = agent_module.RefundAgent
INPUTS = [("order-7", {"order": "order-7", "amount": 30})]


@pytest.fixture(autouse=True)
def ledger(durable_ledger: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every payment and e-mail goes through the side-effect ledger."""
    # Both services deduplicate on the id they are given; the ledger counts the way they do.
    refund = durable_ledger.wrap(services.PAYMENTS.refund, "refund", dedup=lambda order, amount, request_id: request_id)
    send = durable_ledger.wrap(services.MAILER.send, "email", dedup=lambda to, text, message_id=None: message_id)
    monkeypatch.setattr(services.PAYMENTS, "refund", refund)
    monkeypatch.setattr(services.MAILER, "send", send)
    return durable_ledger


@pytest.mark.durable_sweep(RefundAgent, INPUTS)
def test_refund_survives_every_crash(durable: Any) -> None:
    result = durable.run()
    assert result.outputs["order-7"][0].startswith("receipt ")
    durable.ledger.assert_exactly_once()


def test_refund_is_deterministic(durable: Any) -> None:
    durable.assert_deterministic(RefundAgent, INPUTS)


def test_refund_explores_crash_schedules(durable: Any) -> None:
    durable.explore(RefundAgent, INPUTS, max_crashes=2, max_examples=30)
