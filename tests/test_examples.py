"""The examples run as documented (issue 4, item 5)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "pytest_durable" / "examples"


def test_react_agent_keeps_every_tool_effect_exactly_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TPC-2, REC-5, IDN-6: the example crashes at every fault point; each table ends with one row and the
    payment is committed once."""
    from pytest_durable.examples import react_agent

    assert react_agent.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "0 with duplicated or lost effects" in out
    assert out.count("ok   crash at") >= 30


pytest_plugins = ["pytester"]


def _tutorial(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, agent: str) -> pytest.RunResult:
    pytester.syspathinsert(str(ROOT))
    package = pytester.mkpydir("buggy_refund")
    for name in ("services.py", "refund_buggy.py", "refund_fixed.py", "test_refund.py"):
        (package / name).write_text((EXAMPLES / "buggy_refund" / name).read_text())
    monkeypatch.setenv("REFUND_AGENT", agent)
    return pytester.runpytest_subprocess("--durable-seed", "5", "--durable-max-examples", "30")


def test_tutorial_buggy_agent_is_red_for_both_bugs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """PLG-1, PLG-2, PLG-3: the tutorial's buggy agent fails the sweep (duplicated e-mail and refund), the
    determinism check (time in an argument) and the schedule exploration."""
    result = _tutorial(pytester, monkeypatch, "refund_buggy")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] >= 3
    out = result.stdout.str()
    assert "PLG-3: effect email for outside:('order-7', 'refunded 30') duplicated" in out
    assert "PLG-3: effect refund for order-7/0/refund/0 duplicated" in out
    assert "args_digest: run 1" in out and "time, randomness, ids or set/dict ordering" in out
    assert "minimal failing crash schedule" in out and "@pytest.mark.durable_schedule(" in out


def test_tutorial_fixed_agent_is_green(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """PLG-1: after both fixes every crash point, the determinism check and the schedules pass."""
    result = _tutorial(pytester, monkeypatch, "refund_fixed")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["durable: 9 fault points swept, * crash schedules run, * crashes injected*"])
    line = next(x for x in result.outlines if x.startswith("durable: 9 fault points swept"))
    schedules, crashes = (int(re.search(rf"(\d+) {what}", line).group(1)) for what in ("crash schedules", "crashes"))
    # One crash per swept point, and at least one per explored schedule, every one of which fired (PLG-18).
    assert crashes >= 9 + schedules, line


def test_refund_example_crashes_between_its_two_calls_and_books_one_refund() -> None:
    """DOC-5, REC-6: the README's agent makes two durable calls, so CrashAt(call_index=1) fires; recovery
    replays the look-up, repeats the refund under the same idempotency key, and one refund is booked."""
    from pytest_durable.examples import refund

    refund.PAYMENTS.clear()
    assert refund.main() == 0
    assert list(refund.PAYMENTS.values()) == [("order-7", 30)]
