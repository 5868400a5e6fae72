"""The public API: what each package root exports, where the docs import from, and the module graph
(spec API-1, API-2, API-3)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doctest_md import PYTHON, blocks

ROOT = Path(__file__).resolve().parents[1]
ROOTS = ("reference_runtime", "conformance", "pytest_durable")
#: Besides the roots, docs may import from the stores package and from these documented modules.
PUBLIC_PACKAGES = ("reference_runtime.stores",)
#: ``pytest_durable.strategies``: Hypothesis strategies, a namespace like hypothesis.strategies;
#: ``reference_runtime.config``: the configuration key registry (CFG-1), documented in docs/configuration.md;
#: the serde's Jackson, Java and tagged-value modules: wire-format building blocks for other implementations
#: (SER-9, SER-10), documented in docs/wire-format.md.
#: The example agents the docs use, shipped so the docs run from a wheel (DOC-7); not API, but importable.
EXAMPLES = "pytest_durable.examples"
PUBLIC_MODULES = (
    "pytest_durable.strategies",
    "pytest_durable.sweep",  # the sweep engine, for building one's own checks (docs/plugin/reference.md)
    "reference_runtime.config",
    "reference_runtime.serde.jackson",
    "reference_runtime.serde.java",
    "reference_runtime.serde.tagged",
    "reference_runtime.stores.kafka_flink_format",  # Flink Agents record functions, docs/wire-format.md (WIRE-*)
    # The flink_agents adapter and its local environment (docs/flink-agents.md): they import flink_agents, an
    # optional extra, so the package root cannot export them (FA-7).
    "reference_runtime.flink_agents_compat",
    "reference_runtime.flink_agents_compat.local",
)


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _examples() -> list[Path]:
    return sorted((ROOT / "pytest_durable" / "examples").rglob("*.py"))


# -- API-1: the roots ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
def test_each_root_declares_its_public_names(root: str) -> None:
    """API-1: ``__all__`` is a sorted list of unique, non-private names, each importable from the root and
    each class or function defined inside the distribution (no re-exported third-party object)."""
    module = importlib.import_module(root)
    names = module.__dict__.get("__all__")
    assert isinstance(names, list) and names, f"{root} has no __all__"
    assert len(names) == len(set(names)), f"{root}.__all__ lists a name twice"
    assert not [n for n in names if n.startswith("_")], f"{root}.__all__ exports private names"
    for name in names:
        obj = getattr(module, name)  # AttributeError here: listed but not importable
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__.split(".")[0] in ROOTS, f"{root}.{name} is {obj.__module__}.{name}, not ours"


@pytest.mark.parametrize("root", ROOTS)
def test_every_exported_name_is_documented(root: str) -> None:
    """API-1: the API reference page renders the root (``::: root``), and every exported class or function
    has a docstring of its own for it to render; a constant is explained in the docs' text."""
    page = (ROOT / "docs" / "api" / f"{root}.md").read_text(encoding="utf-8")
    assert re.search(rf"^::: {root}\s*$", page, re.M), f"docs/api/{root}.md does not render `::: {root}`"
    text = "\n".join(p.read_text(encoding="utf-8") for p in _docs())
    module = importlib.import_module(root)
    undocumented = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            own = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
            if not (own or "").strip() or own.startswith(f"{name}("):  # a dataclass's generated signature
                undocumented.append(name)
        elif not re.search(rf"\b{re.escape(name)}\b", text):
            undocumented.append(name)
    assert not undocumented, f"{root} exports names without documentation: {undocumented}"


