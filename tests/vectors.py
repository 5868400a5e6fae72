"""Read the golden vectors committed in ``tests/data/vectors`` (see its PROVENANCE.md); nothing outside the
repository is read (spec DOC-2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent / "data" / "vectors"


def cases(name: str) -> list[dict[str, Any]]:
    path = VECTORS / name
    if not path.exists():
        raise FileNotFoundError(f"golden vectors not found at {path}; restore tests/data/vectors from git")
    # split on "\n" only: str.splitlines would also split inside strings holding U+2028.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def captured_records(name: str = "flink-agents-0.2.0-kafka-topic.jsonl") -> list[dict[str, Any]]:
    """The Kafka records a real Flink Agents job wrote (``captured/``), in offset order. Each has ``offset``,
    ``key``, ``headers``, ``value`` (parsed) and ``value_bytes``: the record value as the job wrote it (the
    compact Jackson JSON of ``value``)."""
    from reference_runtime.serde.jackson import dumps

    records = cases(f"captured/{name}")
    for rec in records:
        rec["value_bytes"] = dumps(rec["value"]).encode("utf-8")
    return sorted(records, key=lambda rec: int(rec["offset"]))
