"""One verdict for `durable sweep` and the plugin (CLI-1, CLI-2): the same agent gets the same violations
from both, and the CLI never calls an agent safe when it could not check its effects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_durable.cli import main as durable
from pytest_durable.sweep import Verdict, sweep
from reference_runtime.exploration.harness import DurableHarness, DurableInvariantError
from reference_runtime.exploration.ledger import Ledger
from reference_runtime.stores.memory import InMemoryStore

from . import verdict_agents
from .verdict_agents import NonIdempotent, OutsideEffect, Reconciled

pytest_plugins = ["pytester"]
MODULE = "tests.plugin.verdict_agents"
CASES = [(OutsideEffect, "notify"), (NonIdempotent, "charge")]
INPUTS = [("k", 2)]


def _cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], agent: type, *effects: str) -> tuple[int, str]:
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("\n".join(json.dumps({"key": k, "input": v}) for k, v in INPUTS))
    args = ["sweep", f"{MODULE}:{agent.__name__}", "--inputs", str(inputs)]
    for effect in effects:
        args += ["--effect", f"{MODULE}:{effect}"]
    code = durable(args)
    return code, capsys.readouterr().out


def _plugin_violations(agent: type, effect: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    harness = DurableHarness(InMemoryStore, "memory:")
    monkeypatch.setattr(verdict_agents, effect, harness.ledger.wrap(getattr(verdict_agents, effect), effect))
    with pytest.raises(DurableInvariantError) as info:
        harness.sweep(agent, INPUTS)
    return [line.strip() for line in str(info.value).splitlines() if line.startswith("  ")]


@pytest.mark.parametrize(("agent", "effect"), CASES, ids=["outside-effect", "non-idempotent-call"])
def test_cli_and_plugin_give_the_same_verdict(
    agent: type, effect: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """CLI-1: an agent that ships an effect twice fails `durable sweep --effect` with exactly the
    violations (PLG-3, duplicated) the plugin's sweep reports for it."""
    code, out = _cli(tmp_path, capsys, agent, effect)
    cli_violations = [line.strip() for line in out.splitlines() if line.startswith("    ")]
    assert code == 1
    assert out.splitlines()[-1].endswith("with violations: UNSAFE")
    assert cli_violations and all(v.startswith("PLG-3: effect ") and " duplicated " in v for v in cli_violations)
    assert not hasattr(getattr(verdict_agents, effect), "__wrapped__"), "--effect restores the function"
    assert cli_violations == _plugin_violations(agent, effect, monkeypatch)


