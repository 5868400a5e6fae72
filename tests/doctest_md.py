"""Run the fenced code blocks of a Markdown file, as the documentation convention says (DOC-1).

* ``python`` blocks of one file run in order in one shared namespace, in a fresh temporary directory as
  the current directory, with the repository root and that directory importable.
* ``<!-- doctest: file=NAME -->`` on the line just before a fence writes the block to ``NAME`` in that
  directory instead of running it.
* ``sh``/``console`` blocks: each line starting with ``durable ``, ``pytest `` or ``python -m pytest``
  (after a ``$ `` prompt and ``VAR=value`` assignments) runs in that directory and must exit 0, or N after
  ``<!-- doctest: exit=N -->``. Other lines (installs, scripts) are not run.
* ``toml``/``json`` blocks are parsed; ``text`` (output), ``markdown`` (examples of Markdown) and ``mermaid``
  (diagrams, checked by their own tests) are not run.
* ``<!-- doctest: skip reason="..." -->`` skips one block; the reason is required.

Every failure names ``file:line`` of the block's opening fence. Run as a script,
``python doctest_md.py --without-repository FILE...`` runs the files' blocks with nothing of the repository
importable, each in a fresh temporary directory: how the wheel test runs the docs in a venv with only the
installed wheel (DOC-7).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = frozenset({"python", "py"})
SHELL = frozenset({"sh", "console", "bash", "shell"})
PARSED = frozenset({"toml", "json"})
OUTPUT = frozenset({"text", "markdown", "mermaid"})
RUN_PREFIXES = ("durable ", "pytest ", "python -m pytest")
COMMAND_TIMEOUT = 300

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*doctest:(?P<args>.*?)-->\s*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
# The commands the convention names run on this interpreter, whatever PATH holds, with the repository root
# importable even when the documented line sets PYTHONPATH itself.
_SHELL_PRELUDE = """\
_root() { if [ -n "$DOCTEST_ROOT" ]; then PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$DOCTEST_ROOT" "$@"; else "$@"; fi; }
durable() { _root "$DOCTEST_PYTHON" -c 'import sys; from pytest_durable.cli import main; sys.exit(main())' "$@"; }
pytest() { _root "$DOCTEST_PYTHON" -m pytest "$@"; }
python() { _root "$DOCTEST_PYTHON" "$@"; }
"""


class DocTestError(AssertionError):
    """A block failed, or the Markdown breaks the convention; the message starts with ``file:line``."""


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    body: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        try:
            shown = self.path.relative_to(ROOT)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}"


def _options(line: str, where: str) -> dict[str, str]:
    m = _DIRECTIVE.match(line)
    if not m:
        return {}
    options = {}
    for word in shlex.split(m["args"]):
        if word == "skip":
            options["skip"] = ""
            continue
        key, sep, value = word.partition("=")
        if not sep or key not in ("file", "exit", "reason"):
            raise DocTestError(f"{where}: unknown doctest directive {word!r} (file=NAME, exit=N, skip reason=...)")
        options[key] = value
    if "skip" in options and not options.get("reason"):
        raise DocTestError(f'{where}: a skipped block needs a reason: <!-- doctest: skip reason="..." -->')
    if "exit" in options and not options["exit"].lstrip("-").isdigit():
        raise DocTestError(f"{where}: exit={options['exit']!r} is not a number")
    return options


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` with their directives, in order."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent, fence = i, len(m["indent"]), m["fence"]
        where = f"{path}:{start + 1}"
        lang = m["info"].strip().split(" ")[0].lower() if m["info"].strip() else ""
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(rf"^ {{0,{indent}}}{re.escape(fence)}\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        if i == len(lines):
            raise DocTestError(f"{where}: the fence opened here is never closed")
        i += 1
        options = _options(lines[start - 1], where) if start else {}
        block = Block(path, start + 1, lang, "\n".join(body) + "\n", options)
        known = PYTHON | SHELL | PARSED | OUTPUT
        if lang not in known and "file" not in options and "skip" not in options:
            raise DocTestError(
                f"{block.where}: fence language {lang or '(none)'!r} is not one of "
                f"{sorted(known)}; name it (```text for output)"
            )
        found.append(block)
    return found


def commands(block: Block) -> Iterator[tuple[str, int]]:
    """The lines of a shell block that the convention runs, with their expected exit status."""
    expected = int(block.options.get("exit", "0"))
    text = block.body.replace("\\\n", " ")
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:].strip()
        words = line.split(" ")
        while words and _ASSIGNMENT.match(words[0]):
            words.pop(0)
        if " ".join(words).startswith(RUN_PREFIXES):
            yield line, expected


def run_bash(command: str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``command`` run by bash in ``cwd`` with no input, its output captured as text."""
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _run_shell(block: Block, cwd: Path, root: Path | None) -> None:
    env = {**os.environ, "DOCTEST_PYTHON": sys.executable, "DOCTEST_ROOT": str(root or ""), "NO_COLOR": "1"}
    for line, expected in commands(block):
        try:
            done = run_bash(_SHELL_PRELUDE + line, cwd, env, COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            raise DocTestError(f"{block.where}: `{line}` did not finish in {COMMAND_TIMEOUT} s") from e
        if done.returncode != expected:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
            raise DocTestError(
                f"{block.where}: `{line}` exited {done.returncode}, the doc expects {expected}"
                f" (<!-- doctest: exit=N --> before the fence sets it):\n{tail}"
            )


def _run_python(block: Block, namespace: dict[str, object]) -> None:
    # Blank lines in front make tracebacks show the Markdown file's own line numbers.
    try:
        exec(compile("\n" * block.line + block.body, str(block.path), "exec"), namespace)
    except Exception as e:
        raise DocTestError(f"{block.where}: the python block raised {type(e).__name__}: {e}") from e


def _parse(block: Block) -> None:
    try:
        if block.lang == "toml":
            tomllib.loads(block.body)
        else:
            json.loads(block.body)
    except ValueError as e:
        raise DocTestError(f"{block.where}: the {block.lang} block does not parse: {e}") from e


def _write(block: Block, cwd: Path) -> None:
    name = Path(block.options["file"])
    if name.is_absolute() or ".." in name.parts or not name.parts:
        raise DocTestError(f"{block.where}: file={name} must be a relative path inside the temporary directory")
    (cwd / name).parent.mkdir(parents=True, exist_ok=True)
    (cwd / name).write_text(block.body, encoding="utf-8")


def run_file(path: Path, cwd: Path, root: Path | None = ROOT) -> list[str]:
    """Run every block of ``path`` in ``cwd`` (the current directory must already be ``cwd``); returns the
    skip reasons. Modules imported from ``cwd`` are forgotten afterwards so the next file starts clean.
    ``root`` (the repository) is importable by the blocks and their commands; None: nothing of it is."""
    namespace: dict[str, object] = {"__name__": "__doctest__"}
    skipped = []
    before = set(sys.modules)
    added = [str(cwd)] + ([str(root)] if root is not None else [])
    sys.path[:0] = added
    try:
        for block in blocks(path):
            if "skip" in block.options:
                skipped.append(f"{block.where}: {block.options['reason']}")
            elif "file" in block.options:
                _write(block, cwd)
            elif block.lang in PYTHON:
                _run_python(block, namespace)
            elif block.lang in SHELL:
                _run_shell(block, cwd, root)
            elif block.lang in PARSED:
                _parse(block)
    finally:
        for entry in added:
            sys.path.remove(entry)
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if origin.startswith(str(cwd)):
                del sys.modules[name]
    return skipped


def main(argv: list[str]) -> int:
    """``--without-repository FILE...``: run each file's blocks in a fresh temporary directory with nothing
    of the repository importable; print one line per file; 1 if any failed."""
    import tempfile

    if not argv or argv[0] != "--without-repository" or len(argv) < 2:
        print("usage: python doctest_md.py --without-repository FILE...", file=sys.stderr)
        return 2
    failed = 0
    for name in argv[1:]:
        path = Path(name).resolve()
        with tempfile.TemporaryDirectory(prefix="doctest-") as tmp:
            here = os.getcwd()
            os.chdir(tmp)
            try:
                run_file(path, Path(tmp), root=None)
                print(f"ok {name}")
            except DocTestError as e:
                failed += 1
                print(f"FAILED {name}: {e}")
            finally:
                os.chdir(here)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
