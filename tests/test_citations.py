"""Code cites the repository's own spec clause ids, never documents outside the repository (DOC-2), and every
`_Source:` of docs/spec.md resolves to docs/sources.md or a file of the repository (DOC-6)."""

from __future__ import annotations

import ast
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


# -- docs/spec.md cites what a reader can check: docs/sources.md or a file of the repository ------------------

SPEC = ROOT / "docs" / "spec.md"
SOURCES = ROOT / "docs" / "sources.md"
#: What a spec line may not cite: the project's tracker ("issue 12"), the facts notes and the design documents
#: by their numbers outside the repository, or the folder beside it. Written with escapes (see OUTSIDE).
UNCHECKABLE = re.compile(r"\bissue \d+|facts \u00a7|\bsee[d]s? \d+|\.\./share[d]|share[d]/see[d]s")
_SOURCE = re.compile(r"(?<!`)_Source: (?P<body>.*?)\._", re.S)  # `_Source:` in backticks is prose
_ANCHOR_ITEM = re.compile(r"\[sources \u00a7(?P<anchor>[\w-]+)\]\(sources\.md#(?P<target>[\w-]+)\)")
_FILE_ITEM = re.compile(r"`(?P<path>[\w./-]+)(?:::(?P<names>[\w:]+))?`")
_CLAUSE = re.compile(r"^- \*\*(?P<id>[A-Z]+-\d+)\*\*", re.M)
_LINK = re.compile(r"\]\(sources\.md#(?P<anchor>[^)]*)\)")
_SPEC_LINE = re.compile(r"^\* \*Spec:\*(?P<ids>.*?)(?=\n\* |\n\n|\Z)", re.M | re.S)
_RANGE = re.compile(r"(?P<prefix>[A-Z]+)-(?P<lo>\d+)\.\.(?P=prefix)-(?P<hi>\d+)")
#: Repository files named in docs/sources.md as what checks a fact.
_REPO_PATH = re.compile(r"`(?P<path>(?:tests|conformance|benchmarks|docs)/[\w./-]+)(?:::(?P<names>[\w:]+))?`")


def slug(heading: str) -> str:
    """The anchor mkdocs gives a heading (Python-Markdown's toc ``slugify``, for ASCII headings)."""
    text = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def source_sections() -> dict[str, str]:
    """Anchor → text of each ``##``/``###`` section of docs/sources.md."""
    sections: dict[str, str] = {}
    anchor = ""
    for line in SOURCES.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{2,3} (.*)", line)
        if heading:
            anchor = slug(heading[1])
            assert anchor not in sections, f"two sections of docs/sources.md have the anchor #{anchor}"
            sections[anchor] = ""
        elif anchor:
            sections[anchor] += line + "\n"
    return sections


