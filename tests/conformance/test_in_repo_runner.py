"""Dogfooding: the reference runtime certifies through the runner suite a runner author uses (CONF-4),
on the in-memory store and on SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import RunnerConformance, RunnerFactory, StoreFactory, factory_from_url


class TestReferenceRunner(RunnerConformance):
    @pytest.fixture
    def durable_runner_factory(self) -> RunnerFactory:
        return RunnerFactory.reference()


class TestReferenceRunnerOnSqlite(RunnerConformance):
    @pytest.fixture
    def durable_runner_factory(self, tmp_path: Path) -> RunnerFactory:
        stores: StoreFactory = factory_from_url(f"sqlite:{tmp_path / 'stores.db'}")
        return RunnerFactory.reference(stores.new, name="reference-runner on sqlite:")


def test_unknown_runner_capability_is_refused() -> None:
    """CONF-1: a runner cannot declare a capability the kit does not know."""
    with pytest.raises(ValueError, match="unknown capabilities"):
        RunnerFactory(RunnerFactory.reference()._run, capabilities={"teleport"})
