"""Hand-rolled mutation testing over the runtime's state machine.

Each mutant changes one thing in one function of a target module (a comparison flipped, an integer
moved by one, ``+``/``-`` swapped, a boolean or ``and``/``or`` flipped, a ``not`` dropped, a statement
removed), is written into a private copy of the repository, and the tests are run against it. A mutant
the tests do not notice *survives*: it points at behaviour no test pins down. See docs/testing.md.

    python scripts/mutate.py                         # durable.py, batch.py, memory.py against tests/runtime
    python scripts/mutate.py --list                  # the mutants, nothing run
    python scripts/mutate.py --files reference_runtime/batch.py --sample 20 --seed 1 --jobs 2

Only the standard library is used; nothing in the working tree is modified.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = ["reference_runtime/durable.py", "reference_runtime/batch.py", "reference_runtime/memory.py"]
DEFAULT_TESTS = ["tests/runtime"]
#: Test files that exercise a target most directly: they run first, so most mutants die within seconds.
FOCUS = {
    "reference_runtime/durable.py": ["tests/runtime/test_durable.py", "tests/runtime/test_state_machine_edges.py"],
    "reference_runtime/batch.py": ["tests/runtime/test_batch.py", "tests/runtime/test_state_machine_edges.py"],
    "reference_runtime/memory.py": ["tests/runtime/test_memory.py"],
}

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_SYMBOL = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.GtE: ">=",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


@dataclass(frozen=True)
class Mutant:
    file: str
    site: int  # position of the mutated node in ast.walk order: re-parsing the same text finds it again
    line: int
    what: str
    code: str  # the mutated line as written, to find the mutant again after the file changed (--rerun)


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed | survived | timeout
    seconds: float
    detail: str = ""


# -- finding mutation sites --------------------------------------------------------------------------------


def _inside_functions(tree: ast.Module) -> set[int]:
    """ids of the nodes inside function bodies, outside f-strings, docstrings and logging calls (changes
    there are cosmetic: they would only add survivors nobody can kill)."""
    inside: set[int] = set()

    def cosmetic(node: ast.AST) -> bool:
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return True  # docstring
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "log"
        return False

    def mark(node: ast.AST) -> None:
        if cosmetic(node):
            return
        inside.add(id(node))
        for child in ast.iter_child_nodes(node):
            mark(child)

    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for stmt in fn.body:
                mark(stmt)
            # Annotations and defaults are not behaviour worth mutating here.
    return inside


def _mutations(node: ast.AST) -> Iterator[tuple[str, Callable[[ast.AST], None]]]:
    """(description, apply) for every mutation of ``node`` itself."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            flipped = _FLIP.get(type(op))
            if flipped is not None:

                def apply(n: ast.AST, i: int = i, flipped: type[ast.cmpop] = flipped) -> None:
                    assert isinstance(n, ast.Compare)
                    n.ops[i] = flipped()

                yield f"`{_SYMBOL[type(op)]}` -> `{_SYMBOL[flipped]}`", apply
    elif isinstance(node, ast.Constant) and type(node.value) is bool:

        def flip(n: ast.AST) -> None:
            assert isinstance(n, ast.Constant)
            n.value = not n.value

        yield f"`{node.value}` -> `{not node.value}`", flip
    elif isinstance(node, ast.Constant) and type(node.value) is int:

        def plus(n: ast.AST) -> None:
            assert isinstance(n, ast.Constant) and isinstance(n.value, int)
            n.value = n.value + 1

        yield f"`{node.value}` -> `{node.value + 1}`", plus
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        other = ast.Sub if isinstance(node.op, ast.Add) else ast.Add

        def swap(n: ast.AST, other: type[ast.operator] = other) -> None:
            assert isinstance(n, ast.BinOp)
            n.op = other()

        yield f"`{'+' if other is ast.Sub else '-'}` -> `{'-' if other is ast.Sub else '+'}`", swap
    elif isinstance(node, ast.BoolOp):
        other_b = ast.Or if isinstance(node.op, ast.And) else ast.And

        def swap_b(n: ast.AST, other_b: type[ast.boolop] = other_b) -> None:
            assert isinstance(n, ast.BoolOp)
            n.op = other_b()

        yield f"`{'and' if other_b is ast.Or else 'or'}` -> `{'or' if other_b is ast.Or else 'and'}`", swap_b
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "`not x` -> `x`", lambda n: None  # applied by the parent rewrite in _apply
    if isinstance(node, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return | ast.Raise | ast.Delete):
        yield f"statement removed ({type(node).__name__.lower()})", lambda n: None  # applied in _apply