def defines(path: Path, names: list[str]) -> bool:
    """Whether ``path`` defines ``names[0]`` at module level, ``names[1]`` inside it, and so on."""
    body: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    for name in names:
        found = [n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
        match = next((n for n in found if n.name == name), None)
        if match is None:
            return False
        body = match.body
    return True


def unresolved_file(path: str, names: str | None) -> str | None:
    """Why ``path`` (with ``::names`` of a test) names nothing in the repository, or None."""
    target = ROOT / path
    if not (target.is_dir() if path.endswith("/") else target.is_file()):
        return f"{path}: no such file or folder"
    if names and not defines(target, names.split("::")):
        return f"{path}::{names}: not defined there"
    return None


def clause_sources() -> dict[str, str]:
    """Clause id → the body of its ``_Source:`` (clauses without one are left out)."""
    text = SPEC.read_text(encoding="utf-8")
    starts = [(m.start(), m["id"]) for m in _CLAUSE.finditer(text)]
    found: dict[str, str] = {}
    for source in _SOURCE.finditer(text):
        owners = [cid for at, cid in starts if at < source.start()]
        assert owners, f"a _Source: before the first clause: {source[0]!r}"
        found[owners[-1]] = source["body"]
    return found


def expand(ids: str) -> set[str]:
    """The clause ids of a ``*Spec:*`` line, ranges such as ``REC-1..REC-4`` expanded."""
    found = set(re.findall(r"\b[A-Z]+-\d+\b", _RANGE.sub("", ids)))
    for r in _RANGE.finditer(ids):
        found |= {f"{r['prefix']}-{n}" for n in range(int(r["lo"]), int(r["hi"]) + 1)}
    return found


def test_the_parsers_read_what_the_documents_hold() -> None:
    """DOC-6: a floor, so a change of format cannot make the checks below vacuous."""
    assert len(clause_sources()) >= 200
    assert len(source_sections()) >= 30
    assert slug("Design: per-action state consistency") == "design-per-action-state-consistency"
    assert slug("A PENDING slot without a reconciler") == "a-pending-slot-without-a-reconciler"
    assert expand("DE-2..DE-4, REC-5") == {"DE-2", "DE-3", "DE-4", "REC-5"}
    assert (
        unresolved_file("tests/test_citations.py", "test_no_spec_line_cites_a_document_outside_the_repository") is None
    )
    assert unresolved_file("tests/test_citations.py", "no_such_test") is not None


def test_every_spec_source_resolves_in_the_repository() -> None:
    """DOC-6: every ``_Source:`` of docs/spec.md is a list of sections of docs/sources.md and files of the
    repository (a test as ``path::name``), each of which exists."""
    anchors = set(source_sections())
    problems = []
    for cid, body in clause_sources().items():
        for item in (part.strip() for part in body.split(";")):
            link, file = _ANCHOR_ITEM.fullmatch(item), _FILE_ITEM.fullmatch(item)
            if link is not None:
                if link["anchor"] != link["target"] or link["anchor"] not in anchors:
                    problems.append(f"{cid}: {item} is no section of docs/sources.md")
            elif file is not None:
                why = unresolved_file(file["path"], file["names"])
                if why:
                    problems.append(f"{cid}: {why}")
            else:
                problems.append(f"{cid}: {item!r} is neither [sources §anchor](sources.md#anchor) nor `path`")
    assert not problems, "\n".join(problems)


def test_no_spec_line_cites_a_document_outside_the_repository() -> None:
    """DOC-6: no line of docs/spec.md or docs/sources.md cites the tracker, the facts notes or the design
    documents by number, or the folder beside the repository; every link into docs/sources.md resolves."""
    anchors = set(source_sections())
    for page in (SPEC, SOURCES):
        text = page.read_text(encoding="utf-8")
        bad = [f"{n}: {line}" for n, line in enumerate(text.splitlines(), 1) if UNCHECKABLE.search(line)]
        assert not bad, f"{page.name} cites what a reader cannot check:\n" + "\n".join(bad)
    broken = sorted({m["anchor"] for m in _LINK.finditer(SPEC.read_text(encoding="utf-8"))} - anchors)
    assert not broken, f"docs/spec.md links to sections docs/sources.md does not have: {broken}"


def test_each_cited_section_names_the_clauses_that_cite_it() -> None:
    """DOC-6: a section of docs/sources.md lists in its ``*Spec:*`` line every clause whose source it is, and
    only clauses the spec defines, so a reader can go both ways."""
    sections = source_sections()
    defined = {m["id"] for m in _CLAUSE.finditer(SPEC.read_text(encoding="utf-8"))}
    listed = {}
    for anchor, body in sections.items():
        spec_line = _SPEC_LINE.search(body)
        listed[anchor] = expand(spec_line["ids"]) if spec_line else set()
        assert listed[anchor] <= defined, f"#{anchor} lists clauses the spec lacks: {listed[anchor] - defined}"
    missing = [
        f"#{m['anchor']} does not list {cid}"
        for cid, body in clause_sources().items()
        for m in _ANCHOR_ITEM.finditer(body)
        if cid not in listed.get(m["anchor"], set())
    ]
    assert not missing, "\n".join(missing)


def test_what_sources_md_says_checks_a_fact_exists() -> None:
    """DOC-6: every test, vector file and suite docs/sources.md names as the check of a fact is in the
    repository."""
    text = SOURCES.read_text(encoding="utf-8")
    named = list(_REPO_PATH.finditer(text))
    assert len(named) >= 40
    problems = [why for m in named if (why := unresolved_file(m["path"], m["names"]))]
    assert not problems, "\n".join(problems)
