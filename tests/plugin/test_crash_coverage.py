"""Crash coverage (COV-*): what the crash tests never reached, on the tutorial's refund agent grown to two actions
(pytest_durable/examples/buggy_refund/refund_notify.py, docs/plugin/coverage.md).

Every project runs in a subprocess whose environment no longer starts the coverage.py run of this suite's CI
(``coverage run`` with ``patch = subprocess``): that run measures only this distribution's packages, so under it the
plugin would use it (COV-7) and report the example as not measured. The tests of COV-7 start such runs on purpose.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reference_runtime import CrashAt, FaultInjector, Runner

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "pytest_durable" / "examples" / "buggy_refund" / "refund_notify.py"
SOURCE = AGENT.read_text(encoding="utf-8").splitlines()
DOC = ROOT / "docs" / "plugin" / "coverage.md"

FIXTURE = """
import pytest

from pytest_durable.examples.buggy_refund import services
from pytest_durable.examples.buggy_refund.refund_notify import RefundAgent

INPUTS = [("order-7", {"order": "order-7", "amount": 30})]


@pytest.fixture(autouse=True)
def fresh_services(durable, monkeypatch):
    monkeypatch.setattr(services, "PAYMENTS", durable.world(services.Payments))
    monkeypatch.setattr(services, "MAILER", durable.world(services.Mailer))
"""
#: A suite that crashes the refund action only: the notify action's points are never crashed.
REFUND_ONLY = (
    FIXTURE
    + """

@pytest.mark.parametrize("at", ["call0:after-pending?action=refund", "call0:after-effect?action=refund",
                                "refund:before-complete"])
def test_refund_survives_a_crash(durable, at):
    durable.crash(RefundAgent, INPUTS, at)
"""
)
#: A suite that sweeps every point of both actions.
EVERY_POINT = (
    FIXTURE
    + """

@pytest.mark.durable_sweep(RefundAgent, INPUTS)
def test_every_crash(durable):
    durable.run()