@pytest.mark.parametrize(("agent", "effect"), CASES, ids=["outside-effect", "non-idempotent-call"])
def test_the_plugin_marker_fails_the_same_agent_with_plg3(agent: type, effect: str, pytester: pytest.Pytester) -> None:
    """CLI-1: the same agents fail a durable_sweep test with PLG-3 when the effect goes through the ledger."""
    pytester.makepyfile(verdict_agents=Path(verdict_agents.__file__).read_text())
    pytester.makepyfile(
        test_agent=f"""
        import pytest
        from verdict_agents import {agent.__name__}
        import verdict_agents as agents

        @pytest.fixture(autouse=True)
        def effects(durable_ledger, monkeypatch):
            monkeypatch.setattr(agents, "{effect}", durable_ledger.wrap(agents.{effect}, "{effect}"))

        @pytest.mark.durable_sweep({agent.__name__}, {INPUTS!r})
        def test_sweep(durable):
            durable.run()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"*PLG-3: effect {effect} for * duplicated in the run crashing at *"])


@pytest.mark.parametrize(("agent", "effect"), CASES, ids=["outside-effect", "non-idempotent-call"])
def test_without_declared_effects_the_cli_says_not_verified(
    agent: type, effect: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI-2: with no effect declared the CLI cannot see the duplicate; it says so instead of "safe"."""
    code, out = _cli(tmp_path, capsys, agent)
    assert code == 0
    assert out.splitlines()[-1].endswith("0 with violations: NOT VERIFIED (see the notes above)")
    assert "note: no side effects were declared, so duplicate effects were not checked" in out
    assert "safe" not in out.splitlines()[-1].replace("NOT VERIFIED", "")


def test_a_re_executed_call_without_a_declared_effect_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI-2: a call that ran again after a crash with no reconciler is listed as unchecked when none of
    the declared effects was booked for it."""
    code, out = _cli(tmp_path, capsys, NonIdempotent, "notify")
    assert code == 0
    assert "1 call(s) ran again after a crash with no record and no reconciler (DE-6)" in out
    assert "k/0/handle/0" in out and "NOT VERIFIED" in out.splitlines()[-1]


def test_safe_only_when_everything_was_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI-2: the verdict says "safe" for a reconciled agent whose effect is declared and checked in a
    fresh world per run, and never without declared effects."""
    ledger = Ledger()
    world = DurableHarness(InMemoryStore, "memory:")
    world._ledger = ledger
    payments = world.world(verdict_agents.Payments)
    monkeypatch.setattr(verdict_agents, "PAYMENTS", ledger.client(payments, "payments", methods=["charge"]))
    outcomes = sweep(Reconciled, INPUTS, InMemoryStore, ledger)
    assert Verdict(outcomes, effects_declared=True).summary().endswith(": safe")
    assert Verdict(outcomes, effects_declared=False).summary().endswith("NOT VERIFIED (see the notes above)")
    broken = sweep(NonIdempotent, INPUTS, InMemoryStore, None)
    assert Verdict(broken, effects_declared=True).unchecked == ["k/0/handle/0"]
    assert "NOT VERIFIED" in Verdict(broken, effects_declared=True).summary()


def _refund_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str], module: str, *effects: str) -> tuple[int, str]:
    inputs = tmp_path / "refunds.jsonl"
    inputs.write_text(json.dumps({"key": "alice", "input": {"order": "A-1", "amount": 30}}))
    args = ["sweep", f"pytest_durable.examples.buggy_refund.{module}:RefundAgent", "--inputs", str(inputs)]
    for effect in effects:
        args += ["--effect", f"pytest_durable.examples.buggy_refund.services:{effect}"]
    code = durable(args)
    return code, capsys.readouterr().out


def test_effect_at_param_declares_what_the_provider_deduplicates_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI-1, PLG-3: `--effect MODULE:NAME@PARAM` is the CLI form of `wrap(..., dedup=...)`. The tutorial's
    fixed agent sends a stable request id, which its provider deduplicates: declared with the id it is
    safe, declared without it a retried call is a duplicate. The buggy agent stays UNSAFE either way."""
    dedup = ("PAYMENTS.refund@request_id", "MAILER.send@message_id")
    code, out = _refund_sweep(tmp_path, capsys, "refund_fixed", *dedup)
    assert code == 0 and out.splitlines()[-1].endswith("0 with violations: safe"), out
    code, out = _refund_sweep(tmp_path, capsys, "refund_fixed", "PAYMENTS.refund", "MAILER.send")
    assert code == 1 and " duplicated " in out and out.splitlines()[-1].endswith("UNSAFE")
    code, out = _refund_sweep(tmp_path, capsys, "refund_buggy", *dedup)
    assert code == 1 and out.splitlines()[-1].endswith("UNSAFE")
    from pytest_durable.examples.buggy_refund import services

    assert not hasattr(services.PAYMENTS.refund, "__wrapped__"), "--effect restores the method"


def test_effect_at_an_unknown_param_is_one_line_naming_the_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI-3: a dedup parameter the function does not have is one line with exit 2, listing its parameters."""
    inputs = tmp_path / "refunds.jsonl"
    inputs.write_text(json.dumps({"key": "alice", "input": {"order": "A-1", "amount": 30}}))
    code = durable(
        [
            "sweep",
            "pytest_durable.examples.buggy_refund.refund_fixed:RefundAgent",
            "--inputs",
            str(inputs),
            "--effect",
            "pytest_durable.examples.buggy_refund.services:PAYMENTS.refund@request",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'request' is not a parameter" in err and "order, amount, request_id" in err
