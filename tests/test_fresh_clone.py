"""The README's set-up commands pass on a fresh clone of the committed state, in a fresh virtual environment,
with nothing beside the clone (DOC-3).

Slow (a pip install into a new venv), so it is deselected by default and ``.ci/run`` runs it on its own:
``python -m pytest -m fresh_clone tests/test_fresh_clone.py``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doctest_md import ROOT, blocks, run_bash

pytestmark = pytest.mark.fresh_clone

#: What the README's test command runs here instead of the whole suite (which is what .ci/run itself runs):
#: the golden-vector tests, the examples, and the README's own code blocks.
SUBSET = [
    "tests/serde",
    "tests/runtime/test_state_keys.py",
    "tests/test_examples.py",
    "tests/test_docs.py::test_every_code_block_of_the_file_runs[README.md]",
]


#: What CI runs before the tests (.ci/run: one command a line) and the README names (one line, with &&).
GATE = "ruff check . && ruff format --check . && mypy"


def readme_setup_commands() -> tuple[str, str]:
    """The two shell blocks of the README's "Set up" section: install-and-certify, then the test command."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Set up\n")
    end = text.index("\n## ", start + 1)
    setup_lines = range(text[:start].count("\n") + 1, text[:end].count("\n") + 1)
    shell = [b.body.strip() for b in blocks(ROOT / "README.md") if b.lang == "sh" and b.line in setup_lines]
    assert len(shell) == 2, f"README.md '## Set up' should hold two sh blocks, found {shell}"
    return shell[0], shell[1]


def _run(command: str, cwd: Path, env: dict[str, str], timeout: int) -> str:
    done = run_bash(command, cwd, env, timeout)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"`{command}` exited {done.returncode} in a fresh clone:\n{output[-6000:]}"
    return output


def test_readme_setup_commands_pass_on_a_fresh_clone(tmp_path: Path) -> None:
    """DOC-3: clone HEAD into an empty directory, make a venv, run the README's first command, the gate
    tools CI runs (ruff, mypy: pinned in the dev extra), then the test command on the vector tests, the
    examples and the README's blocks."""
    if shutil.which("git") is None:
        pytest.fail("git is needed to clone the repository")
    install, test = readme_setup_commands()
    assert install == "python -m pip install -e '.[dev]' && durable certify", install
    pytest_part = test.split("&&")[-1].strip()
    assert pytest_part.startswith("python -m pytest"), test

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", "--detach", head.stdout.strip()], cwd=clone, check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clone"], "nothing may sit beside the clone"

    venv = tmp_path / "clone" / ".venv"  # inside the clone (git-ignored), so the clone stays alone
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1")

    certified = _run(install, clone, env, timeout=900)
    assert re.search(r"overall level: (FULL|BASE)", certified), certified[-3000:]
    where = _run("python -c 'import reference_runtime; print(reference_runtime.__file__)'", clone, env, 60)
    assert where.strip().startswith(str(clone)), f"the venv imports another checkout: {where}"
    # The gate tools come pinned with the dev extra: the README's first command is all they need.
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert GATE in (ROOT / "README.md").read_text(encoding="utf-8") and all(c in ci for c in GATE.split(" && "))
    _run(GATE, clone, env, timeout=900)

    tested = _run(f"{pytest_part} -p no:randomly {' '.join(repr(s) for s in SUBSET)}", clone, env, timeout=900)
    summary = re.search(r"(\d+) passed", tested)
    assert summary and int(summary[1]) >= 290, f"too few tests ran in the fresh clone:\n{tested[-3000:]}"
    assert not re.search(r"\d+ (failed|error)", tested), tested[-3000:]
