"""Every check can fail: each broken store fails with the clause that catches it (CONF-2)."""

from __future__ import annotations

import pytest

from .kit_run import failed_clauses, run_kit

pytest_plugins = ["pytester"]

SUITE = """
import pytest
from conformance import StoreConformance, StoreFactory
from tests.conformance.broken_stores import {cls}

class TestBroken(StoreConformance):
    @pytest.fixture(scope="session")
    @classmethod
    def durable_store_factory(cls):
        return StoreFactory({cls}, reopen=lambda s: s, capabilities={{"core", "restart"}}, name="{cls}")
"""


@pytest.mark.parametrize(
    ("cls", "clause"),
    [
        ("IgnoresPrune", "STORE-4"),
        ("MissDoesNotHide", "STORE-3"),
        ("AppendsInsteadOfFinalize", "STORE-5"),
        ("TruncateIgnored", "STORE-5"),
    ],
)
def test_broken_store_fails_the_right_clause(pytester: pytest.Pytester, cls: str, clause: str) -> None:
    """CONF-2: a known bug is caught, and the failing clause is the one that describes it."""
    result, doc = run_kit(pytester, SUITE.format(cls=cls))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert clause in failed_clauses(doc)
    assert doc["level"] in ("PARTIAL", "NONE")
