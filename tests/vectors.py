"""Locate and read the golden vectors in ``../shared/vectors`` (overridable with DURABLE_VECTORS_DIR)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

VECTORS = Path(os.environ.get("DURABLE_VECTORS_DIR", Path(__file__).resolve().parents[2] / "shared" / "vectors"))


def cases(name: str) -> list[dict[str, Any]]:
    path = VECTORS / name
    if not path.exists():
        raise FileNotFoundError(f"golden vectors not found at {path}; set DURABLE_VECTORS_DIR")
    # split on "\n" only: str.splitlines would also split inside strings holding U+2028.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
