"""The how-to's example project works as written (docs/conformance/howto.md; CONF-1, CONF-3, CONF-5)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PLUGINS = ("-p", "conformance.plugin", "-p", "no:randomly", "-p", "no:benchmark")
HOWTO = Path(__file__).resolve().parents[2] / "docs" / "conformance" / "howto.md"


def blocks() -> dict[str, str]:
    """Fenced blocks whose first line is a comment naming a file, by that file name."""
    found = {}
    for body in re.findall(r"```(?:python|text)\n(.*?)```", HOWTO.read_text(encoding="utf-8"), re.S):
        first = body.splitlines()[0]
        m = re.fullmatch(r"# (\S+\.(?:py|txt))", first)
        if m:
            found[m[1]] = body
    return found


def test_the_howto_store_certifies_as_the_howto_says(pytester: pytest.Pytester) -> None:
    """The example store and test file give the summary the how-to shows; its known-failures example
    parses and runs the listed checks as strict xfail."""
    files = blocks()
    assert {"test_mystore_conformance.py", "mystore.py", "conformance-known-failures.txt"} <= set(files)
    for name, body in files.items():
        (pytester.path / name).write_text(body)
    result = pytester.runpytest(*PLUGINS, "test_mystore_conformance.py")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.re_match_lines([r"backend: mystore   capabilities: core, restart   suite: \S+   seed: \d+   "
                                  r"overall level: BASE",
                                  r"  concurrent_writers  NONE +0 +0 +0 +1",
                                  r"  core +FULL +9 +0 +0 +0",
                                  r"  restart +FULL +2 +0 +0 +0"])
    result = pytester.runpytest(*PLUGINS, "test_mystore_conformance.py",
                                "--durable-known-failures", "conformance-known-failures.txt")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, "both listed checks pass for this store: strict XPASS"
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]] known failure 'TestMyStore::test_rebuild_after_restart'*"])
