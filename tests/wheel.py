"""The project's wheel, built from this checkout for the tests that install it outside the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(directory: Path) -> Path:
    """Build the wheel of this checkout into ``directory`` (no dependencies, no build isolation: the build
    backend is in the dev extra) and return its path."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(directory), "."],
        cwd=ROOT,
        check=True,
    )
    (wheel,) = directory.glob("pytest_durable-*.whl")
    return wheel
