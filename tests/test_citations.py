"""Code cites the repository's own spec clause ids, never documents outside the repository (DOC-2)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("reference_runtime", "conformance", "pytest_durable", "tests", "benchmarks", "scripts")
# The design documents (numbered seeds, in a seeds folder) and the notes on Flink Agents (a facts file with
# numbered sections); a Hypothesis "seed 42" is not a citation. Written with escapes so this file does not
# match itself.
OUTSIDE = re.compile(r"facts \u00a7|facts\.md|flink-agents-fact[s]|\bsee[d] 00\d|\bseed[s]/")
#: Files another change is rewriting right now; each must still hold a citation (or this test fails, so
#: the set cannot rot). Empty: nothing is pending.
PENDING: frozenset[str] = frozenset()


def citations() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if OUTSIDE.search(line):
                    found.setdefault(path.relative_to(ROOT).as_posix(), []).append(f"{number}: {line.strip()}")
    return found


def test_python_files_cite_spec_clauses_not_outside_documents() -> None:
    """DOC-2: no comment, docstring or message in a .py file cites a document outside the repository;
    cite the clause id of docs/spec.md instead."""
    found = citations()
    unexpected = {path: lines for path, lines in found.items() if path not in PENDING}
    assert not unexpected, f"cite docs/spec.md clause ids instead: {unexpected}"
    fixed = sorted(PENDING - set(found))
    assert not fixed, f"no outside citation left in {fixed}: remove them from PENDING"
