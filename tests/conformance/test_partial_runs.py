"""KIT-7: a run that leaves out some of a suite's checks is not a certification — INCOMPLETE, with how many
checks ran — however they were left out, in one process and under pytest-xdist."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.report import INCOMPLETE, LEVELS, NOT_RUN, levels

from .kit_run import run_kit

pytest_plugins = ["pytester"]

SUITE = """
import pytest
from conformance import StoreConformance, factory_from_url


@pytest.fixture(scope="session")
def durable_store_factory():
    return factory_from_url("memory:")


class TestMem(StoreConformance):
    pass
"""

BROKEN = """
import pytest
from conformance import StoreConformance, StoreFactory
from tests.conformance.broken_stores import IgnoresPrune


@pytest.fixture(scope="session")
def durable_store_factory():
    return StoreFactory(IgnoresPrune, capabilities={"core"}, name="IgnoresPrune")


class TestBroken(StoreConformance):
    pass
"""

XDIST = [[], ["-n", "2"]]
XDIST_IDS = ["one-process", "xdist-2"]


@pytest.fixture
def full(pytester: pytest.Pytester) -> dict[str, Any]:
    """The report of the whole suite, in one process: the reference for the counts."""
    result, doc = run_kit(pytester, SUITE, "--durable-conformance-seed", "5")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return doc


@pytest.mark.parametrize("workers", XDIST, ids=XDIST_IDS)
def test_a_complete_run_is_full_and_says_it_ran_everything(pytester: pytest.Pytester, workers: list[str]) -> None:
    """KIT-7: the whole suite is FULL, `partial` is false and every check counts, also under `-n 2` (the
    workers collect; the controller counts from their reports)."""
    result, doc = run_kit(pytester, SUITE, "--durable-conformance-seed", "5", *workers)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert doc["level"] == "FULL" and doc["partial"] is False
    assert doc["checks_run"] == doc["checks_total"] == len(doc["checks"]) > 20
    assert all(c["level"] in LEVELS for c in doc["capabilities"].values())
    result.stdout.fnmatch_lines(["*overall level: FULL"])


@pytest.mark.parametrize("workers", XDIST, ids=XDIST_IDS)
@pytest.mark.parametrize(
    "selection",
    [
        ["--durable-clause", "STORE-8"],
        ["-k", "round_trip or prune"],
        ["-m", "not restartcheck"],
        ["--deselect", "test_kit.py::TestMem::test_put_get_round_trip"],
        ["test_kit.py::TestMem::test_put_get_round_trip", "test_kit.py::TestMem::test_prune_boundaries"],
    ],
    ids=["durable-clause", "k", "m", "deselect", "node-ids"],
)
def test_a_selection_is_incomplete_not_a_level(
    pytester: pytest.Pytester, full: dict[str, Any], selection: list[str], workers: list[str]
) -> None:
    """KIT-7: however a subset is chosen, the overall level is INCOMPLETE with the counts, `partial` is true,
    and declared capabilities none of whose checks ran are listed as `not run` — in the terminal, the JSON
    and the Markdown twin."""
    if selection[0] == "-m":
        # `-m` selects on marker names; give the restart checks a marker of their own.
        pytester.makeconftest(
            "import pytest\n\n"
            "def pytest_collection_modifyitems(items):\n"
            "    for item in items:\n"
            "        if getattr(item.function, 'durable_conformance_capability', None) == 'restart':\n"
            "            item.add_marker(pytest.mark.restartcheck)\n"
        )
    result, doc = run_kit(pytester, SUITE, "--durable-conformance-seed", "5", *workers, *selection)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    run, total = len(doc["checks"]), full["checks_run"]
    assert 0 < run < total
    assert (doc["level"], doc["partial"], doc["checks_run"], doc["checks_total"]) == (INCOMPLETE, True, run, total)
    line = f"overall level: INCOMPLETE ({run} of {total} checks run; not a certification)"
    result.stdout.fnmatch_lines([f"*{line}"])
    assert "overall level: FULL" not in result.stdout.str()
    ran = {c["capability"] for c in doc["checks"]}
    for cap in set(full["capabilities"]) - ran:
        assert doc["capabilities"][cap]["level"] == NOT_RUN, cap
        result.stdout.fnmatch_lines([f"  {cap} *not run *0 *0 *0 *0"])
    for cap in ran:
        assert doc["capabilities"][cap]["checks_total"] == full["capabilities"][cap]["checks_total"]
    md = (pytester.path / "report.md").read_text()
    assert f"**{INCOMPLETE} ({run} of {total} checks run; not a certification)**" in md


def test_the_clause_filter_counts_exactly_the_checks_citing_it(pytester: pytest.Pytester, full: dict[str, Any]) -> None:
    """KIT-7: `--durable-clause STORE-8` runs the checks citing STORE-8 (all of capability core) and reports
    those of the whole suite."""
    citing = sum("STORE-8" in c["clauses"] for c in full["checks"])
    _, doc = run_kit(pytester, SUITE, "--durable-clause", "STORE-8")
    assert (doc["checks_run"], doc["checks_total"]) == (citing, full["checks_total"])
    assert doc["capabilities"]["restart"]["level"] == NOT_RUN, "restart is declared and none of its checks ran"


def test_a_run_stopped_early_is_incomplete(pytester: pytest.Pytester) -> None:
    """KIT-7: `-x` stops at the first failure; the checks that never ran make the run INCOMPLETE."""
    result, doc = run_kit(pytester, BROKEN, "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert doc["partial"] is True and doc["level"] == INCOMPLETE
    assert doc["checks_run"] < doc["checks_total"]


def _result(cap: str, outcome: str, declared: list[str]) -> dict[str, Any]:
    return {"capability": cap, "outcome": outcome, "clauses": ["X-1"], "declared_capabilities": declared}


def test_levels_is_incomplete_when_fewer_checks_ran_than_the_suite_holds() -> None:
    """KIT-7: `levels` with the suite's totals: a capability with fewer results than checks is INCOMPLETE,
    a declared one with none is `not run`, and the overall level is INCOMPLETE; equal counts stay FULL."""
    results = [_result("core", "passed", ["core", "restart"])]
    overall, caps = levels(results, {"core": 2, "restart": 1})
    assert overall == INCOMPLETE
    assert (caps["core"]["level"], caps["restart"]["level"]) == (INCOMPLETE, NOT_RUN)
    overall, caps = levels(results * 2 + [_result("restart", "passed", ["core", "restart"])], {"core": 2, "restart": 1})
    assert overall == "FULL" and caps["core"]["checks_total"] == 2
    # Without totals, a declared capability with no result still is not certified.
    assert levels(results)[0] == INCOMPLETE
