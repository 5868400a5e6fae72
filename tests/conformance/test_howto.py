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
    result.stdout.re_match_lines(
        [
            r"backend: mystore   capabilities: core, restart   suite: \S+   seed: \d+   "
            r"overall level: FULL",
            r"  concurrent_writers  NONE +0 +0 +0 +1",
            r"  core +FULL +23 +0 +0 +0",
            r"  mid_write_kill +NONE +0 +0 +0 +1",
            r"  restart +FULL +9 +0 +0 +0",
        ]
    )
    result = pytester.runpytest(
        *PLUGINS, "test_mystore_conformance.py", "--durable-known-failures", "conformance-known-failures.txt"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, "both listed checks pass for this store: strict XPASS"
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]] known failure 'TestMyStore::test_rebuild_after_restart'*"])


def test_the_howto_test_files_run_verbatim_under_strict_markers_and_warnings_as_errors(
    pytester: pytest.Pytester,
) -> None:
    """KIT-2: the how-to's test files, copied as they are, pass under ``--strict-markers -W error``, with nothing but
    their own ``pytest_plugins`` line (the kit's markers are registered, no deprecated fixture pattern)."""
    files = blocks()
    for name in ("test_mystore_conformance.py", "mystore.py", "test_myrunner_conformance.py"):
        (pytester.path / name).write_text(files[name])
    result = pytester.runpytest(
        "--strict-markers",
        "-W",
        "error",
        "-p",
        "no:randomly",
        "-p",
        "no:benchmark",
        "test_mystore_conformance.py",
        "test_myrunner_conformance.py",
        "-k",
        "not crash_at_every_fault_point and not memory_after_any_crash",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*backend: mystore*overall level: FULL*"])
    # Two slow runner checks are deselected above, so that backend's run is not a certification (KIT-7).
    result.stdout.fnmatch_lines(
        ["*backend: myruntime*overall level: INCOMPLETE (74 of 76 checks run; not a certification)"]
    )
