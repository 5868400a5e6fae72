"""The pytest plugin (entry point ``durable``). Loading it imports only pytest: the runtime is imported
by the fixtures that need it, so tests that do not use it pay nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from reference_runtime import Agent, RunResult
    from reference_runtime.stores.base import ActionStateStore

    from .sweep import PointOutcome

_STORE = pytest.StashKey[str]()
_POINTS = pytest.StashKey[int]()

_SCHEMES = ("memory:", "sqlite:", "redis://", "kafka://")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("durable", "durable execution testing")
    group.addoption("--durable-store", metavar="URL", default=None,
                    help="store for durable fixtures: memory: (default), sqlite:PATH, redis://…, kafka://…")
    parser.addini("durable_store", "store URL for durable fixtures (default memory:)", default="memory:")


def pytest_configure(config: pytest.Config) -> None:
    url = config.getoption("--durable-store") or config.getini("durable_store") or "memory:"
    if not str(url).startswith(_SCHEMES):
        raise pytest.UsageError(f"--durable-store {url!r}: expected one of {', '.join(_SCHEMES)}")
    config.stash[_STORE] = str(url)
    config.stash[_POINTS] = 0
    config.addinivalue_line("markers", "durable_sweep: crash at every fault point of the test's agent run")


def pytest_report_header(config: pytest.Config) -> str:
    return f"durable: store {config.stash[_STORE]}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    n = config.stash.get(_POINTS, 0)
    if n:
        terminalreporter.write_line(f"durable: {n} fault points exercised")


class DurableHarness:
    """Runs agents against the configured store and sweeps crash points."""

    def __init__(self, config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._config = config
        self._tmp = tmp_path_factory
        self.url = config.stash[_STORE]

    def store_factory(self) -> Callable[[], ActionStateStore]:
        """A callable making a fresh empty store of the configured kind."""
        if self.url.startswith("memory"):
            from reference_runtime.stores.memory import InMemoryStore

            return InMemoryStore
        if self.url.startswith("sqlite:"):
            from reference_runtime.stores.sqlite import SqliteStore

            base = self._tmp.mktemp("durable")
            counter = iter(range(10**9))
            return lambda: SqliteStore(base / f"{next(counter)}.db")
        from reference_runtime.stores.urls import open_store

        # Servers are shared between tests and xdist workers: each store gets its own namespace or topic.
        return lambda: open_store(self.url, isolated=True)

    def run(self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], *, crash_at: Sequence[str] = (),
            **options: Any) -> RunResult:
        """Run ``agent`` on ``inputs``; ``crash_at`` labels (e.g. ``"call1:after-effect"``) crash in turn,
        each followed by recovery."""
        from reference_runtime import CrashAt, FaultInjector, Runner

        injector = FaultInjector([CrashAt.parse(label) for label in crash_at])
        result = Runner(agent, self.store_factory()(), injector=injector, **options).run(inputs)
        if injector.pending:
            raise AssertionError(f"crash point(s) never reached: {[str(p) for p in injector.plan]}")
        return result

    def sweep(self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], **options: Any) -> list[PointOutcome]:
        """Crash at every fault point; fail with every violated invariant and its spec clause."""
        from .sweep import sweep

        outcomes = sweep(agent, inputs, self.store_factory(), **options)
        self._config.stash[_POINTS] += len(outcomes)
        problems = [v for o in outcomes for v in o.violations]
        if problems:
            raise AssertionError("durable invariants violated:\n  " + "\n  ".join(problems))
        return outcomes


@pytest.fixture
def durable_harness(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> DurableHarness:
    """Run an agent with the configured store, crash it at chosen points, or sweep every point."""
    return DurableHarness(pytestconfig, tmp_path_factory)
