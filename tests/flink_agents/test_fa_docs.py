"""The flink_agents code of docs/flink-agents.md, which the main suite's doc runner skips (it needs this
venv), runs here (spec FA-12, DOC-1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctest_md import blocks

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "flink-agents.md"


def test_the_quickstart_test_of_the_docs_passes_at_every_fault_point(pytester: pytest.Pytester) -> None:
    """FA-12, FA-1: the page's first block, a test file sweeping the shipped quickstart agent with a fake
    connection, passes crash-free and at each of its 12 fault points."""
    quickstart = next(b for b in blocks(DOC) if "test_fa_docs.py" in b.options.get("reason", ""))
    pytester.makepyfile(test_quickstart=quickstart.body)
    result = pytester.runpytest_inprocess("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=13)
