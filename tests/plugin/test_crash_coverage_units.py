"""Crash coverage's parts in this process (COV-2..COV-7): the tally and its merge, the combination of several
processes' records, the report built from records, the context switching around executions, and the plugin and
command run in-process (where a coverage.py run of this suite, if any, is the measurement used: COV-7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_durable.examples.buggy_refund.refund_notify import RefundAgent
from reference_runtime.exploration import reached
from reference_runtime.exploration.coverage_report import Measuring, build, combine, ranges
from reference_runtime.exploration.lines import Lines
from reference_runtime.exploration.reached import Tally, site_of
from reference_runtime.exploration.scenario import Scenario
from reference_runtime.exploration.sweep import learn, run_scenario
from reference_runtime.stores.memory import InMemoryStore
from tests.plugin.test_crash_coverage import AGENT, REFUND_ONLY, ROOT, documented_schema, line_of, violations

pytest_plugins = ["pytester"]
INPUTS = [("order-7", {"order": "order-7", "amount": 30})]


@pytest.fixture
def tally() -> Any:
    recorder = Tally()
    previous = reached.activate(recorder)
    try:
        yield recorder
    finally:
        reached.activate(previous)


def test_the_tally_counts_crash_free_runs_and_crashes_per_place(tally: Tally) -> None:
    """COV-2: a place is reached once per crash-free run however often the run passes it; a crash counts where it
    fired; the place is the selector without key and seq, whatever the inputs."""
    learn(RefundAgent, INPUTS, InMemoryStore)
    learn(RefundAgent, [("order-8", {"order": "order-8", "amount": 5})], InMemoryStore)
    run_scenario(RefundAgent, INPUTS, InMemoryStore, Scenario.of("call0:after-effect?action=notify"))
    [agent] = tally.agents.values()
    points = agent.points
    assert points["call0:after-effect?action=notify"].reached == 2
    assert points["call0:after-effect?action=notify"].crashed == 1
    assert points["call0:after-effect?action=notify"].selector == "call0:after-effect?key=order-7&seq=0&action=notify"
    assert sum(s.crashed for s in points.values()) == 1
    assert all(s.reached == 2 for s in points.values())
    assert agent.actions["notify"]["recoveries"] == 1 and agent.actions["refund"]["recoveries"] == 0


def test_merged_tallies_equal_one_that_saw_everything(tally: Tally) -> None:
    """COV-6: two processes' tallies merged give the counts of one process that ran both halves, and the same
    test names each place whatever the order."""
    tally.test = "b"
    learn(RefundAgent, INPUTS, InMemoryStore)
    tally.test = "a"
    run_scenario(RefundAgent, INPUTS, InMemoryStore, Scenario.of("refund:before-complete"))
    learn(RefundAgent, INPUTS, InMemoryStore)
    whole = tally.to_json()
    first, second = Tally(), Tally()
    reached.activate(first)
    first.test = "b"
    learn(RefundAgent, INPUTS, InMemoryStore)
    reached.activate(second)
    second.test = "a"
    run_scenario(RefundAgent, INPUTS, InMemoryStore, Scenario.of("refund:before-complete"))
    learn(RefundAgent, INPUTS, InMemoryStore)
    reached.activate(tally)
    for a, b in ((first, second), (second, first)):
        merged = Tally()
        merged.merge(a.to_json())
        merged.merge(b.to_json())
        assert merged.to_json() == whole


def test_combine_unites_contexts_and_a_file_measured_anywhere_is_measured() -> None:
    """COV-6, COV-7: line contexts are united; a file one process measured and another did not is measured."""
    part = {"tally": {}, "preimported": [], "measurement": "own"}
    one = {**part, "lines": {"f.py": {"3": ["durable:run A.a"]}, "g.py": None}}
    two = {**part, "lines": {"f.py": {"3": [""], "4": ["durable:recovery A.a"]}, "g.py": {"1": [""]}}}
    combined = combine([one, two])
    assert combined["lines"] == {
        "f.py": {"3": ["", "durable:run A.a"], "4": ["durable:recovery A.a"]},
        "g.py": {"1": [""]},
    }
    assert combine([{**one, "measurement": "shared"}, two])["measurement"] == "shared"


def test_ranges_are_written_as_coverage_writes_them() -> None:
    """COV-5: consecutive lines become a range."""
    assert ranges([31, 23, 24, 1, 2, 3, 5]) == "1-3, 5, 23-24, 31"
    assert ranges([]) == ""


def test_a_report_from_records_classifies_each_line(tmp_path: Path) -> None:
    """COV-3, COV-5: lines run by recovery only are recovery-only, lines run outside executions are never
    recovery-only, statements no context ran are never run; the HTML and JSON reports are written."""
    path = str(AGENT)
    reconciler = line_of("key = current_call().idempotency_key")
    helper = line_of("if any(request_id == key")
    body = line_of("receipt = ctx.durable_execute(issue_refund")
    collected = {
        "tally": {},
        "preimported": [path],
        "measurement": "own",
        "lines": {
            path: {
                str(reconciler): ["durable:recovery RefundAgent.refund after x"],
                str(helper): ["durable:recovery RefundAgent.refund after x", ""],
                str(body): ["durable:run RefundAgent.refund", "durable:recovery RefundAgent.refund after x"],
            }
        },
    }
    tally = Tally()
    tally.agents["pytest_durable.examples.buggy_refund.refund_notify.RefundAgent"] = reached.AgentTally(files={path})
    collected["tally"] = tally.to_json()
    report = build(collected, ROOT, tmp_path / "html")
    lines = report.files[path]
    assert lines.recovery_only == [reconciler] and lines.crash_free == [body]
    assert lines.recovery == sorted([reconciler, helper, body])
    assert helper not in lines.never_run and line_of("def mail_sent") in lines.never_run
    assert lines.imported_before_measurement and lines.path == "pytest_durable/examples/buggy_refund/refund_notify.py"
    text = "\n".join(report.terminal())
    assert f"1: {reconciler}" in text and "imported before measuring started" in text
    assert (tmp_path / "html" / "index.html").is_file() and lines.page is not None
    assert (tmp_path / "html" / lines.page).is_file()
    report.write_json(tmp_path / "r.json")
    assert violations(json.loads((tmp_path / "r.json").read_text(encoding="utf-8")), documented_schema()) == []


class FakeCoverage:
    """Records the contexts switched to, returning the previous one as coverage.py 7.16+ does."""

    def __init__(self, static: str = "", current: str = "") -> None:
        self.static = static
        self.current = f"{static}|{current}" if static and current else static or current
        self.switches: list[str] = []

    def get_option(self, name: str) -> str | None:
        assert name == "run:context"
        return self.static or None

    def switch_context(self, label: str) -> str:
        previous = self.current
        self.current = f"{self.static}|{label}" if self.static and label else self.static or label
        self.switches.append(self.current)
        return previous


def test_contexts_follow_executions_and_restore_what_was_there() -> None:
    """COV-3, COV-7: our own measurement switches to each execution's context and back to none; in a running
    measurement (static context ``s``, dynamic ``test_a|run``) the durable context follows its own, interleaved
    executions leave the latest still open current, and the last to end restores the measurement's context."""
    own = Lines(FakeCoverage(), owned=True)  # type: ignore[arg-type]
    own.enter(1, "durable:run A.a")
    own.leave(1)
    assert own.cov.switches == ["durable:run A.a", ""]  # type: ignore[attr-defined]
    fake = FakeCoverage("s", "test_a|run")
    shared = Lines(fake, owned=False)  # type: ignore[arg-type]
    shared.enter(1, "durable:run A.a")
    shared.enter(2, "durable:recovery A.b after p")
    shared.leave(1)
    assert fake.current == "s|test_a|run|durable:recovery A.b after p"
    shared.leave(2)
    assert fake.current == "s|test_a|run"
    assert "s|test_a|run|durable:run A.a" in fake.switches


