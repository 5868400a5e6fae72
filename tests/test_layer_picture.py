"""The picture of the layers in docs/runtime.md is the code's: its arrows are the imports between the
packages it draws, derived from the module graph (DOC-1, KIT-5)."""

from __future__ import annotations

import re
from pathlib import Path

from .test_layering import ROOT, module_graph

RUNTIME_DOC = ROOT / "docs" / "runtime.md"
_DIAGRAM = re.compile(r"^```mermaid\n(?P<body>.*?)^```$", re.M | re.S)
_NODE = re.compile(r'^\s*(?P<id>\w+)\["(?P<package>[\w.]+)"\]\s*$', re.M)
_EDGE = re.compile(r"^\s*(?P<src>\w+)\s*(?P<arrow>-->|-\.->)\s*(?P<dst>\w+)\s*$", re.M)
_PLANNED = re.compile(r"^\s*class (?P<ids>\w+(?:\s*,\s*\w+)*) planned\s*$", re.M)

Edge = tuple[str, str]


class Picture:
    """The packages and arrows of the mermaid diagram of a page: solid arrows are imports the code has,
    dashed ones (``-.->``) planned imports, ``class ... planned`` packages that do not exist yet."""

    def __init__(self, page: Path) -> None:
        [diagram] = [m["body"] for m in _DIAGRAM.finditer(page.read_text(encoding="utf-8"))]
        ids = {m["id"]: m["package"] for m in _NODE.finditer(diagram)}
        self.packages = set(ids.values())
        self.solid: set[Edge] = set()
        self.dashed: set[Edge] = set()
        for m in _EDGE.finditer(diagram):
            edge = (ids[m["src"]], ids[m["dst"]])
            (self.solid if m["arrow"] == "-->" else self.dashed).add(edge)
        self.planned = {ids[i.strip()] for m in _PLANNED.finditer(diagram) for i in m["ids"].split(",")}


def package_of(module: str, packages: set[str]) -> str:
    """The drawn package a module belongs to: the longest one that is the module or holds it."""
    holders = [p for p in packages if module == p or module.startswith(p + ".")]
    assert holders, f"module {module} is in no package of the picture: draw its package"
    return max(holders, key=len)


def package_edges(graph: dict[str, set[str]], packages: set[str]) -> set[Edge]:
    """The imports between drawn packages (imports inside one package are not drawn)."""
    edges = set()
    for module, imported in graph.items():
        for target in imported:
            edge = (package_of(module, packages), package_of(target, packages))
            if edge[0] != edge[1]:
                edges.add(edge)
    return edges


def test_the_picture_draws_the_three_packages_and_the_runtimes_subpackages() -> None:
    """DOC-1: a floor, so a change of the diagram's syntax cannot make the comparison below vacuous."""
    picture = Picture(RUNTIME_DOC)
    subpackages = {
        f"reference_runtime.{p.name}" for p in (ROOT / "reference_runtime").iterdir() if (p / "__init__.py").exists()
    }
    assert {"reference_runtime", "conformance", "pytest_durable"} | subpackages <= picture.packages
    assert len(picture.solid) >= 10
    assert picture.planned <= picture.packages


def test_the_arrows_of_the_picture_are_the_imports_of_the_code() -> None:
    """KIT-5: every solid arrow is an import between the two packages, every such import is drawn, and a
    dashed (planned) arrow is one the code does not have yet."""
    picture = Picture(RUNTIME_DOC)
    graph = module_graph()
    code = package_edges(graph, picture.packages)
    assert sorted(picture.solid - code) == [], "drawn solid, but no module of the first imports the second"
    assert sorted(code - picture.solid - picture.dashed) == [], "imports the picture lacks: draw them"
    assert sorted(picture.dashed & code) == [], "planned imports the code now has: draw them solid"
    existing = {package_of(module, picture.packages) for module in graph}
    assert sorted(picture.planned & existing) == [], "planned packages that exist now: draw them as such"


def test_the_comparison_can_fail() -> None:
    """KIT-5: an import the picture does not draw is found (the check is not vacuous)."""
    picture = Picture(RUNTIME_DOC)
    graph = module_graph()
    graph["reference_runtime.errors"] = graph["reference_runtime.errors"] | {"pytest_durable.plugin"}
    assert ("reference_runtime", "pytest_durable") in package_edges(graph, picture.packages) - picture.solid