#: The text of every target as read once at the start: the working tree may change while mutants run.
SOURCES: dict[str, str] = {}


def source_of(file: str) -> str:
    if file not in SOURCES:
        SOURCES[file] = (ROOT / file).read_text(encoding="utf-8")
    return SOURCES[file]


def find_mutants(file: str) -> list[Mutant]:
    text = source_of(file)
    lines = text.splitlines()
    tree = ast.parse(text)
    inside = _inside_functions(tree)
    found = []
    for site, node in enumerate(ast.walk(tree)):
        if id(node) not in inside:
            continue
        line = getattr(node, "lineno", 0)
        for what, _ in _mutations(node):
            found.append(Mutant(file, site, line, what, lines[line - 1].strip() if line else ""))
    return found


class _Replace(ast.NodeTransformer):
    """Replaces one node (by identity) with another, or with ``pass`` when it is a removed statement."""

    def __init__(self, target: ast.AST, replacement: ast.AST | None) -> None:
        self.target, self.replacement = target, replacement

    def visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return self.replacement if self.replacement is not None else ast.Pass()
        result: ast.AST = super().visit(node)
        return result


def mutated_source(mutant: Mutant) -> str:
    tree: ast.AST = ast.parse(source_of(mutant.file))
    node = list(ast.walk(tree))[mutant.site]
    options = dict(_mutations(node))
    if mutant.what.startswith("statement removed"):
        tree = _Replace(node, None).visit(tree)
    elif mutant.what == "`not x` -> `x`":
        assert isinstance(node, ast.UnaryOp)
        tree = _Replace(node, node.operand).visit(tree)
    else:
        options[mutant.what](node)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


# -- running -----------------------------------------------------------------------------------------------


def _copy_repo(dest: Path) -> None:
    ignore = shutil.ignore_patterns(
        ".git",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "*.egg-info",
        ".hypothesis",
        ".venv*",
        "site",
        "benchmark-plots",
    )
    shutil.copytree(ROOT, dest, ignore=ignore, dirs_exist_ok=True)
    for file, text in SOURCES.items():  # the targets exactly as the mutants were computed from
        (dest / file).write_text(text, encoding="utf-8")


def _test_args(file: str, tests: list[str]) -> list[str]:
    """Focused test files first, then the rest, so ``-x`` stops at the first failure early."""
    focus = [t for t in FOCUS.get(file, []) if (ROOT / t).exists()]
    rest: list[str] = []
    for t in tests:
        path = ROOT / t
        files = sorted(str(p.relative_to(ROOT)) for p in path.rglob("test_*.py")) if path.is_dir() else [t]
        rest.extend(f for f in files if f not in focus and f not in rest)
    return focus + rest


