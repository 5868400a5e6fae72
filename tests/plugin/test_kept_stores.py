"""Failures you can inspect (PLG-27, PLG-28): a failing durable test keeps a SQLite copy of its runs' stores
and names the ``durable inspect`` command of each; ``--durable-keep-stores`` keeps those of passing tests."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pytest_durable import inspect_store
from pytest_durable.cli.inspect import main as inspect_main
from reference_runtime.exploration.harness import DurableHarness, DurableInvariantError
from reference_runtime.stores.memory import InMemoryStore

from . import test_misuse
from .projects import REFUND_AGENT

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

#: ``Refund`` plus an agent whose output counts calls of a global outside any durable call (REC-6 fails).
AGENTS = (
    REFUND_AGENT
    + """
SENT = []

def notify(text):
    SENT.append(text)
    return len(SENT)

class Notifies(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        receipt = ctx.durable_execute(charge, event.attributes["input"])
        ctx.short_term_memory.set("receipt", receipt)
        ctx.send_event(OutputEvent(notify(receipt)))
"""
)

TESTS = """
import pytest
from agent_mod import Notifies, Refund

def test_wrong_expectation(durable):
    result = durable.run(Refund, [("order-7", 30)])
    assert result.outputs == {"order-7": ["refunded 30"]}

def test_passes(durable):
    assert durable.run(Refund, [("order-8", 5)]).outputs == {"order-8": ["charged 5"]}

def test_no_durable_fixture():
    assert False

@pytest.mark.durable_sweep(Notifies, [("order-9", 12)])
def test_swept(durable):
    durable.run()
"""

COMMAND = re.compile(r"^\s+durable inspect (\S+)$")


def _project(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent_mod=AGENTS, test_user=TESTS)
    pytester.syspathinsert(str(ROOT))


def _commands(lines: list[str]) -> list[str]:
    """The URLs of every ``durable inspect`` command printed, in order."""
    return [shlex.split(m.group(1))[0] for m in map(COMMAND.match, lines) if m]


def _inspect(url: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()  # what pytester echoed
    assert inspect_main([url]) == 0
    return capsys.readouterr().out


def test_a_failing_durable_test_keeps_its_store_and_names_the_inspect_command(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """PLG-27: the failure's report has a section naming each run and the command that shows its store,
    a SQLite copy (the default store is memory:) holding the completed state a checkpoint pruned; a passing
    test, or one without durable fixtures, leaves no store behind."""
    _project(pytester)
    basetemp = pytester.path / "basetemp"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--basetemp={basetemp}", "-k", "not swept")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*- durable: stores kept for inspection -*",
            "  run 1:",
            f"    durable inspect sqlite:{basetemp}/durable-stores-test_wrong_expectation0/1-run-1.db",
            "durable: the stores of 1 test that failed were kept for inspection: the section 'durable: stores "
            "kept for inspection' of each failure names them (PLG-27)",
        ]
    )
    [url] = _commands(result.outlines)
    shown = _inspect(url, capsys)
    assert shown.splitlines()[1:] == [
        "key 'order-7'  seq 0  action handle  completed  [native]",
        shown.splitlines()[2],  # the state key
        '    event      _input_event {"input": 30}',
        '    output     _output_event {"output": "charged 30"}',
    ]
    assert [p.name for p in basetemp.iterdir() if not p.is_symlink()] == ["durable-stores-test_wrong_expectation0"]


def test_a_failing_sweep_point_keeps_both_runs_under_xdist(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """PLG-27: a failing durable_sweep point keeps the crash-free run and the run crashing there; under
    pytest-xdist every test's copies have paths of their own."""
    _project(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-k", "swept")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] >= 2
    result.stdout.fnmatch_lines(
        [
            "*- durable: stores kept for inspection -*",
            "  the crash-free run:",
            "    durable inspect sqlite:*/popen-gw?/durable-stores-test_swept-crash=*/1-crash-free-run.db",
            "  the run crashing at *, recovered:",
            "    durable inspect sqlite:*/popen-gw?/durable-stores-test_swept-crash=*/2-run-crashing-at-*.db",
        ]
    )
    urls = _commands(result.outlines)
    assert len(urls) == 2 * outcomes["failed"] and len(set(urls)) == len(urls)
    crashed = next(u for u in urls if "crash=handle-before-complete" in u and "2-run-crashing" in u)
    assert '    memory     receipt = "charged 12"' in _inspect(crashed, capsys).splitlines()


@pytest.mark.parametrize("how", ["--durable-keep-stores", "-odurable_keep_stores=yes"])
def test_keep_stores_keeps_those_of_passing_tests_and_says_where(pytester: pytest.Pytester, how: str) -> None:
    """PLG-28: with the option (or its ini twin) a passing test keeps its stores too, and the terminal
    summary lists each test's commands."""
    _project(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", how, "-k", "passes")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "durable: stores kept for inspection (PLG-28), of 1 test:",
            "test_user.py::test_passes",
            "  run 1:",
            "    durable inspect sqlite:*/durable-stores-test_passes0/1-run-1.db",
        ]
    )
    [url] = _commands(result.outlines)
    [state] = inspect_store(url)
    assert (state.key, state.completed, len(state.output_events)) == ("order-8", True, 1)


def test_keep_stores_takes_a_yes_no_value(pytester: pytest.Pytester) -> None:
    """PLG-7: the ini twin is validated at configure time like every yes/no option."""
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest_subprocess("-odurable_keep_stores=maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--durable-keep-stores (ini durable_keep_stores) = 'maybe': expected*"])


def test_a_failing_sweep_keeps_its_first_failing_scenario(tmp_path: Path) -> None:
    """PLG-27: durable.sweep() and explore() keep the crash-free run and their failing scenario, run once
    more on stores that record what they wrote; the copies hold the completed states."""
    harness = DurableHarness(InMemoryStore, "memory:")
    with pytest.raises(DurableInvariantError):
        harness.sweep(test_misuse.CountsAttempts, [("k", 1)])
    labels = [label for label, _ in harness.kept_runs]
    assert labels[0] == "the crash-free run"
    assert re.fullmatch(r"the run crashing at \S+ \[mismatch=lenient, reconcilers=on\], recovered", labels[1])
    kept = harness.keep_stores(tmp_path / "kept")
    assert kept[0].path.name == "1-crash-free-run.db"
    assert kept[0].command == f"durable inspect sqlite:{tmp_path}/kept/1-crash-free-run.db"
    assert [s.completed for s in inspect_store(kept[1].url)] == [True]


def test_a_failing_exploration_keeps_its_minimal_schedule(tmp_path: Path) -> None:
    """PLG-27: explore() keeps the crash-free run and the minimal failing schedule, run once more."""
    harness = DurableHarness(InMemoryStore, "memory:")
    with pytest.raises(DurableInvariantError, match=r"^minimal failing crash schedule: ") as info:
        harness.explore(test_misuse.CountsAttempts, [("k", 1)], max_examples=3)
    schedule = str(info.value).splitlines()[0].removeprefix("minimal failing crash schedule: ")
    assert [label for label, _ in harness.kept_runs[-2:]] == [
        "the crash-free run",
        f"the run crashing at {schedule}, recovered",
    ]
    kept = harness.keep_stores(tmp_path)
    assert [s.key for s in inspect_store(kept[-1].url)] == ["k"]
