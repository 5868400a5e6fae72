"""The crash-coverage HTML report renders in a real browser (COV-5): headless Chromium loads it, its scripts run,
and the page a person sees holds the findings of docs/plugin/coverage.md's suite."""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path

import pytest

from tests.plugin import chromium
from tests.plugin.test_crash_coverage import line_of


def _png_colours(png: Path) -> int:
    """How many distinct pixel values the PNG's first rows hold (a blank page has one)."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        chunks.append((data[at + 4 : at + 8], data[at + 8 : at + 8 + length]))
        at += 12 + length
    width, _height, depth, colour = struct.unpack(">IIBB", dict(chunks)[b"IHDR"][:10])
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    channels = {2: 3, 6: 4}[colour]
    stride = 1 + width * channels * depth // 8
    return len(
        {
            raw[r * stride + 1 + i : r * stride + 1 + i + channels]
            for r in range(0, 400, 7)
            for i in range(0, width * channels, channels * 5)
        }
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if chromium.executable() is None:
        pytest.skip("chromium is not installed (scripts/install-test-deps.sh installs it; CI requires it)")
    return chromium.coverage_report(tmp_path_factory.mktemp("crash-coverage"))


def test_the_html_report_renders_in_chromium(report: Path, tmp_path: Path) -> None:
    """COV-5: the index shows the never-crashed points of the notify action with their selectors and the
    findings; a screenshot of it is a picture, not a blank page."""
    page = chromium.dom(report)
    assert "11 of 14 fault points never crashed." in page
    assert "call0:after-pending?key=order-7&amp;seq=0&amp;action=notify" in page
    assert "RefundAgent.notify.&lt;locals&gt;.mail_sent" in page and "never invoked" in page
    assert 'class="recovery-only"' in page
    png = tmp_path / "index.png"
    chromium.screenshot(report, png)
    assert _png_colours(png) > 20


def test_coverage_pys_page_shows_the_durable_contexts(report: Path) -> None:
    """COV-5: coverage.py's page of the agent's file, linked from the index, carries the durable contexts: the
    reconciler's first line lists recovery contexts only (a click on its context marker shows them)."""
    index = chromium.dom(report)
    link = index.split('href="lines/z_', 1)[1].split('"', 1)[0]
    page = chromium.dom(report.parent / "lines" / f"z_{link}")
    contexts = json.loads(re.search(r"contexts = (\{.*?\})", page, re.S)[1])  # type: ignore[index]
    assert "durable:run RefundAgent.notify" in contexts.values()
    line = line_of("key = current_call().idempotency_key")
    keys = re.search(rf'id="ctxs{line}">.*?<span class="ctxs">(\w+)</span>', page)[1]  # type: ignore[index]
    width = int(keys[0])
    shown = {contexts[keys[i : i + width].strip()] for i in range(1, len(keys), width)}
    assert shown and all(c.startswith("durable:recovery RefundAgent.refund after call0:after-") for c in shown), shown


def test_the_documented_picture_is_committed() -> None:
    """COV-5: docs/plugin/coverage.md shows the picture (python -m tests.plugin.chromium writes it)."""
    assert chromium.PICTURE.name in (chromium.ROOT / "docs" / "plugin" / "coverage.md").read_text(encoding="utf-8")
    assert chromium.PICTURE.stat().st_size > 10_000
