"""The plugin's fixture, markers, exploration, determinism checks, golden journals, `durable sweep` and
the runner conformance factory accept a flink_agents agent (spec FA-1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.runner_factory import RunnerFactory
from pytest_durable.cli import main as durable_cli

from .greeter_flink import Greeter

INPUTS = [("ann", "Ann"), ("bo", "Bo"), ("ann", "Ann again")]
EXPECTED = {"ann": ["hi Ann", "hi Ann again"], "bo": ["hi Bo"]}
CONFIG = {"greeter.style": "hi"}


@pytest.mark.durable_sweep(Greeter, INPUTS, config=CONFIG)
def test_the_sweep_marker_crashes_a_flink_agent_at_every_point(durable: Any) -> None:
    """FA-1: the durable_sweep marker parametrizes over the flink agent's fault points; each recovered run
    keeps every invariant and the crash-free outputs."""
    result = durable.run()
    assert result.outputs == EXPECTED


def test_exploration_and_determinism(durable: Any) -> None:
    """FA-1: durable.explore() and assert_deterministic (also in fresh processes) run a flink agent."""
    durable.explore(Greeter, INPUTS, max_crashes=2, max_examples=15, config=CONFIG)
    durable.assert_deterministic(Greeter, INPUTS, fresh_processes=True, config=CONFIG)


@pytest.mark.durable_schedule("call0:after-effect?key=ann&seq=1", "greet:after-complete?key=bo")
def test_a_pinned_crash_schedule(durable: Any) -> None:
    """FA-1: a durable_schedule marker pins a two-crash schedule that explore() runs on the flink agent
    (first, before the generated ones) and checks against the crash-free run."""
    assert len(durable.pinned) == 1
    assert durable.explore(Greeter, INPUTS, max_crashes=1, max_examples=1, config=CONFIG) == 2


def test_golden_journal(durable: Any) -> None:
    """FA-1, FA-3: the golden journal of the flink agent matches the committed one (function ids are the
    user's functions, as for a reference agent)."""
    assert durable.check_journal(Greeter, INPUTS, config=CONFIG) == "matched"
    journal = Path(__file__).parent / "durable_journals"
    text = "".join(p.read_text() for p in journal.rglob("test_golden_journal.Greeter*.json"))
    assert "tests.flink_agents.greeter_flink.greeting" in text


def test_durable_sweep_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FA-1: `durable sweep MODULE:Agent` crashes a flink agent at every fault point."""
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps({"key": k, "input": v}) + "\n" for k, v in INPUTS))
    assert durable_cli(["sweep", "tests.flink_agents.greeter_flink:Greeter", "--inputs", str(inputs)]) == 0
    out = capsys.readouterr().out
    assert "0 with violations" in out and "greet" in out


def test_the_runner_conformance_factory_runs_a_flink_agent() -> None:
    """FA-1: the reference runner of the conformance kit accepts the flink agent."""
    factory = RunnerFactory.reference()
    result = factory.run(Greeter, INPUTS, store=factory.new_store(), config=CONFIG)
    assert result.outputs == EXPECTED