def test_measuring_in_this_process_records_durable_state(tmp_path: Path) -> None:
    """COV-2, COV-4, COV-7: Measuring uses the coverage.py run of this process if there is one, else its own; the
    fault points and durable state do not depend on which."""
    import coverage

    running = coverage.Coverage.current()
    measuring = Measuring.start(test="here")
    try:
        assert measuring.lines.owned is (running is None)
        run_scenario(RefundAgent, INPUTS, InMemoryStore, Scenario.of("call0:after-pending?action=notify"))
        learn(RefundAgent, INPUTS, InMemoryStore)
    finally:
        collected = measuring.finish()
    assert reached.active() is None and coverage.Coverage.current() is running
    report = build(collected, Path.cwd(), tmp_path / "html").to_json()
    [agent] = report["agents"]
    assert {r["action"]: r["invoked"] for r in agent["reconcilers"]} == {"refund": 0, "notify": 1}
    assert report["summary"]["never_crashed"] == 13 and site_of is not None


def test_the_plugin_and_the_command_in_this_process(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """COV-1, COV-5: the plugin in-process reports the fault points and durable state of the refund-only suite, in
    a JSON report that follows the documented schema; `durable sweep --coverage-json` writes one too."""
    pytester.makepyfile(test_refund=REFUND_ONLY)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--durable-coverage-json", "cov.json")
    result.assert_outcomes(passed=3)
    report = json.loads((pytester.path / "cov.json").read_text(encoding="utf-8"))
    assert violations(report, documented_schema()) == []
    assert report["summary"]["never_crashed"] == 11 and report["summary"]["reconcilers_never_invoked"] == 1
    from pytest_durable.cli import main

    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "order-7", "input": {"order": "order-7", "amount": 30}}\n')
    out = tmp_path / "cli.json"
    code = main(
        [
            "sweep",
            "pytest_durable.examples.buggy_refund.refund_notify:RefundAgent",
            "--inputs",
            str(inputs),
            "--coverage-json",
            str(out),
        ]
    )
    assert code == 0
    swept = json.loads(out.read_text(encoding="utf-8"))
    assert swept["summary"]["never_crashed"] == 0 and violations(swept, documented_schema()) == []
    assert reached.active() is None


def test_our_own_code_is_neither_traced_nor_reported_but_packaged_examples_are() -> None:
    """COV-3, COV-8: our own measurement does not trace this distribution's packages (their cost is not the
    agent's), and their code is never an agent's; example agents packaged inside them (pytest_durable/examples/)
    are."""
    from coverage.files import GlobMatcher

    home = Path(reached.__file__).resolve().parents[2]
    omit = GlobMatcher(reached.untraced())
    example = str(home / "pytest_durable" / "examples" / "buggy_refund" / "refund_notify.py")
    ours = [home / "reference_runtime" / "exploration" / "sweep.py", home / "pytest_durable" / "cli" / "sweep.py"]
    ours += [home / "pytest_durable" / "plugin.py", home / "conformance" / "report.py"]
    assert all(omit.match(str(p)) for p in ours) and not omit.match(example)
    assert not any(reached._own(str(p)) for p in ours) and reached._own(example)
