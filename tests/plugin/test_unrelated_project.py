"""A project that does not use the plugin pays nothing for it being installed (PLG-21): no ``durable:`` line,
and Hypothesis (a dependency of this package) is never imported, although its own pytest plugin, installed
with it, would import it in every session's terminal summary. Its time is measured by benchmark P13."""

from __future__ import annotations

import pytest

from .test_plugin import sweep_project

pytest_plugins = ["pytester"]

# Written by each process's last hook, after every terminal summary: what that process imported, and
# whether Hypothesis' plugin was still registered.
RECORD_IMPORTS = """
import sys

def pytest_unconfigure(config):
    name = getattr(config, "workerinput", {}).get("workerid", "main")
    with open(f"imported-{name}.txt", "w") as out:
        out.write(" ".join(m for m in ("hypothesis", "reference_runtime") if m in sys.modules))
    with open(f"kept-{name}.txt", "w") as out:
        out.write(str(config.pluginmanager.get_plugin("hypothesispytest") is not None))
"""


def _imported(pytester: pytest.Pytester) -> dict[str, list[str]]:
    return {p.stem: p.read_text().split() for p in sorted(pytester.path.glob("imported-*.txt"))}


@pytest.mark.parametrize("args", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_an_unrelated_project_sees_no_durable_line_and_imports_no_hypothesis(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    """PLG-21: 20 plain tests: no line of the output mentions durable, and neither Hypothesis nor the
    runtime was imported by the end of the session."""
    pytester.makeconftest(RECORD_IMPORTS)
    pytester.makepyfile(test_plain="\n".join(f"def test_{i}():\n    assert {i} == {i}\n" for i in range(20)))
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=20)
    assert [line for line in result.outlines if line.startswith("durable")] == []
    imported = _imported(pytester)
    assert "imported-main" in imported and len(imported) == (3 if args else 1)
    assert set(map(tuple, imported.values())) == {()}, imported


def test_the_store_line_comes_after_collection_when_a_test_is_durable(pytester: pytest.Pytester) -> None:
    """PLG-21, PLG-7: no option set, a durable sweep collected: the store and seed are printed once,
    after collection."""
    sweep_project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess()
    lines = [line for line in result.outlines if line.startswith("durable: store")]
    assert len(lines) == 1 and "(repeat with --durable-seed)" in lines[0]
    at = result.outlines.index(lines[0])
    assert result.outlines[at - 1].startswith("collected "), result.outlines  # before any test ran


def test_under_xdist_the_controller_prints_the_store_line_in_the_summary(pytester: pytest.Pytester) -> None:
    """PLG-21, PLG-7: the xdist controller collects nothing itself; a worker that collected durable tests
    tells it, and the summary names the store and the seed every worker used."""
    sweep_project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    result = pytester.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=11)
    result.stdout.fnmatch_lines(["durable: store memory:, seed * (repeat with --durable-seed)", "durable: 9 fault *"])


def test_an_option_alone_prints_the_line_in_the_header(pytester: pytest.Pytester) -> None:
    """PLG-21: a durable option set on the command line is using the plugin: the header states it."""
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("--durable-seed", "7")
    assert result.outlines.index("durable: store memory:, seed 7 (repeat with --durable-seed)") < next(
        i for i, x in enumerate(result.outlines) if "collected" in x
    )


HYPOTHESIS_TEST = """
from hypothesis import given, strategies as st

@given(st.integers())
def test_small(x):
    assert x < 10
"""


@pytest.mark.parametrize("args", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_a_project_that_uses_hypothesis_keeps_its_plugin(pytester: pytest.Pytester, args: list[str]) -> None:
    """PLG-21: where Hypothesis is used, its plugin is left alone: its statistics are printed, in one
    process and on the xdist controller (which never imports Hypothesis itself)."""
    pytester.makepyfile(test_h=HYPOTHESIS_TEST.replace("x < 10", "x == x"))
    result = pytester.runpytest_subprocess("--hypothesis-show-statistics", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*Hypothesis Statistics*", "*test_small*"])


def test_a_report_carrying_hypothesis_data_keeps_its_plugin_on_the_xdist_controller(
    pytester: pytest.Pytester,
) -> None:
    """PLG-21: the xdist controller never imports Hypothesis; when a worker's report carries Hypothesis'
    data (its statistics or failing examples, shipped with the report), the controller keeps Hypothesis'
    plugin and its summary runs."""
    pytester.makeconftest(
        RECORD_IMPORTS
        + """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().__dict__["_hypothesis_stats"] = "statistics of " + item.name
"""
    )
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "kept-main.txt").read_text() == "True"
    assert _imported(pytester)["imported-main"] == ["hypothesis"]  # by Hypothesis' own summary
