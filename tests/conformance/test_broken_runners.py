"""Every runner check can fail: each broken runner fails with the clause that catches it (CONF-2, CONF-4)."""

from __future__ import annotations

import pytest

from .kit_run import failed_clauses, run_kit

pytest_plugins = ["pytester"]

SUITE = """
import pytest
from conformance import RunnerConformance
from tests.conformance.broken_runners import factory

class TestBroken(RunnerConformance):
    @pytest.fixture(scope="session")
    def durable_runner_factory(self):
        return factory({name!r})
"""


@pytest.mark.parametrize(
    ("name", "clauses"),
    [
        ("forgetful", {"REC-3", "DE-2"}),
        ("always_lenient", {"DE-8"}),
        ("no_reconcilers", {"DE-5"}),
        ("reruns_completed", {"REC-4"}),
    ],
)
def test_broken_runner_fails_the_right_clause(pytester: pytest.Pytester, name: str, clauses: set[str]) -> None:
    """CONF-2, CONF-4: a known runner bug is caught by the runner suite, under the clause describing it."""
    result, doc = run_kit(pytester, SUITE.format(name=name))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = failed_clauses(doc)
    assert clauses <= failed, failed
    assert doc["level"] in ("PARTIAL", "NONE")
    assert doc["capabilities"]["runner"]["level"] == "PARTIAL"
