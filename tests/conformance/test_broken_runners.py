"""Every runner check can fail: each broken runner fails with the clause that catches it (CONF-2, CONF-4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    pytester.makepyfile(test_broken=SUITE.format(name=name))
    pytester.syspathinsert(str(Path(__file__).resolve().parents[2]))
    report = pytester.path / "report.json"
    result = pytester.runpytest(
        "-p",
        "conformance.plugin",
        "--durable-conformance-report",
        str(report),
        "-p",
        "no:randomly",
        "-p",
        "no:benchmark",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = json.loads(report.read_text())
    failed = {c for chk in doc["checks"] if chk["outcome"] == "failed" for c in chk["clauses"]}
    assert clauses <= failed, failed
    assert doc["level"] in ("PARTIAL", "NONE")
    assert doc["capabilities"]["runner"]["level"] == "PARTIAL"
