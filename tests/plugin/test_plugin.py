"""The pytest plugin, tested as users meet it: through pytester projects (PLG-*)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

AGENT = """
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
"""

TEST = """
from agent_mod import Refund

def test_refund(durable_harness):
    durable_harness.sweep(Refund, [("order-1", 30), ("order-2", 5)])

def test_crash_once(durable_harness):
    result = durable_harness.run(Refund, [("order-1", 30)], crash_at=["call0:after-effect"])
    assert result.failovers == 1 and result.outputs["order-1"][-1] == "charged 30"
"""


def project(pytester: pytest.Pytester, notify: str) -> None:
    pytester.makepyfile(agent_mod=AGENT.replace("{notify}", notify), test_user=TEST)
    pytester.syspathinsert(str(ROOT))


def test_a_correct_agent_passes_the_sweep(pytester: pytest.Pytester) -> None:
    """PLG-1: every fault point is crashed at; a durable agent passes."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "durable: store memory:, seed * (repeat with --durable-seed)",
            "durable: * fault points swept, * crashes injected",
        ]
    )


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
    result.stderr.fnmatch_lines(["*--durable-store*'ftp://x'*unknown scheme*"])


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
    """PLG-4: the plugin module imports neither the runtime, hypothesis, freezegun nor cloudpickle."""
    code = (
        "import sys, pytest_durable.plugin; print(sorted(m for m in ('reference_runtime', 'hypothesis', "
        "'cloudpickle', 'freezegun') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_durable_sweep_cli(tmp_path: Path) -> None:
    """PLG-1: `durable sweep` prints one line per fault point and fails on violations."""
    (tmp_path / "agent_mod.py").write_text(AGENT.replace("{notify}", 'ctx.send_event(OutputEvent(notify("x")))'))
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("\n".join(json.dumps({"key": "o", "input": n}) for n in (1, 2)))
    env_cmd = [sys.executable, "-m", "pytest_durable.cli", "sweep", "agent_mod:Refund", "--inputs", str(inputs)]
    out = subprocess.run(
        env_cmd, capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    )
    assert out.returncode == 1, out.stderr
    assert "after-effect key='o' seq=0 action='handle' call_index=0" in out.stdout
    assert "FAIL" in out.stdout and "REC-6" in out.stdout
    assert out.stdout.strip().splitlines()[-1].endswith("with violations: UNSAFE")


SWEPT = """
import pytest
from agent_mod import Refund

INPUTS = [("order-1", 30)]

@pytest.mark.durable_sweep(Refund, INPUTS)
def test_refund(durable):
    result = durable.run()
    assert result.outputs["order-1"][0] == "charged 30"

def test_plain():
    assert 1 + 1 == 2
"""


def sweep_project(pytester: pytest.Pytester, notify: str) -> None:
    pytester.makepyfile(agent_mod=AGENT.replace("{notify}", notify), test_user=SWEPT)
    pytester.syspathinsert(str(ROOT))


def test_sweep_marker_makes_one_test_per_fault_point(pytester: pytest.Pytester) -> None:
    """PLG-1: crash-free first, then one id per fault point, named like call0:after-effect."""
    sweep_project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=11)
    result.stdout.fnmatch_lines(
        [
            "*test_refund?crash=none? PASSED*",
            "*test_refund?crash=call0:before-call? PASSED*",
            "*test_refund?crash=call0:after-effect? PASSED*",
            "*test_refund?crash=call1:after-record? PASSED*",
            "*test_refund?crash=handle:before-complete? PASSED*",
            "*test_refund?crash=checkpoint? PASSED*",
            "*test_plain PASSED*",
        ]
    )


def test_a_failing_user_project_reads_point_call_and_clause(pytester: pytest.Pytester) -> None:
    """PLG-1: the failing id names the point; the message names the point, the call and the clause."""
    sweep_project(pytester, 'ctx.send_event(OutputEvent(notify("refund sent")))')
    result = pytester.runpytest_subprocess("-n", "2")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] >= 1 and outcomes["passed"] >= 1
    result.stdout.fnmatch_lines(
        [
            "FAILED test_user.py::test_refund?crash=handle:before-complete? - *",
        ]
    )
    result = pytester.runpytest_subprocess("-k", "before-complete")
    result.stdout.fnmatch_lines(
        [
            "*durable invariants violated after crashing at before-complete key='order-1' seq=0 action='handle':",
            "*REC-6: outputs differ after a crash at before-complete*",
            "*note: two crash-free runs already differ although their durable calls are the same*",
        ]
    )


