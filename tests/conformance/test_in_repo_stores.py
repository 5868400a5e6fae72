"""Dogfooding: the in-repo stores certify through the same suite a backend author uses (CONF-*)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import StoreConformance, StoreFactory, factory_from_url


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    def durable_store_factory(self) -> StoreFactory:
        return factory_from_url("memory:")


class TestSqliteStore(StoreConformance):
    @pytest.fixture
    def durable_store_factory(self, tmp_path: Path) -> StoreFactory:
        return factory_from_url(f"sqlite:{tmp_path / 'stores.db'}")


class TestRedisServerStore(StoreConformance):
    """KSTORE-2, KSTORE-6: the Redis store on a real redis-server, through its URL as `durable certify
    --store redis://…` opens it (one namespace per store; a restart is a new client)."""

    @pytest.fixture
    def durable_store_factory(self, real_redis: str) -> StoreFactory:
        return factory_from_url(real_redis)


def test_unknown_capability_is_refused(tmp_path: Path) -> None:
    """CONF-1: a backend cannot declare a capability the kit does not know."""
    with pytest.raises(ValueError, match="unknown capabilities"):
        StoreFactory(lambda: None, capabilities={"teleport"})  # type: ignore[arg-type,return-value]
