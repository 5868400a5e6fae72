"""The serde depends on no store (SER-10): the stores use the serde, never the other way round."""

from __future__ import annotations

import ast
from pathlib import Path

import reference_runtime.serde

SERDE = Path(reference_runtime.serde.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any level (function-local imports included), as an absolute
    dotted name."""
    package = "reference_runtime.serde"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return out


def test_the_serde_never_imports_a_store() -> None:
    """SER-10: no module of reference_runtime.serde imports reference_runtime.stores, not even inside a
    function (the tagged value codec both use lives in serde/tagged.py)."""
    offenders = {
        path.name: sorted(m for m in imported_modules(path) if m.startswith("reference_runtime.stores"))
        for path in sorted(SERDE.glob("*.py"))
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}
    # The walk does see relative imports: tagged.py's own imports resolve to absolute names.
    assert "reference_runtime.errors" in imported_modules(SERDE / "tagged.py")
