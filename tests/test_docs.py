"""Every fenced code block of README.md and docs/ runs as the documentation convention says (DOC-1).

One test per Markdown file, since the python blocks of a file share one namespace; a failure names the
block's ``file:line``. The convention and the runner are in ``tests/doctest_md.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctest_md import ROOT, DocTestError, blocks, commands, run_file

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# A file with a fence is collected even if its fences are malformed: the test then fails naming the line.
WITH_BLOCKS = [p for p in DOCS if "```" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", WITH_BLOCKS, ids=[str(p.relative_to(ROOT)) for p in WITH_BLOCKS])
def test_every_code_block_of_the_file_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DOC-1: python blocks run in order, shell commands exit as documented, toml/json parse."""
    monkeypatch.chdir(tmp_path)
    skipped = run_file(path, tmp_path)
    for reason in skipped:
        print(f"skipped block {reason}")


def test_the_collector_sees_the_documentation() -> None:
    """DOC-1: the README and the tutorial are collected, with python and shell blocks, and the README's
    five-line crash test is a python block the collector executes (not silently dropped)."""
    assert ROOT / "README.md" in WITH_BLOCKS and ROOT / "docs" / "plugin" / "tutorial.md" in WITH_BLOCKS
    langs = {b.lang for p in WITH_BLOCKS for b in blocks(p)}
    assert {"python", "sh", "text", "json"} <= langs
    readme = blocks(ROOT / "README.md")
    assert any("CrashAt(" in b.body for b in readme)
    assert any(line.startswith("pytest ") for b in readme for line, _ in commands(b))


# -- the collector itself: a doc that is wrong must fail, naming file:line ---------------------------------------


def _doc(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    return path


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> list[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    monkeypatch.chdir(work)
    return run_file(_doc(tmp_path, text), work)


def test_python_blocks_share_a_namespace_and_a_failure_names_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DOC-1: a later block sees an earlier block's names; a failing assert names the block's fence line."""
    text = "# t\n\n```python\nx = 2\n```\n\nthen\n\n```python\nassert x == 3, 'x is not 3'\n```\n"
    with pytest.raises(DocTestError, match=r"doc\.md:9: the python block raised AssertionError: x is not 3"):
        _run(tmp_path, monkeypatch, text)


def test_file_blocks_are_written_and_shell_commands_must_exit_as_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DOC-1: ``file=`` writes a module a later command uses; a wrong exit status fails with the line."""
    test = "def test_one():\n    assert 1 == 2\n"
    ok = (
        f"<!-- doctest: file=test_one.py -->\n```python\n{test}```\n\n<!-- doctest: exit=1 -->\n```sh\n"
        "$ pytest -q -p no:cacheprovider test_one.py\n```\n"
    )
    assert _run(tmp_path, monkeypatch, ok) == []
    wrong = ok.replace("<!-- doctest: exit=1 -->\n", "")
    with pytest.raises(
        DocTestError,
        match=r"doc\.md:7: `pytest -q -p no:cacheprovider test_one.py` exited 1, "
        r"the doc expects 0",
    ):
        _run(tmp_path, monkeypatch, wrong)


def test_install_lines_are_not_run_and_env_assignments_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DOC-1: ``pip install``/``scripts/`` lines are left alone; ``VAR=x pytest …`` runs with VAR set."""
    body = (
        "python -m pip install nothing-at-all\nscripts/missing.sh\n"
        "DOC_FLAG=on python -m pytest -q -p no:cacheprovider test_env.py\n"
    )
    block = blocks(_doc(tmp_path, f"```sh\n{body}```\n"))[0]
    assert [line for line, _ in commands(block)] == ["DOC_FLAG=on python -m pytest -q -p no:cacheprovider test_env.py"]
    text = (
        "<!-- doctest: file=test_env.py -->\n```python\nimport os\n\ndef test_env():\n"
        "    assert os.environ['DOC_FLAG'] == 'on'\n```\n\n```sh\n" + body + "```\n"
    )
    assert _run(tmp_path, monkeypatch, text) == []


def test_json_toml_and_unnamed_fences(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DOC-1: json/toml blocks must parse; a fence without a language is refused (name it ``text``)."""
    with pytest.raises(DocTestError, match=r"doc\.md:1: the json block does not parse"):
        _run(tmp_path, monkeypatch, '```json\n{"a": }\n```\n')
    with pytest.raises(DocTestError, match=r"doc\.md:2: fence language '\(none\)'"):
        blocks(_doc(tmp_path, "\n```\noutput\n```\n"))
    with pytest.raises(DocTestError, match=r"doc\.md:1: the toml block does not parse"):
        run_file(_doc(tmp_path, "```toml\n[a\n```\n"), tmp_path)


def test_skip_needs_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DOC-1: a skipped block is reported with its reason; a skip without one is refused."""
    assert _run(tmp_path, monkeypatch, '<!-- doctest: skip reason="needs a GPU" -->\n```python\n1/0\n```\n') == [
        f"{tmp_path / 'doc.md'}:2: needs a GPU"
    ]
    with pytest.raises(DocTestError, match="needs a reason"):
        blocks(_doc(tmp_path, "<!-- doctest: skip -->\n```python\n1/0\n```\n"))
