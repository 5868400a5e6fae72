"""The CI lane's list of deselected upstream tests and docs/flink-agents-upstream.md agree (spec FA-12).
Needs no flink_agents: runs in the main suite too."""

from __future__ import annotations

from pathlib import Path

from .upstream_list import deselected, load_list, markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "flink-agents-upstream.md"


def test_the_docs_list_the_deselected_tests_with_their_reasons() -> None:
    """FA-12: the generated section of docs/flink-agents-upstream.md is what the list renders."""
    text = DOC.read_text(encoding="utf-8")
    generated = text.split("<!-- upstream-list:start -->\n", 1)[1].split("<!-- upstream-list:end -->", 1)[0]
    assert generated == markdown()


def test_every_deselected_test_has_one_reason_that_says_why() -> None:
    """FA-12: each id is listed once, under a defined reason with a sentence of text."""
    reasons, by_reason = load_list()
    ids = [test for tests in by_reason.values() for test in tests]
    assert len(ids) == len(set(ids)) == len(deselected())
    assert all("::" in test and test.startswith("flink_agents.") for test in ids)
    assert all(len(text.split()) > 8 for text in reasons.values())
    assert set(by_reason) == set(reasons)
