"""Every check can fail: each broken store fails with the clause that catches it (CONF-2)."""

from __future__ import annotations

import json

import pytest

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
    import os
    from pathlib import Path

    pytester.makepyfile(test_broken=SUITE.format(cls=cls))
    report = pytester.path / "report.json"
    root = str(Path(__file__).resolve().parents[2])
    pytester.syspathinsert(root)
    os.environ.setdefault("PYTHONPATH", root)
    result = pytester.runpytest(
        "-p", "conformance.plugin", "--durable-conformance-report", str(report), "-p", "no:randomly"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = json.loads(report.read_text())
    failed = {c for chk in doc["checks"] if chk["outcome"] == "failed" for c in chk["clauses"]}
    assert clause in failed
    assert doc["level"] in ("PARTIAL", "NONE")
