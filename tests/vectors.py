"""Locate and read the golden vectors committed in ``tests/data/vectors`` (see its PROVENANCE.md).

``DURABLE_VECTORS_DIR`` overrides the folder, e.g. to check a newer set of vectors before committing it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: The committed copies; nothing outside the repository is read.
COMMITTED = Path(__file__).resolve().parent / "data" / "vectors"
VECTORS = Path(os.environ.get("DURABLE_VECTORS_DIR") or COMMITTED)


def cases(name: str) -> list[dict[str, Any]]:
    path = VECTORS / name
    if not path.exists():
        hint = "unset DURABLE_VECTORS_DIR" if VECTORS != COMMITTED else "restore tests/data/vectors from git"
        raise FileNotFoundError(f"golden vectors not found at {path}; {hint}")
    # split on "\n" only: str.splitlines would also split inside strings holding U+2028.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
