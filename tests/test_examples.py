"""The examples run as documented (issue 4, item 5)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_react_agent_keeps_every_tool_effect_exactly_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TPC-2, REC-5, IDN-6: the example crashes at every fault point; each table ends with one row and the
    payment is committed once."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import react_agent
    finally:
        sys.path.pop(0)
    assert react_agent.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "0 with duplicated or lost effects" in out
    assert out.count("ok   crash at") >= 30