def test_importing_the_plugin_package_loads_nothing_heavy() -> None:
    """API-1, PLG-4: ``import pytest_durable`` and reading its ``__all__`` load neither the runtime nor
    Hypothesis; a name is imported on first use."""
    code = (
        "import sys, pytest_durable\n"
        "names = list(pytest_durable.__all__)\n"
        "heavy = ('reference_runtime', 'hypothesis', 'cloudpickle', 'freezegun', 'conformance')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "print(pytest_durable.DurableHarness.__module__, 'reference_runtime' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "reference_runtime.exploration.harness True"]


@pytest.mark.parametrize("root", ["conformance", "pytest_durable"])
def test_an_unknown_name_is_an_attribute_error(root: str) -> None:
    """API-1: the lazy roots refuse a name they do not export like any module does."""
    with pytest.raises(AttributeError, match=f"module '{root}' has no attribute 'Nope'"):
        _ = importlib.import_module(root).Nope


# -- API-2: where the docs import from ----------------------------------------------------------------------


def _imports(tree: ast.AST) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names) of every absolute import of one of our packages."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in ROOTS:
                yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ROOTS:
                    yield node.lineno, alias.name, []


def documented_imports() -> list[tuple[str, str, list[str]]]:
    """(where, module, names) of every import of our packages in README.md, docs/ and examples/."""
    found = []
    for path in _docs():
        for block in blocks(path):
            if block.lang in PYTHON:
                for line, module, names in _imports(ast.parse(block.body)):
                    found.append((f"{block.where}+{line}", module, names))
    for path in _examples():
        for line, module, names in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            found.append((f"{path.relative_to(ROOT)}:{line}", module, names))
    return found


def import_problems(imports: list[tuple[str, str, list[str]]]) -> list[str]:
    problems = []
    for where, module, names in imports:
        if module in ROOTS:
            exported = set(importlib.import_module(module).__all__)
            for name in names:
                if name not in exported and f"{module}.{name}" not in PUBLIC_MODULES:
                    problems.append(f"{where}: {module} does not export {name}")
        elif module not in PUBLIC_PACKAGES + PUBLIC_MODULES and not module.startswith(f"{EXAMPLES}."):
            root = module.split(".")[0]
            problems.append(f"{where}: imports from {module}; import {', '.join(names) or 'it'} from {root}")
    return problems


def test_docs_and_examples_import_only_from_package_roots() -> None:
    """API-2: every import of README.md, docs/ and examples/ is from a package root and names what that root
    exports (or is from the stores package, or a documented public module)."""
    imports = documented_imports()
    assert len(imports) >= 20, "the doc import scan found too few imports (the block parser changed?)"
    assert not import_problems(imports)


def test_the_doc_import_check_catches_a_private_module() -> None:
    """API-2: the check above refuses what the docs used to do."""
    bad = [
        ("docs/x.md:1+1", "reference_runtime.retry", ["RetryPolicy"]),
        ("docs/x.md:1+2", "reference_runtime", ["ActionExecution"]),
        ("docs/x.md:1+3", "pytest_durable.inspect", ["inspect_store"]),
    ]
    assert import_problems(bad) == [
        "docs/x.md:1+1: imports from reference_runtime.retry; import RetryPolicy from reference_runtime",
        "docs/x.md:1+2: reference_runtime does not export ActionExecution",
        "docs/x.md:1+3: imports from pytest_durable.inspect; import inspect_store from pytest_durable",
    ]


_DOTTED = re.compile(r"`(?P<path>(?:reference_runtime|conformance|pytest_durable)(?:\.[A-Za-z_]\w*)+)")


def _resolve(dotted: str) -> object:
    """The object a dotted path names, or None: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def test_prose_names_exported_objects_by_their_root() -> None:
    """API-2: the docs' text names an exported object as ``root.Name``, not by the module defining it."""
    wrong = []
    for path in _docs():
        for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            for m in _DOTTED.finditer(line):
                parts = m["path"].split(".")
                root, name = parts[0], parts[-1]
                if len(parts) < 3 or m["path"] in PUBLIC_MODULES:
                    continue
                module = importlib.import_module(root)
                if name in module.__all__ and _resolve(m["path"]) is getattr(module, name):
                    wrong.append(f"{path.relative_to(ROOT)}:{n}: `{m['path']}` -> `{root}.{name}`")
    assert not wrong, "\n".join(wrong)