def _pytest(copy: Path, args: list[str], timeout: float) -> tuple[int | None, str]:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *args]
    try:
        done = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    lines = done.stdout.strip().splitlines()
    failed = [ln.split(" ", 1)[1].split(" - ")[0] for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
    if failed:
        return done.returncode, failed[0]  # the test that noticed the mutant
    return done.returncode, lines[-1] if lines else ""


def run_mutant(mutant: Mutant, copy: Path, tests: list[str], timeout: float) -> Outcome:
    target = copy / mutant.file
    original = source_of(mutant.file)
    started = time.monotonic()
    try:
        source = mutated_source(mutant)
        compile(source, mutant.file, "exec")
    except (SyntaxError, ValueError) as exc:
        return Outcome(mutant, "killed", 0.0, f"does not compile: {exc}")
    target.write_text(source, encoding="utf-8")
    try:
        code, detail = _pytest(copy, _test_args(mutant.file, tests), timeout)
    finally:
        target.write_text(original, encoding="utf-8")
    seconds = time.monotonic() - started
    if code is None:
        return Outcome(mutant, "timeout", seconds, f"no result within {timeout:.0f}s")
    return Outcome(mutant, "survived" if code == 0 else "killed", seconds, detail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", nargs="+", default=DEFAULT_FILES, help="modules to mutate (repo-relative)")
    parser.add_argument("--tests", nargs="+", default=DEFAULT_TESTS, help="test files or directories to run")
    parser.add_argument("--sample", type=int, default=0, help="run a random sample of this many mutants")
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once, each in its own copy")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a mutant counts as timeout")
    parser.add_argument("--json", type=Path, help="also write every outcome to this file")
    parser.add_argument("--rerun", type=Path, help="run only the survivors recorded in this --json file")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    opts = parser.parse_args(argv)

    mutants = sorted((m for f in opts.files for m in find_mutants(f)), key=lambda m: (m.file, m.line, m.site))
    if opts.rerun:
        wanted = [
            (o["file"], o["what"], o["code"])
            for o in json.loads(opts.rerun.read_text(encoding="utf-8"))
            if o["status"] == "survived"
        ]
        # Matched by file, mutation and line text, so lines that moved since are still found.
        mutants = [m for m in mutants if (m.file, m.what, m.code) in wanted]
    if opts.sample and opts.sample < len(mutants):
        mutants = sorted(random.Random(opts.seed).sample(mutants, opts.sample), key=lambda m: (m.file, m.line, m.site))
    if opts.list:
        for m in mutants:
            print(f"{m.file}:{m.line} {m.what}")
        print(f"{len(mutants)} mutants")
        return 0

    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        copies = [Path(tmp) / f"copy{i}" for i in range(max(1, opts.jobs))]
        for c in copies:
            _copy_repo(c)
        code, detail = _pytest(copies[0], _test_args(opts.files[0], opts.tests), opts.timeout)
        if code != 0:
            print(f"the unmutated tests do not pass ({detail}); nothing to measure", file=sys.stderr)
            return 2
        free = list(copies)
        outcomes: list[Outcome] = []

        def work(m: Mutant) -> Outcome:
            copy = free.pop()
            try:
                return run_mutant(m, copy, opts.tests, opts.timeout)
            finally:
                free.append(copy)

        # One copy per job; a mutant only ever edits its own copy. Files of different mutants may coincide,
        # which is why each job owns a whole copy rather than a file.
        with concurrent.futures.ThreadPoolExecutor(len(copies)) as pool:
            for n, outcome in enumerate(pool.map(work, mutants), 1):
                outcomes.append(outcome)
                m = outcome.mutant
                print(
                    f"[{n}/{len(mutants)}] {outcome.status.upper():8} {m.file}:{m.line} {m.what}"
                    f"  ({outcome.seconds:.1f}s) {outcome.detail}",
                    flush=True,
                )
                if opts.json:  # written as it goes, so an interrupted run keeps what it measured
                    _write_json(opts.json, outcomes)

    killed = sum(o.status != "survived" for o in outcomes)
    survivors = [o for o in outcomes if o.status == "survived"]
    print(
        f"\n{len(outcomes)} mutants: {killed} killed ({sum(o.status == 'timeout' for o in outcomes)} by timeout), "
        f"{len(survivors)} survived; score {100 * killed / max(1, len(outcomes)):.1f}%"
    )
    for o in survivors:
        print(f"  survivor: {o.mutant.file}:{o.mutant.line} {o.mutant.what}")
    return 0


def _write_json(path: Path, outcomes: list[Outcome]) -> None:
    path.write_text(
        json.dumps(
            [
                {**asdict(o.mutant), "status": o.status, "seconds": round(o.seconds, 2), "detail": o.detail}
                for o in outcomes
            ],
            indent=1,
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    sys.exit(main())
