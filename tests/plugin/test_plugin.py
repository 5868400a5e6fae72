"""The pytest plugin, tested as users meet it: through pytester projects (PLG-*)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

AGENT = '''
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action

SENT = []

def charge(amount):
    return f"charged {amount}"

def notify(text):
    SENT.append(text)
    return len(SENT)

class Refund(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        receipt = ctx.durable_execute(charge, event.attributes["input"])
        {notify}
        ctx.send_event(OutputEvent(receipt))
'''

TEST = '''
from agent_mod import Refund

def test_refund(durable_harness):
    durable_harness.sweep(Refund, [("order-1", 30), ("order-2", 5)])

def test_crash_once(durable_harness):
    result = durable_harness.run(Refund, [("order-1", 30)], crash_at=["call0:after-effect"])
    assert result.failovers == 1 and result.outputs["order-1"][-1] == "charged 30"
'''


def project(pytester: pytest.Pytester, notify: str) -> None:
    pytester.makepyfile(agent_mod=AGENT.replace("{notify}", notify), test_user=TEST)
    pytester.syspathinsert(str(ROOT))


def test_a_correct_agent_passes_the_sweep(pytester: pytest.Pytester) -> None:
    """PLG-1: every fault point is crashed at; a durable agent passes."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["durable: store memory:", "durable: * fault points exercised"])


def test_a_side_effect_outside_durable_calls_is_reported_with_its_clause(pytester: pytest.Pytester) -> None:
    """PLG-1: a run-dependent output after recovery fails with the point and REC-6."""
    project(pytester, 'ctx.send_event(OutputEvent(notify("refund sent")))')
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*durable invariants violated*", "*REC-6: outputs differ after a crash at *"])


def test_bad_store_url_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """PLG-4: options are validated at configure time."""
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest_subprocess("--durable-store", "ftp://x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--durable-store 'ftp://x'*"])


def test_sqlite_store_option(pytester: pytest.Pytester) -> None:
    """PLG-1: the same sweep passes on the SQLite store chosen by option."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess("--durable-store", "sqlite:")
    result.assert_outcomes(passed=2)


def test_works_under_xdist(pytester: pytest.Pytester) -> None:
    """PLG-4: the plugin works with pytest -n 2."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=2)


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    """PLG-4: the plugin module imports neither the runtime, hypothesis nor cloudpickle."""
    code = ("import sys, pytest_durable.plugin; "
            "print(sorted(m for m in ('reference_runtime', 'hypothesis', 'cloudpickle') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_durable_sweep_cli(tmp_path: Path) -> None:
    """PLG-1: `durable sweep` prints one line per fault point and fails on violations."""
    (tmp_path / "agent_mod.py").write_text(AGENT.replace("{notify}", 'ctx.send_event(OutputEvent(notify("x")))'))
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("\n".join(json.dumps({"key": "o", "input": n}) for n in (1, 2)))
    env_cmd = [sys.executable, "-m", "pytest_durable.cli", "sweep", "agent_mod:Refund", "--inputs", str(inputs)]
    out = subprocess.run(env_cmd, capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 1, out.stderr
    assert "after-effect key='o' seq=0 action='handle' call_index=0" in out.stdout
    assert "FAIL" in out.stdout and "REC-6" in out.stdout
    assert out.stdout.strip().splitlines()[-1].endswith("with violations")
