"""DOC-1: the "where to find things" table of docs/runtime.md names every module of the runtime (or the
folder holding it), so a newcomer finds each responsibility in one file and no new module is left off."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "reference_runtime"


def unnamed_modules(table: str) -> list[str]:
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "_version.py"):
            continue
        relative = path.relative_to(PACKAGE).as_posix()
        folder = f"`{path.parent.relative_to(PACKAGE).as_posix()}/`"
        if f"`{relative}`" not in table and folder not in table:
            missing.append(relative)
    return missing


def test_the_runtime_module_map_names_every_module() -> None:
    text = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")
    table = text[text.index("| concern | module |") : text.index("## Writing an agent")]
    assert unnamed_modules(table) == []
    assert "snapshots.py" in unnamed_modules(table.replace("`snapshots.py`", ""))  # the check can fail
