"""The golden vectors are committed inside the repository, unmodified (DOC-2; SER-1..SER-7 are checked against them)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tests.vectors import VECTORS

PROVENANCE = VECTORS / "PROVENANCE.md"


def recorded_checksums() -> dict[str, str]:
    """Path (relative to the vectors folder) → sha256, from the checksum block of PROVENANCE.md."""
    text = PROVENANCE.read_text(encoding="utf-8")
    block = re.search(r"## Checksums \(sha256\)\n\n```text\n(.*?)```", text, re.S)
    assert block, f"{PROVENANCE}: no checksum block"
    found = {}
    for line in block[1].splitlines():
        digest, name = line.split("  ", 1)
        found[name] = digest
    return found


def test_every_committed_vector_file_matches_its_recorded_sha256() -> None:
    """DOC-2, SER-1: the vectors are the unmodified copies PROVENANCE.md records; a changed byte fails here."""
    recorded = recorded_checksums()
    on_disk = {str(p.relative_to(VECTORS)) for p in VECTORS.rglob("*") if p.is_file()} - {"PROVENANCE.md"}
    assert on_disk == set(recorded), f"files without a checksum, or checksums without a file: {on_disk ^ set(recorded)}"
    for name, digest in sorted(recorded.items()):
        actual = hashlib.sha256((VECTORS / name).read_bytes()).hexdigest()
        assert actual == digest, f"tests/data/vectors/{name}: sha256 {actual}, PROVENANCE.md records {digest}"


def test_all_five_vector_files_and_the_captured_topic_are_committed() -> None:
    """DOC-2, SER-7: the five generated files and the captured 0.2.0 topic are all there."""
    names = set(recorded_checksums())
    assert {
        "actionstate_serialize.jsonl",
        "actionstate_deserialize.jsonl",
        "kryo_values.jsonl",
        "state_keys.jsonl",
        "legacy_020.jsonl",
        "captured/flink-agents-0.2.0-kafka-topic.jsonl",
        "captured/flink-agents-0.2.0-kafka-topic-calls.jsonl",
        "README.md",
        "captured/README.md",
    } <= names


def test_no_test_reads_the_vectors_from_outside_the_repository() -> None:
    """DOC-2: the vectors folder is inside the repository and no test names one outside it."""
    root = Path(__file__).resolve().parents[2]
    assert VECTORS.is_relative_to(root)
    sources = [p for p in (root / "tests").rglob("*.py")] + [p for p in (root / "conformance").rglob("*.py")]
    offenders = [
        str(p.relative_to(root))
        for p in sources
        if re.search(r"shared[/\"' ]+vectors|parents\[[3-9]\]", p.read_text(encoding="utf-8"))
        and p.resolve() != Path(__file__).resolve()
    ]
    assert not offenders, f"reads outside the repository: {offenders}"