def test_sweep_marker_misuse_is_reported(pytester: pytest.Pytester) -> None:
    """PLG-7: a marker without the durable fixture, or with wrong arguments, says how to use it."""
    pytester.makepyfile(
        agent_mod=AGENT.replace("{notify}", "pass"),
        test_user="""
import pytest
from agent_mod import Refund

@pytest.mark.durable_sweep(Refund, [("k", 1)])
def test_no_fixture():
    pass

@pytest.mark.durable_sweep("Refund")
def test_bad_args(durable):
    pass
""",
    )
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["*durable_sweep needs the durable fixture*"])
    pytester.makepyfile(
        test_user="""
import pytest

@pytest.mark.durable_sweep("Refund")
def test_bad_args(durable):
    pass
"""
    )
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(
        [
            "*durable_sweep takes 2 positional arguments, got 1; use "
            "@pytest.mark.durable_sweep(AgentClass, [[](key, input), ...[]], **runner_options)*"
        ]
    )
    pytester.makepyfile(
        test_user="""
import pytest
from agent_mod import Refund

@pytest.mark.durable_sweep(Refund, [("k", 1)])
def test_forgot_to_run(durable):
    pass
"""
    )
    result = pytester.runpytest_subprocess()
    assert result.parseoutcomes()["errors"] == 7  # crash-free + 6 points, none exercised
    result.stdout.fnmatch_lines(["*marked durable_sweep but never called durable.run()*"])


def test_same_ids_and_totals_under_xdist(pytester: pytest.Pytester) -> None:
    """PLG-7: collection is identical on every worker, and the summary sums what the workers did."""
    sweep_project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess("-n", "2", "--durable-seed", "42")
    result.assert_outcomes(passed=11)
    result.stdout.fnmatch_lines(
        ["durable: store memory:, seed 42 *", "durable: 9 fault points swept, 9 crashes injected"]
    )


EXPLORE = """
import pytest
from agent_mod import Refund

def test_explore(durable):
    durable.explore(Refund, [("order-1", 30)], max_crashes=2)
"""


def test_explore_failure_prints_the_marker_and_pinning_replays_it(pytester: pytest.Pytester) -> None:
    """PLG-5: a failing schedule is shrunk and printed as a marker; the marker pins and replays it."""
    pytester.makepyfile(
        agent_mod=AGENT.replace("{notify}", 'ctx.send_event(OutputEvent(notify("x")))'), test_user=EXPLORE
    )
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess("--durable-seed", "3", "--durable-max-examples", "20")
    result.assert_outcomes(failed=1)
    lines = [line for line in result.outlines if line.startswith("E ") and "@pytest.mark.durable_schedule(" in line]
    assert lines, result.stdout.str()
    marker = lines[0][1:].strip()
    pinned = EXPLORE.replace("def test_explore", f"{marker}\ndef test_explore")
    pytester.makepyfile(test_user=pinned)
    again = pytester.runpytest_subprocess("--durable-max-examples", "1")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*durable invariants violated after crashing at*"])
    assert "minimal failing crash schedule" not in again.stdout.str()  # it failed on the pinned one


def test_the_summary_counts_the_crashes_explore_injects(pytester: pytest.Pytester) -> None:
    """PLG-18: a test that only explores reports its crashes in the terminal summary and JUnit: every schedule
    counted fired all its crashes, so there are at least as many crashes as schedules."""
    pytester.makepyfile(agent_mod=AGENT.replace("{notify}", 'ctx.durable_execute(notify, "sent")'), test_user=EXPLORE)
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess("--durable-seed", "3", "--durable-max-examples", "12", "--junitxml=o.xml")
    result.assert_outcomes(passed=1)
    line = next(x for x in result.outlines if x.startswith("durable: ") and "crash schedules run" in x)
    counts = {name: int(n) for n, name in re.findall(r"(\d+) (crash schedules run|crashes injected)", line)}
    assert counts.get("crash schedules run") == 12, line
    assert counts.get("crashes injected", 0) >= 12, line
    xml = (pytester.path / "o.xml").read_text()
    assert f'<property name="durable_crashes" value="{counts["crashes injected"]}"' in xml


JOURNAL = """
from agent_mod import Refund

def test_journal(durable):
    durable.check_journal(Refund, [("order-1", AMOUNT)])
"""


