"""The in-process sweep tests of this directory run on both sweep paths: from snapshots of the crash-free
run (the default) and re-executing up to every crash (PLG-16), the tests themselves unchanged."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

#: Modules whose tests sweep in this process (pytester projects run in subprocesses on the default path).
SWEEPING = {"test_units", "test_verdict", "test_misuse", "test_time_and_sweeps"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rpartition(".")[2]
    if module in SWEEPING and "pytester" not in metafunc.fixturenames and "sweep(" in _reachable_source(metafunc):
        metafunc.fixturenames.append("sweep_path")
        metafunc.parametrize("sweep_path", ["snapshot", "re-execute"], indirect=True)


def _reachable_source(metafunc: pytest.Metafunc) -> str:
    """The test's source and that of the module-level functions it names, and of the callables in the
    module-level dicts it names (a sweep may happen in one of them)."""
    names = metafunc.function.__code__.co_names
    found: list[Any] = [metafunc.function]
    for name in names:
        value = vars(metafunc.module).get(name)
        if inspect.isfunction(value):
            found.append(value)
        elif isinstance(value, dict):
            found += [v for v in value.values() if inspect.isfunction(v)]
    return "".join(inspect.getsource(f) for f in found if f.__module__ == metafunc.module.__name__)


@pytest.fixture
def sweep_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "re-execute":
        from pytest_durable import sweep
        from reference_runtime.exploration.harness import DurableHarness

        monkeypatch.setitem(sweep.sweep.__kwdefaults__, "re_execute", True)
        monkeypatch.setitem(DurableHarness.__init__.__kwdefaults__, "re_execute", True)
    yield request.param