"""
)


def line_of(text: str) -> int:
    """The line of refund_notify.py holding ``text`` (the tests name lines by content, not number)."""
    [n] = [i for i, line in enumerate(SOURCE, 1) if text in line]
    return n


@pytest.fixture
def own_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Subprocesses start without the coverage.py run of this suite's CI."""
    for name in ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START", "COV_CORE_SOURCE", "COV_CORE_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def clean_run(args: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """``args`` run in ``cwd`` by a process this suite's coverage.py run does not measure (module docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    return subprocess.run(args, cwd=cwd, env={**env, **extra}, capture_output=True, text=True)


def run_suite(pytester: pytest.Pytester, suite: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makepyfile(test_refund=suite)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--durable-coverage-json", "cov.json", *args)
    return result, json.loads((pytester.path / "cov.json").read_text(encoding="utf-8"))


def agent_of(report: dict[str, Any]) -> dict[str, Any]:
    [agent] = [
        a for a in report["agents"] if a["agent"] == "pytest_durable.examples.buggy_refund.refund_notify.RefundAgent"
    ]
    return agent


def file_of(report: dict[str, Any]) -> dict[str, Any]:
    [found] = [
        f for f in report["files"] if f["file"].endswith("pytest_durable/examples/buggy_refund/refund_notify.py")
    ]
    return found


@pytest.mark.usefixtures("own_process")
def test_a_suite_that_crashes_one_action_shows_the_other_actions_never_crashed_points(
    pytester: pytest.Pytester,
) -> None:
    """COV-2: every point the crash-free runs reached, per agent; the notify action's are never crashed and come
    first, each with a selector that crashes exactly there when pasted into a test."""
    result, report = run_suite(pytester, REFUND_ONLY)
    result.assert_outcomes(passed=3)
    points = agent_of(report)["fault_points"]
    by_action = {(p["action"], p["crashed"] > 0) for p in points if p["action"]}
    assert ("notify", True) not in by_action and ("notify", False) in by_action
    crashed = {p["point"] for p in points if p["crashed"]}
    assert crashed == {
        "call0:after-pending?action=refund",
        "call0:after-effect?action=refund",
        "refund:before-complete",
    }
    firsts = [p["crashed"] for p in points]
    assert firsts == sorted(firsts, key=lambda n: n > 0), "never-crashed points come first"
    assert all(p["reached"] >= 3 and p["reached_by"].startswith("test_refund.py::") for p in points)
    never = [p for p in points if not p["crashed"]]
    assert len(never) == len(points) - 3 == report["summary"]["never_crashed"]
    # Each selector crashes the agent at its point.
    for p in never:
        injector = FaultInjector([CrashAt.parse(p["selector"])])
        Runner(_agent(), injector=injector).run([("order-7", {"order": "order-7", "amount": 30})])
        assert [f.phase.value for f in injector.fired] == [p["phase"]]
        assert injector.fired[0].action == p["action"]
    out = result.stdout.str()
    assert "11 of 14 fault points never crashed" in out
    assert "call0:after-pending?key=order-7&seq=0&action=notify" in out


def _agent() -> Any:
    from pytest_durable.examples.buggy_refund.refund_notify import RefundAgent

    return RefundAgent


@pytest.mark.usefixtures("own_process")
def test_a_branch_reached_only_after_a_crash_is_recovery_only(pytester: pytest.Pytester) -> None:
    """COV-3: the refund reconciler's lines ran only during recovery; the notify reconciler's never ran; the notify
    action, which no crash re-entered, is called out with its lines; lines both runs ran are in both lists."""
    result, report = run_suite(pytester, REFUND_ONLY)
    result.assert_outcomes(passed=3)
    lines = file_of(report)
    reconciler = [line_of("key = current_call().idempotency_key"), line_of("if any(request_id == key")]
    assert set(reconciler) <= set(lines["recovery_only"])
    assert line_of("return issue_refund(order, amount)  # the crash came") in lines["recovery_only"]
    assert line_of('send_email(order, f"refunded: {receipt}")') in lines["never_run"]
    receipt = line_of("receipt = ctx.durable_execute(issue_refund")
    assert receipt in lines["crash_free"] and receipt in lines["recovery"] and receipt not in lines["recovery_only"]
    assert not set(lines["recovery_only"]) & set(lines["crash_free"])
    notify = {a["action"]: a for a in agent_of(report)["actions"]}
    assert notify["notify"]["recoveries"] == 0 and notify["refund"]["recoveries"] >= 3
    assert notify["notify"]["first"] == line_of('@action("Refunded")')  # its decorators included
    out = result.stdout.str()
    assert re.search(r"action no crash re-entered: notify \(.*refund_notify\.py:\d+-\d+\)", out)
    assert f"4: {reconciler[0]}-{reconciler[0] + 3}" in out


@pytest.mark.usefixtures("own_process")
def test_a_reconciler_never_exercised_is_flagged_and_a_full_sweep_flags_nothing(pytester: pytest.Pytester) -> None:
    """COV-4: the notify call's reconciler never invoked, send_email's recorded result never replayed, the memory
    notify writes never replayed after a crash; a sweep of every point exercises all of them (so each check can
    fail)."""
    result, report = run_suite(pytester, REFUND_ONLY)
    result.assert_outcomes(passed=3)
    agent = agent_of(report)
    reconcilers = {r["action"]: r for r in agent["reconcilers"]}
    assert reconcilers["notify"]["invoked"] == 0 and reconcilers["notify"]["reconciler"].endswith("mail_sent")
    assert reconcilers["notify"]["line"] == line_of("def mail_sent")
    assert reconcilers["refund"]["invoked"] >= 2
    results = {f["function"].rpartition(".")[2]: f for f in agent["durable_functions"]}
    assert results["send_email"]["replayed"] == 0 and results["issue_refund"]["replayed"] >= 1
    memory = {(m["action"], m["path"]): m for m in agent["memory"]}
    assert memory[("notify", "last_receipt")]["written"] >= 1 and memory[("notify", "last_receipt")]["replayed"] == 0
    out = result.stdout.str()
    assert "reconciler never invoked: RefundAgent.notify.<locals>.mail_sent" in out
    assert "result never replayed: pytest_durable.examples.buggy_refund.refund_notify.send_email" in out
    assert "memory never replayed after a crash: short_term last_receipt (notify)" in out

    full, swept = run_suite(pytester, EVERY_POINT)
    full.assert_outcomes(passed=15)
    # The marker learnt the points at collection, for the marked test.
    assert {p["reached_by"] for p in agent_of(swept)["fault_points"]} == {"test_refund.py::test_every_crash"}
    summary = swept["summary"]
    assert summary["never_crashed"] == 0 and summary["reconcilers_never_invoked"] == 0
    assert summary["results_never_replayed"] == 0 and summary["memory_never_replayed"] == 0
    assert summary["actions_never_reentered"] == 0 and file_of(swept)["never_run"] == []


@pytest.mark.usefixtures("own_process")
def test_under_xdist_the_workers_reports_combine_into_the_serial_one(pytester: pytest.Pytester) -> None:
    """COV-6: two workers measure, the controller combines: the same report as one process."""
    _, serial = run_suite(pytester, REFUND_ONLY)
    result, combined = run_suite(pytester, REFUND_ONLY, "-n", "2")
    result.assert_outcomes(passed=3)
    assert combined == serial


def _coverage_json(cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "coverage", "json", "-o", "-", "--show-contexts"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    [name] = [f for f in data["files"] if f.endswith("refund_notify.py")]
    found: dict[str, Any] = data["files"][name]
    return found


@pytest.mark.usefixtures("own_process")
def test_a_coverage_run_keeps_its_lines_and_gains_the_contexts(pytester: pytest.Pytester) -> None:
    """COV-7: under `coverage run`, the plugin measures in that run: its executed and missing lines are those of
    the same run without the option, its contexts gain the durable ones, and the crash-coverage report is the one
    of a run on our own measurement."""
    _, own = run_suite(pytester, REFUND_ONLY)
    rc = f"[run]\nsource = {ROOT / 'pytest_durable' / 'examples' / 'buggy_refund'}\nbranch = true\n"
    (pytester.path / ".coveragerc").write_text(rc, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    base = [sys.executable, "-m", "coverage", "run", "-m", "pytest", "-p", "no:cacheprovider"]
    plain = clean_run(base, pytester.path)
    assert plain.returncode == 0, plain.stdout
    before = _coverage_json(pytester.path, env)
    both = clean_run([*base, "--durable-coverage-json", "cov.json"], pytester.path)
    assert both.returncode == 0, both.stdout
    after = _coverage_json(pytester.path, env)
    assert after["executed_lines"] == before["executed_lines"] and after["missing_lines"] == before["missing_lines"]
    assert after["summary"] == before["summary"]
    contexts = {c for cs in after["contexts"].values() for c in cs}
    assert any(c.startswith("durable:recovery RefundAgent.refund after ") for c in contexts)
    shared = json.loads((pytester.path / "cov.json").read_text(encoding="utf-8"))
    assert shared["measurement"] == "shared" and own["measurement"] == "own"
    assert shared["files"] == own["files"] and shared["agents"] == own["agents"]


@pytest.mark.usefixtures("own_process")
def test_pytest_cov_keeps_its_test_contexts(pytester: pytest.Pytester) -> None:
    """COV-7: beside pytest-cov (--cov-context=test, also on xdist workers) the durable contexts follow pytest-cov's
    own, and the crash-coverage report is the one of our own measurement."""
    _, own = run_suite(pytester, REFUND_ONLY)
    for extra in ((), ("-n", "2")):
        result, shared = run_suite(
            pytester,
            REFUND_ONLY,
            f"--cov={ROOT / 'pytest_durable' / 'examples' / 'buggy_refund'}",
            "--cov-context=test",
            *extra,
        )
        result.assert_outcomes(passed=3)
        assert shared["measurement"] == "shared"
        assert shared["files"] == own["files"] and shared["agents"] == own["agents"]
        contexts = {c for cs in _coverage_json(pytester.path, dict(os.environ))["contexts"].values() for c in cs}
        assert any(
            re.match(r"test_refund\.py::test_refund_survives_a_crash\[.*\]\|run\|durable:run RefundAgent", c)
            for c in contexts
        )


@pytest.mark.usefixtures("own_process")
def test_a_file_the_running_measurement_leaves_out_is_not_measured_never_never_run(pytester: pytest.Pytester) -> None:
    """COV-7: under a coverage run whose source leaves the agent out, its file is reported as not measured, with
    no line called never run, and the fault points and durable state are reported all the same."""
    (pytester.path / "elsewhere").mkdir()
    (pytester.path / ".coveragerc").write_text(f"[run]\nsource = {pytester.path / 'elsewhere'}\n", encoding="utf-8")
    pytester.makepyfile(test_refund=REFUND_ONLY)
    args = ["-m", "pytest", "-p", "no:cacheprovider", "--durable-coverage-json", "cov.json"]
    done = clean_run([sys.executable, "-m", "coverage", "run", *args], pytester.path)
    assert done.returncode == 0, done.stdout
    report = json.loads((pytester.path / "cov.json").read_text(encoding="utf-8"))
    lines = file_of(report)
    assert lines["measured"] is False and lines["never_run"] == [] and lines["recovery_only"] == []
    assert report["summary"]["files_not_measured"] == 1 and report["summary"]["never_crashed"] == 11
    assert "not measured: the coverage.py run already measuring this process leaves it out" in done.stdout


@pytest.mark.usefixtures("own_process")
def test_the_ini_option_turns_it_on_and_bad_values_are_one_line(pytester: pytest.Pytester) -> None:
    """COV-1: `durable_coverage = yes` in the ini file is the flag; a bad value, or an HTML directory that is a
    file, is one usage error naming the option."""
    pytester.makepyfile(test_refund=REFUND_ONLY)
    pytester.makeini("[pytest]\ndurable_coverage = yes\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*= durable coverage =*", "*11 of 14 fault points never crashed"])
    pytester.makeini("[pytest]\ndurable_coverage = maybe\n")
    bad = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--durable-coverage (ini durable_coverage) = 'maybe': expected *"])
    pytester.makeini("[pytest]\n")
    (pytester.path / "afile").write_text("x")
    clash = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--durable-coverage-html", "afile")
    assert clash.ret == pytest.ExitCode.USAGE_ERROR
    clash.stderr.fnmatch_lines(["*--durable-coverage-html (ini durable_coverage_html): *afile is not a directory"])


@pytest.mark.usefixtures("own_process")
def test_without_coverage_py_the_option_is_one_line_naming_the_extra(pytester: pytest.Pytester) -> None:
    """COV-1: without coverage.py, --durable-coverage stops pytest with one line naming pytest-durable[coverage]."""
    pytester.makeconftest("import sys\nsys.modules['coverage'] = None  # as if coverage.py were not installed\n")
    pytester.makepyfile(test_refund=REFUND_ONLY)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--durable-coverage")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.strip()] == [
        "ERROR: --durable-coverage needs coverage.py: pip install 'pytest-durable[coverage]'"
    ], result.stderr.str()


def test_the_cli_without_coverage_py_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """COV-1: `durable sweep --coverage` without coverage.py: one line naming the extra, exit status 2."""
    from pytest_durable.cli import main

    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "order-7", "input": {"order": "order-7", "amount": 30}}\n')
    monkeypatch.setitem(sys.modules, "coverage", None)  # type: ignore[arg-type]
    code = main(
        [
            "sweep",
            "pytest_durable.examples.buggy_refund.refund_notify:RefundAgent",
            "--inputs",
            str(inputs),
            "--coverage",
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "error: durable sweep --coverage needs coverage.py: pip install 'pytest-durable[coverage]'\n"
    )


@pytest.mark.usefixtures("own_process")
def test_the_cli_reports_after_the_matrix(tmp_path: Path) -> None:
    """COV-1, COV-5: `durable sweep --coverage` prints the report after the matrix, the JSON and HTML options
    write theirs; a sweep of every point leaves no point uncrashed."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "order-7", "input": {"order": "order-7", "amount": 30}}\n')
    command = ["sweep", "pytest_durable.examples.buggy_refund.refund_notify:RefundAgent", "--inputs", str(inputs)]
    outputs = ["--coverage-json", "cov.json", "--coverage-html", "html"]
    done = clean_run([sys.executable, "-m", "pytest_durable.cli", *command, *outputs], tmp_path, PYTHONPATH=str(ROOT))
    assert done.returncode == 0, done.stderr
    matrix, _, coverage = done.stdout.partition("durable coverage:\n")
    assert "14 fault points, 0 with violations" in matrix
    assert coverage.startswith(
        "pytest_durable.examples.buggy_refund.refund_notify.RefundAgent: 0 of 14 fault points never crashed"
    )
    report = json.loads((tmp_path / "cov.json").read_text(encoding="utf-8"))
    assert (
        report["summary"]["never_crashed"] == 0 and agent_of(report)["fault_points"][0]["reached_by"] == "durable sweep"
    )
    assert (tmp_path / "html" / "index.html").is_file() and (tmp_path / "html" / "lines" / "index.html").is_file()


@pytest.mark.usefixtures("own_process")
def test_off_it_imports_nothing_of_coverage_and_sets_no_observer(pytester: pytest.Pytester) -> None:
    """COV-8: without the option a session that sweeps imports no coverage.py module, leaves the runtime's observer
    hook unset and records nothing; loading the plugin imports neither coverage.py nor the runtime."""
    pytester.makepyfile(
        test_refund=EVERY_POINT
        + """

def test_nothing_measured(durable):
    durable.run(RefundAgent, INPUTS)
    import sys
    from reference_runtime import observe
    from reference_runtime.exploration import reached
    assert observe.current is None and reached.active() is None
    assert [m for m in sys.modules if m == "coverage" or m.startswith("coverage.")] == []
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=16)
    assert "durable coverage" not in result.stdout.str()
    code = (
        "import sys, pytest_durable.plugin, pytest_durable.crash_coverage; "
        "print(sorted(m for m in ('coverage', 'reference_runtime') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")},
    )
    assert out.stdout.strip() == "[]"


# -- the JSON schema documented in docs/plugin/coverage.md ------------------------------------------------------


def documented_schema() -> dict[str, Any]:
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index("<!-- the crash-coverage JSON schema -->") :]
    body = block[block.index("```json\n") + len("```json\n") : block.index("\n```", block.index("```json\n"))]
    schema: dict[str, Any] = json.loads(body)
    return schema


def violations(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """The places where ``value`` breaks ``schema`` (the JSON Schema subset the documented schema uses: type,
    const, enum, properties, required, additionalProperties: false, items, minimum)."""
    types = {"object": dict, "array": list, "string": str, "integer": int, "boolean": bool, "null": type(None)}
    allowed = schema.get("type")
    if allowed is not None:
        names = allowed if isinstance(allowed, list) else [allowed]
        ok = any(isinstance(value, types[n]) and not (n == "integer" and isinstance(value, bool)) for n in names)
        if not ok:
            return [f"{where}: {value!r} is not {allowed}"]
    found = []
    if "const" in schema and value != schema["const"]:
        found.append(f"{where}: {value!r} != {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and isinstance(value, int) and value < schema["minimum"]:
        found.append(f"{where}: {value} < {schema['minimum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        found += [f"{where}: {k!r} missing" for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            found += [f"{where}: {k!r} undocumented" for k in value if k not in props]
        for k, v in value.items():
            if k in props:
                found += violations(v, props[k], f"{where}.{k}")
    if isinstance(value, list) and "items" in schema:
        for n, item in enumerate(value):
            found += violations(item, schema["items"], f"{where}[{n}]")
    return found


@pytest.mark.usefixtures("own_process")
def test_the_json_report_follows_the_documented_schema(pytester: pytest.Pytester) -> None:
    """COV-5: every field of the JSON report is documented with its type, and every documented field is there."""
    schema = documented_schema()
    _, report = run_suite(pytester, REFUND_ONLY)
    assert violations(report, schema) == []
    assert report["schema"] == "pytest-durable/crash-coverage/1"
    # The check can fail: an undocumented field, a missing one and a wrong type are all found.
    broken = {**report, "extra": 1, "summary": {**report["summary"], "never_crashed": "11"}}
    del broken["files"]
    assert len(violations(broken, schema)) == 3
