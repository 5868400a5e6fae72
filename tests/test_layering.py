"""The module graph: layers import downwards only and no module imports itself through others (KIT-5, API-3).

Runtime <- kit <- plugin: ``reference_runtime`` imports neither ``conformance`` nor ``pytest_durable``, and
``conformance`` never imports ``pytest_durable``. Every import counts, also one inside a function or under
``TYPE_CHECKING``: a lazy import is still a dependency."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOTS = ("reference_runtime", "conformance", "pytest_durable")


def module_graph() -> dict[str, set[str]]:
    """Module → modules it imports, over the three packages; every import statement counts (function-level
    and ``TYPE_CHECKING`` ones too), an import of a package's attribute counts as one of the package."""
    files = {}
    for root in ROOTS:
        for path in sorted((ROOT / root).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            files[name] = path

    def owner(dotted: str) -> str | None:
        while dotted and dotted not in files:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # `from pkg import name`: the submodule pkg.name if there is one, else pkg itself.
                targets = [
                    f"{source}.{a.name}" if owner(f"{source}.{a.name}") != owner(source) else source for a in node.names
                ]
            for target in targets:
                found = owner(target)
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def test_the_cycle_finder_finds_cycles() -> None:
    """API-3: the finder reports a two- and a three-module loop and leaves a chain alone."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c", "f"}, "f": set()}
    assert sorted(map(sorted, cycles(graph))) == [["a", "b"], ["c", "d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_module_graph_sees_every_kind_of_import() -> None:
    """API-3: the graph has the edges the import statements make, relative and function-level ones included."""
    graph = module_graph()
    assert "reference_runtime.flink_agents_compat" in graph["reference_runtime.runner"]  # inside a method
    assert "reference_runtime.flink_agents_compat" in graph["reference_runtime"]  # `from . import x`
    assert "conformance.session" in graph["conformance.crash"]
    assert "reference_runtime.events" in graph["reference_runtime.flink_agents_compat.events"]  # `from ..`


def test_no_module_imports_itself_through_others() -> None:
    """API-3, KIT-5: the modules of reference_runtime, conformance and pytest_durable have no import cycle,
    none in the store layer and none spanning the kit and the plugin."""
    found = cycles(module_graph())
    assert not found, f"module import cycles: {[sorted(c) for c in found]}"


def test_layers_import_downwards_only() -> None:
    """KIT-5: runtime <- kit <- plugin, counting lazy imports too."""
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in module_graph().items()
        for target in targets
        if (module.startswith("reference_runtime") and target.split(".")[0] in ("conformance", "pytest_durable"))
        or (module.startswith("conformance") and target.startswith("pytest_durable"))
    )
    assert upward == []


# -- one engine (KIT-5, CONF-4) -------------------------------------------------------------------------------


def sources() -> dict[str, ast.Module]:
    """Every module of the three packages, parsed."""
    found = {}
    for root in ROOTS:
        for path in sorted((ROOT / root).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = ast.parse(path.read_text("utf-8"))
    return found


def third_party_imports(tree: ast.Module) -> set[str]:
    """The top-level names of the absolute imports anywhere in ``tree`` (inside functions too)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def definitions(modules: dict[str, ast.Module], names: set[str]) -> dict[str, list[str]]:
    """Where each of ``names`` is defined (a class, a function or a module-level assignment), by module."""
    where: dict[str, list[str]] = {name: [] for name in names}
    for module, tree in modules.items():
        for node in tree.body:
            targets: list[str] = []
            if isinstance(node, ast.ClassDef | ast.FunctionDef):
                targets = [node.name]
            elif isinstance(node, ast.Assign):
                targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                targets = [node.target.id]
            for name in set(targets) & names:
                where[name].append(module)
    return where


def engine_copies(modules: dict[str, ast.Module]) -> list[str]:
    """Modules outside the engine that crash at the points of a trace one by one (``CrashAt.point``), or read
    which calls were recorded before a crash from a trace (a comparison with ``Phase.AFTER_RECORD``): the
    sweep and the "recorded before the crash" rule of ``reference_runtime.exploration``, written again."""
    found = []
    for module, tree in modules.items():
        # The shipped example agents are user code: react_agent.py shows a crash loop written by hand with
        # the runtime's own API, as a user without the plugin would.
        if module.startswith(("reference_runtime.exploration", "pytest_durable.examples")):
            continue
        for node in ast.walk(tree):
            call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if call and node.func.attr == "point" and getattr(node.func.value, "id", None) == "CrashAt":
                found.append(f"{module}:{node.lineno} crashes at each point of a trace (CrashAt.point)")
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Attribute) and c.attr == "AFTER_RECORD" for c in [node.left, *node.comparators]
            ):
                found.append(f"{module}:{node.lineno} reads recorded calls from a trace (Phase.AFTER_RECORD)")
    return found


def test_the_runtime_and_its_engine_never_import_pytest() -> None:
    """KIT-5: ``reference_runtime``, the crash-exploration engine included, imports no pytest, anywhere."""
    offenders = [
        m
        for m, tree in sources().items()
        if m.startswith("reference_runtime") and {"pytest", "_pytest"} & third_party_imports(tree)
    ]
    assert offenders == []
    assert third_party_imports(ast.parse("def f():\n    import pytest\n")) == {"pytest"}  # the scan sees it


def test_importing_the_engine_imports_neither_pytest_nor_hypothesis() -> None:
    """KIT-5, PLG-4: every module of the engine loads without pytest and Hypothesis (Hypothesis is imported
    when a strategy is built or ``explore`` runs)."""
    engine = sorted(m for m in sources() if m.startswith("reference_runtime.exploration"))
    code = (
        f"import sys\nfor m in {engine!r}:\n    __import__(m)\n"
        "print(sorted(m for m in ('pytest', 'hypothesis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert len(engine) > 10 and out.stdout.strip() == "[]"


def test_the_kit_and_the_plugin_have_no_sweep_of_their_own() -> None:
    """KIT-5, CONF-4: one engine: outside ``reference_runtime.exploration`` no module sweeps a trace or
    re-derives which calls were recorded before a crash, and the runner suite crashes through the engine."""
    modules = sources()
    assert engine_copies(modules) == []
    copy = ast.parse(
        "def sweep(trace):\n"
        "    for point in trace:\n"
        "        run([CrashAt.point(point)])\n"
        "    return {p for p in trace if p.phase is Phase.AFTER_RECORD}\n"
    )
    assert len(engine_copies({"conformance.copy": copy})) == 2  # the check can fail
    assert "reference_runtime.exploration.sweep" in module_graph()["conformance.runner_suite"]


def test_each_piece_of_the_engine_is_defined_once() -> None:
    """KIT-5: one ledger, one verdict, one scenario type, one runner protocol, one mismatch mode, one argument
    parser and one inspected-state type across the three packages."""
    names = {"Ledger", "Verdict", "PointOutcome", "Scenario", "RunFunction", "MismatchMode", "Parser", "_Parser"}
    names |= {"InspectedState", "StoreUrl", "CommandError", "learn", "run_scenario", "recorded_attempts"}
    twice = {name: where for name, where in definitions(sources(), names).items() if len(where) > 1}
    assert twice == {}
    both = {"a": ast.parse("class Ledger: ...\n"), "b": ast.parse("Ledger = dict\n")}
    assert definitions(both, {"Ledger"}) == {"Ledger": ["a", "b"]}  # the check can fail
