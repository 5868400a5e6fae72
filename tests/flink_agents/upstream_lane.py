"""The CI lane that runs the installed flink_agents package's own tests on the reference runtime (spec FA-12).

Load it with ``-p tests.flink_agents.upstream_lane`` and name the package's tests with ``--pyargs``
(``.ci/run`` does, see docs/flink-agents-upstream.md). It

* swaps Flink Agents' local execution environment and ``LocalRunner`` for the reference runtime's
  (``reference_runtime.flink_agents_compat.local.install``) before any test module is imported, so every
  test that runs an agent locally runs it on the reference ``Runner``;
* deselects, by id, the tests listed in ``upstream_deselected.toml`` beside this file (each under the reason it
  cannot run in-process), and fails the session if a listed id names no test of the installed package;
* fails the session if any test that was not deselected is skipped or fails, if anything else deselected a
  test (a ``-m`` or ``-k`` expression), or if no test ran at all;
* reports how many of the tests that ran went through the swapped environment or runner.

Ids are ``module::test`` (``module::Class::test``, ``[param]`` kept), independent of where the package is
installed.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable

import pytest

from reference_runtime.flink_agents_compat import local

from .upstream_list import deselected, load_list

REASONS, _ = load_list()
DESELECTED = deselected()
_state: dict[str, object] = {}


def upstream_id(item: pytest.Item) -> str:
    """``module::name`` of a collected test: its dotted module and its nodeid after the file part."""
    module = getattr(item, "module", None)
    _, _, rest = item.nodeid.partition("::")
    name = module.__name__ if module is not None else item.nodeid.partition("::")[0]
    return f"{name}::{rest}"


def pytest_configure(config: pytest.Config) -> None:
    # Chroma's and mem0's telemetry would try the network from the tests that import them.
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    uninstall: Callable[[], None] = local.install()
    _state.update(uninstall=uninstall, through=set(), ran=set(), bad=[], unknown=[], dropped=set())
    config.addinivalue_line("markers", "integration: a Flink Agents test of a real service (their marker)")


def pytest_unconfigure(config: pytest.Config) -> None:
    uninstall = _state.get("uninstall")
    if callable(uninstall):
        uninstall()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    by_id = {upstream_id(item): item for item in items}
    keep, dropped = [], []
    for item in items:
        (dropped if upstream_id(item) in DESELECTED else keep).append(item)
    collected = {test.partition("::")[0] for test in by_id}
    _state["unknown"] = sorted(test for test in set(DESELECTED) - set(by_id) if _stale(test, collected))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def pytest_deselected(items: list[pytest.Item]) -> None:
    _state["dropped"].update(upstream_id(item) for item in items)  # type: ignore[attr-defined]


def _stale(test: str, collected: set[str]) -> bool:
    """Whether a listed test the run did not collect is gone from the package: its module was collected
    without it, or no longer exists (a module outside a run's selection, e.g. ``--pyargs`` of one package,
    is not a stale entry)."""
    module = test.partition("::")[0]
    return module in collected or importlib.util.find_spec(module) is None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    before = local.made
    try:
        return (yield)
    finally:
        if local.made > before:
            _state["through"].add(upstream_id(item))  # type: ignore[union-attr]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        _state["ran"].add(report.nodeid)  # type: ignore[union-attr]
    if report.skipped or report.failed:
        _state["bad"].append(f"{report.outcome}: {report.nodeid}")  # type: ignore[union-attr]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter is not None else print
    ran, through, bad, unknown = (_state[k] for k in ("ran", "through", "bad", "unknown"))
    write("")
    write(
        f"flink_agents upstream lane: {len(ran)} passed ({len(through)} through the reference environment), "  # type: ignore[arg-type]
        f"{len(DESELECTED)} deselected by id ({len(REASONS)} reasons, docs/flink-agents-upstream.md)"
    )
    if session.config.option.verbose > 0:
        for test in sorted(through):  # type: ignore[call-overload]
            write(f"  through the reference environment: {test}")
    problems = [*bad, *(f"listed but not in the installed package: {i}" for i in unknown)]  # type: ignore[misc]
    # Nothing else may drop a test (a -m or -k expression, another plugin): only the list says what not to run.
    problems += [f"deselected but not listed: {i}" for i in sorted(_state["dropped"] - set(DESELECTED))]  # type: ignore[operator]
    if not ran:
        problems.append("no upstream test ran")
    for problem in problems:
        write(f"  {problem}")
    if problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
