"""Certify a backend the way a user would: a test module subclassing the kit's suite, run by pytest with
the kit's plugin and a JSON report, in a pytester directory. The report is what the tests read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_kit(pytester: pytest.Pytester, suite: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run ``suite`` (a test module's source) in-process with the conformance plugin; return the run and
    its report (``{}`` if none was written). ``args`` go to pytest after the report options."""
    pytester.makepyfile(test_kit=suite)
    pytester.syspathinsert(str(ROOT))
    report = pytester.path / "report.json"
    result = pytester.runpytest_inprocess(
        "-p",
        "conformance.plugin",
        "--durable-conformance-report",
        str(report),
        "-p",
        "no:randomly",
        "-p",
        "no:benchmark",
        *args,
    )
    doc: dict[str, Any] = json.loads(report.read_text()) if report.exists() else {}
    return result, doc


def failed_clauses(doc: dict[str, Any]) -> set[str]:
    """Every clause cited by a check that failed."""
    return {c for chk in doc["checks"] if chk["outcome"] == "failed" for c in chk["clauses"]}
