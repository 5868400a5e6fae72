"""Every documented example runs from the built wheel, installed with its dependencies into a fresh virtual
environment outside the repository, with nothing of the repository importable (DOC-7): the README, the
start page's quick start, the tutorial (whose agent and tests ship as ``pytest_durable.examples``), the
plugin reference, and every other page of docs/.

Slow (a pip install into a new venv), so it is deselected by default and ``.ci/run`` runs it beside the
fresh-clone test: ``python -m pytest -m fresh_install tests/test_wheel_docs.py``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doctest_md import ROOT
from tests.wheel import build_wheel

pytestmark = pytest.mark.fresh_install

#: The pages a wheel user starts from, first; then every other page.
FIRST = [ROOT / "README.md", ROOT / "docs" / "index.md", ROOT / "docs" / "plugin" / "tutorial.md"]
PAGES = FIRST + sorted(p for p in (ROOT / "docs").rglob("*.md") if p not in FIRST)
#: Pages whose examples need an optional extra, which the page itself tells the reader to install: they run
#: after the plain install's pages, once that extra is installed from the same wheel.
EXTRAS = {ROOT / "docs" / "plugin" / "coverage.md": "coverage"}


def test_every_documented_example_runs_from_the_installed_wheel(tmp_path: Path) -> None:
    """DOC-7: wheel -> fresh venv (pip resolves its dependencies as for a user) -> each page's blocks run
    by the documentation runner in a directory outside the repository, with only the venv importable."""
    assert not tmp_path.is_relative_to(ROOT)
    wheel = build_wheel(tmp_path / "wheels")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1")
    env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}
    work = tmp_path / "work"
    work.mkdir()

    def run(*args: str | Path, timeout: int = 600) -> str:
        done = subprocess.run(
            [str(python), "-I", *args], cwd=work, env=env, capture_output=True, text=True, timeout=timeout
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, (
            f"`python -I {' '.join(map(str, args))}` exited {done.returncode}:\n{output[-6000:]}"
        )
        return output

    run("-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel))
    where = run("-c", "import pytest_durable.examples, reference_runtime as r; print(r.__file__)").strip()
    assert Path(where).is_relative_to(venv), f"not imported from the wheel: {where}"
    # The repository's layout is not there: no top-level `examples` or `tests` package to lean on.
    run("-c", "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in ('examples', 'tests')))")

    # The documentation runner (stdlib only) as a script beside the work directory, not in the repository.
    runner = shutil.copy(ROOT / "tests" / "doctest_md.py", tmp_path / "doctest_md.py")
    plain = [page for page in PAGES if page not in EXTRAS]
    out = run(runner, "--without-repository", *map(str, plain), timeout=1800)
    ok = [line for line in out.splitlines() if line.startswith("ok ")]
    assert len(ok) == len(plain), out[-6000:]
    for page, extra in EXTRAS.items():
        assert f"pytest-durable[{extra}]" in page.read_text(encoding="utf-8"), f"{page} does not name its extra"
        run("-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{wheel}[{extra}]")
        out = run(runner, "--without-repository", str(page), timeout=1800)
        assert f"ok {page}" in out, out[-6000:]

    # The examples that are commands rather than blocks: the README's agent and the ReAct agent.
    assert "refunds booked [('order-7', 30)]" in run("-m", "pytest_durable.examples.refund")
    assert "0 with duplicated or lost effects" in run("-m", "pytest_durable.examples.react_agent", str(work / "react"))
