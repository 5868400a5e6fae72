"""Every normative clause of docs/spec.md is cited by at least one test or conformance check (CONF-2)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "spec.md"

#: Clauses whose checks are being written right now; each must be uncited (or this test fails, so the set
#: cannot rot). issue 5 kept PLG-2 and PLG-3 here until the plugin's journal and ledger tests landed.
PENDING: frozenset[str] = frozenset()

_DEFINITION = re.compile(r"^- \*\*(?P<id>[A-Z]+-\d+)\*\* \((?P<level>MUST|SHOULD|MAY)\)(?P<rest>.*)$", re.M)


def clauses() -> dict[str, str]:
    """Clause id → level, for every clause defined in the spec."""
    text = SPEC.read_text(encoding="utf-8")
    found = {m["id"]: m["level"] for m in _DEFINITION.finditer(text)}
    every_bold_id = set(re.findall(r"\*\*([A-Z]+-\d+)\*\*", text))
    assert every_bold_id == set(found), f"clause ids not in the `- **ID** (LEVEL)` form: {every_bold_id - set(found)}"
    return found


def normative() -> set[str]:
    """MUST and SHOULD clauses that are not retired."""
    text = SPEC.read_text(encoding="utf-8")
    retired = {m["id"] for m in _DEFINITION.finditer(text) if "*Retired*" in m["rest"]}
    return {cid for cid, level in clauses().items() if level in ("MUST", "SHOULD")} - retired


def citing_sources() -> dict[Path, str]:
    """Python files under tests/ and conformance/ other than this one."""
    me = Path(__file__).resolve()
    files = sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "conformance").rglob("*.py"))
    return {p: p.read_text(encoding="utf-8") for p in files if p.resolve() != me}


def cited(cid: str, sources: dict[Path, str]) -> list[Path]:
    pattern = re.compile(rf"\b{re.escape(cid)}\b")
    return [p for p, text in sources.items() if pattern.search(text)]


def test_the_spec_defines_clauses_with_unique_ids() -> None:
    """CONF-2: the parser finds every clause (a sanity floor guards against a format drift)."""
    text = SPEC.read_text(encoding="utf-8")
    ids = [m["id"] for m in _DEFINITION.finditer(text)]
    assert len(ids) == len(set(ids)), "a clause id is defined twice"
    assert len(ids) >= 100
    assert {"IDN-1", "STORE-1", "CONF-1", "CONF-2", "CONF-3"} <= set(ids)


def test_every_normative_clause_is_cited_by_a_test_or_check() -> None:
    """CONF-2: each MUST/SHOULD clause id appears, as a word, in a test or conformance check."""
    sources = citing_sources()
    missing = sorted(cid for cid in normative() - PENDING if not cited(cid, sources))
    assert not missing, f"clauses no test cites: {missing}"


def test_pending_clauses_are_still_uncited() -> None:
    """CONF-2: a clause leaves PENDING as soon as a test cites it, and PENDING names only real clauses."""
    sources = citing_sources()
    assert not PENDING - set(clauses()), f"not clauses of the spec: {sorted(PENDING - set(clauses()))}"
    now_cited = {cid: [str(p.relative_to(ROOT)) for p in cited(cid, sources)] for cid in PENDING}
    now_cited = {cid: where for cid, where in now_cited.items() if where}
    assert not now_cited, f"cited now, remove from PENDING: {now_cited}"
