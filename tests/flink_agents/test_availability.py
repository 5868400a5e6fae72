"""Reports whether the flink_agents compatibility tests can run here (spec FA-1)."""

from __future__ import annotations

import importlib.metadata

import pytest

from .conftest import AVAILABLE, REASON


@pytest.mark.skipif(not AVAILABLE, reason=REASON)
def test_the_installed_flink_agents_is_the_release_the_adapter_targets() -> None:
    """FA-1: the compatibility tests run against flink-agents 0.3.x."""
    assert importlib.metadata.version("flink-agents").startswith("0.3.")
