"""Headless Chromium (Debian's ``chromium``) for the tests that look at an HTML page as a person would: its DOM
after scripts ran, and a screenshot. ``python -m tests.plugin.chromium`` renders the crash-coverage report of
docs/plugin/coverage.md's suite and writes the picture that page shows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: The flags a headless Chromium needs on a machine with no network but loopback and no display, run as root.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "docs" / "plugin" / "crash-coverage.png"


def executable() -> str | None:
    """Chromium's path, or None; with ``DURABLE_REQUIRE_CHROMIUM=1`` (CI) a missing Chromium is an error."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.environ.get("DURABLE_REQUIRE_CHROMIUM") == "1":
        raise RuntimeError(
            "chromium is required (DURABLE_REQUIRE_CHROMIUM=1): scripts/install-test-deps.sh installs it"
        )
    return found


def _run(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    chromium = executable()
    assert chromium is not None
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [chromium, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )


def dom(page: Path) -> str:
    """The page's DOM after its scripts ran."""
    return _run(page, "--dump-dom").stdout


def screenshot(page: Path, png: Path, width: int = 1200, height: int = 1000) -> None:
    png.parent.mkdir(parents=True, exist_ok=True)
    _run(page, f"--screenshot={png}", f"--window-size={width},{height}")


def coverage_report(workdir: Path) -> Path:
    """Run the suite of docs/plugin/coverage.md with the HTML report on; the report's index page."""
    from tests.doctest_md import blocks

    doc = ROOT / "docs" / "plugin" / "coverage.md"
    [suite] = [b for b in blocks(doc) if b.options.get("file") == "test_refund_crashes.py"]
    (workdir / "test_refund_crashes.py").write_text(suite.body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COVERAGE_", "COV_CORE_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_refund_crashes.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "--durable-coverage-html",
            "crash-coverage",
        ],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return workdir / "crash-coverage" / "index.html"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as work:
        screenshot(coverage_report(Path(work)), PICTURE, width=1500, height=1000)
    print(f"wrote {PICTURE}")