def test_golden_journals_through_the_option(pytester: pytest.Pytester) -> None:
    """PLG-2: --durable-update-journals writes, a plain run compares, a change fails with the diff."""
    pytester.makepyfile(agent_mod=AGENT.replace("{notify}", "pass"), test_user=JOURNAL.replace("AMOUNT", "30"))
    pytester.syspathinsert(str(ROOT))
    pytester.runpytest_subprocess().stdout.fnmatch_lines(["*no golden journal at*--durable-update-journals*"])
    pytester.runpytest_subprocess("--durable-update-journals").assert_outcomes(passed=1)
    golden = pytester.path / "durable_journals" / "test_user" / "test_journal.Refund.json"
    assert json.loads(golden.read_text())["calls"][0]["function_id"] == "agent_mod.charge"
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    pytester.makepyfile(test_user=JOURNAL.replace("AMOUNT", "31"))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*journal diverges at entry 0 (call order-1/0/handle/0):*", "*args_digest: golden '*' != now '*'*"]
    )


def test_ini_twins_and_option_validation(pytester: pytest.Pytester) -> None:
    """PLG-7: every option has an ini twin, and bad values are usage errors at configure time."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    pytester.makeini("[pytest]\ndurable_store = sqlite:\ndurable_seed = 9\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["durable: store sqlite:, seed 9 *"])
    for args, message in (
        (["--durable-seed", "x"], "*--durable-seed (ini durable_seed) = 'x': expected an integer*"),
        (["--durable-max-examples", "0"], "*--durable-max-examples (ini durable_max_examples) = '0': expected a pos*"),
    ):
        bad = pytester.runpytest_subprocess(*args)
        assert bad.ret == pytest.ExitCode.USAGE_ERROR
        bad.stderr.fnmatch_lines([message])


@pytest.mark.parametrize("name", ["durable_update_journals", "durable_re_execute"])
@pytest.mark.parametrize("where", ["-o", "ini"])
def test_a_bad_yes_no_value_is_one_usage_error_naming_the_option(
    pytester: pytest.Pytester, name: str, where: str
) -> None:
    """PLG-7: a yes/no ini value is parsed when pytest configures, with the runtime's boolean spellings; a bad
    one stops pytest with one line naming the option, the value and the accepted spellings (no test runs)."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    args = ["-o", f"{name}=maybe"] if where == "-o" else []
    if where == "ini":
        pytester.makeini(f"[pytest]\n{name} = maybe\n")
    bad = pytester.runpytest_subprocess(*args)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    flag = "--" + name.replace("_", "-")
    bad.stderr.fnmatch_lines(
        [f"ERROR: {flag} (ini {name}) = 'maybe': expected a boolean (true/false, 1/0, yes/no, on/off)*"]
    )
    assert "Traceback" not in bad.stdout.str() + bad.stderr.str()
    assert len((bad.stdout.str() + bad.stderr.str()).strip().splitlines()) <= 3
    good = pytester.runpytest_subprocess("-o", f"{name}=Off")  # the runtime's spellings, any case
    good.assert_outcomes(passed=2)


def test_a_journal_dir_that_is_a_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """PLG-7: --durable-journal-dir naming an existing file is refused when pytest configures."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    bad = pytester.runpytest_subprocess("--durable-journal-dir", "agent_mod.py")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*--durable-journal-dir (ini durable_journal_dir) = 'agent_mod.py': * is not a directory"]
    )


def test_junit_xml_carries_the_counts(pytester: pytest.Pytester) -> None:
    """PLG-7: per-test counts are JUnit properties."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess("--junitxml=out.xml", "-n", "2")
    result.assert_outcomes(passed=2)
    xml = (pytester.path / "out.xml").read_text()
    assert '<property name="durable_fault_points" value="17"' in xml
    assert '<property name="durable_crashes" value="1"' in xml


def test_tests_without_durable_fixtures_are_untouched(pytester: pytest.Pytester) -> None:
    """PLG-4: no summary section, no properties, nothing imported for a project that does not use it."""
    pytester.makepyfile(
        test_x="""
import sys
def test_x():
    assert [m for m in ("reference_runtime", "freezegun", "cloudpickle") if m in sys.modules] == []
"""
    )
    result = pytester.runpytest_subprocess("--junitxml=o.xml")
    result.assert_outcomes(passed=1)
    assert "durable:" not in result.stdout.str().split("test session starts")[1].split("rootdir")[1]
    assert "durable_" not in (pytester.path / "o.xml").read_text()


def test_sweep_on_a_real_redis_store(pytester: pytest.Pytester, real_redis: str) -> None:
    """PLG-1, PLG-7: --durable-store redis://… runs the same sweep on a real server, one namespace per store."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess("--durable-store", real_redis)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"durable: store {real_redis}, seed *"])
