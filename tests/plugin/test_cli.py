"""The `durable` command as a user meets it: bad input is one line and status 2 before anything runs
(CLI-3, CLI-4), --version and verbosity (CLI-5), and nothing left behind (STORE-11)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_durable.cli import main as durable
from tests.stores.redis_server import free_port

from .projects import REFUND_AGENT

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]
BAD_URLS = [
    "postgres://x",
    "redis://[::1",
    "redis://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/0",
    "redis://localhost/99999999999999999999",
    "sqlite:a\x00b",
    "kafka://h:1/",
    "ftp://x",
    "",
]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = durable(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(code: int, out: str, err: str) -> str:
    assert code == 2, (out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-5: `durable --version` prints the distribution's version."""
    code, out, _ = _run(capsys, "--version")
    assert code == 0 and re.fullmatch(r"durable \(pytest-durable\) \S+\n", out)


@pytest.mark.parametrize("url", BAD_URLS)
def test_bad_store_url_is_one_line_before_any_check(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-3, STORE-10: a malformed URL is one StoreUrlError line quoting it, once, and status 2."""
    line = _one_line_error(*_run(capsys, "certify", "--store", url))
    assert line.startswith("error: --store: store URL")
    assert repr(url) in line or "is empty" in line


def test_sweep_store_url_is_checked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-3: `durable sweep --store` goes through the same check."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": 1}\n')
    line = _one_line_error(
        *_run(
            capsys,
            "sweep",
            "tests.plugin.verdict_agents:NonIdempotent",
            "--inputs",
            str(inputs),
            "--store",
            "postgres://x",
        )
    )
    assert "unknown scheme" in line


def test_missing_client_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI-4: a redis:// URL without the redis package names the pip install line."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "redis" else real(name, *a))
    line = _one_line_error(*_run(capsys, "certify", "--store", "redis://127.0.0.1:6379/0"))
    assert "pip install 'pytest-durable[redis]'" in line


def test_unreachable_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-4: nothing listening on the port: one line naming the URL, before any check runs."""
    pytest.importorskip("redis")
    url = f"redis://127.0.0.1:{free_port()}/0"
    line = _one_line_error(*_run(capsys, "certify", "--store", url))
    assert f"cannot reach store {url}" in line


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["nope"], "unknown command 'nope'"),
        (["certify", "-x"], "unrecognized arguments: -x"),
        (["certify", "--backend", "nomodule_here:factory"], "no module named 'nomodule_here'"),
        (["certify", "--backend", "json"], "expected MODULE:NAME"),
        (["certify", "--backend", "json:nothing"], "json has no attribute 'nothing'"),
        (["certify", "--backend", "json:__doc__"], "not callable"),
        (["certify", "--backend", "json:dumps"], "calling it raised TypeError"),
        (["certify", "--backend", "json:JSONDecoder"], "returned JSONDecoder; expected a conformance.StoreFactory"),
        (["sweep", "json:loads", "--inputs", "x"], "not an Agent subclass"),
        (["sweep", "tests.plugin.verdict_agents:NonIdempotent", "--inputs", "/nonexistent/in.jsonl"], "cannot read it"),
        (["sweep", "tests.plugin.verdict_agents:NonIdempotent"], "the following arguments are required: --inputs"),
        (
            ["sweep", "tests.plugin.verdict_agents:NonIdempotent", "--inputs", "{inputs}", "--effect", "json:nothing"],
            "json has no attribute 'nothing'",
        ),
        (["inspect"], "durable inspect: the following arguments are required: URL (see durable inspect --help)"),
        (["inspect", "sqlite:x.db", "--bogus"], "durable inspect: unrecognized arguments: --bogus"),
        (["inspect", "sqlite:x.db", "--timeout", "soon"], "argument --timeout: invalid float value: 'soon'"),
        (["inspect", "sqlite:{dir}"], "is a directory; sqlite:PATH names one database file"),
        (
            ["sweep", "tests.plugin.verdict_agents:NonIdempotent", "--inputs", "{inputs}", "--store", "sqlite:{dir}"],
            "is a directory",
        ),
    ],
)
def test_bad_command_line_is_one_line(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI-3, CLI-4, CLI-6: each bad input names itself and the fix on one line, status 2, for every command
    (usage errors of `durable inspect` too); a directory where a SQLite file belongs says so."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": 1}\n')
    argv = [a.replace("{inputs}", str(inputs)).replace("{dir}", str(tmp_path)) for a in argv]
    line = _one_line_error(*_run(capsys, *argv))
    assert expected in line


def test_bad_inputs_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-3: a malformed inputs file names the file and the line."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": 1}\n{"key": "k"\n')
    line = _one_line_error(*_run(capsys, "sweep", "tests.plugin.verdict_agents:NonIdempotent", "--inputs", str(inputs)))
    assert f"{inputs}:2: not JSON" in line


def _durable_subprocess(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    full_env.pop("PYTEST_XDIST_WORKER", None)
    # -P: like the `durable` console script, the current directory is not put on sys.path by Python.
    return subprocess.run(
        [sys.executable, "-P", "-m", "pytest_durable.cli", *argv],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_backend_next_to_the_shell_is_importable(tmp_path: Path) -> None:
    """CLI-3: `durable certify --backend mypkg:factory` run beside mypkg imports it."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text(
        "from conformance import factory_from_url\n\ndef factory():\n    return factory_from_url('memory:')\n"
    )
    out = _durable_subprocess(tmp_path, "certify", "--backend", "mypkg:factory", "--seed", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "overall level: FULL" in out.stdout


def test_verbose_passes_through_and_the_table_is_clean(tmp_path: Path) -> None:
    """CLI-5: -v reaches pytest (one line per check); under -n 2 nothing warns above the level table; the
    levels are coloured when colour is forced and plain under NO_COLOR."""
    verbose = _durable_subprocess(tmp_path, "certify", "--store", "memory:", "-v", "--seed", "1")
    assert verbose.returncode == 0 and "PASSED" in verbose.stdout
    spread = _durable_subprocess(tmp_path, "certify", "--store", "memory:", "-n", "2", "--seed", "1")
    assert spread.returncode == 0, spread.stderr
    assert "warning" not in spread.stdout.lower() and "warning" not in spread.stderr.lower()
    coloured = _durable_subprocess(tmp_path, "certify", "--store", "memory:", "--seed", "1", FORCE_COLOR="1")
    assert "\x1b[32mFULL" in coloured.stdout
    plain = _durable_subprocess(tmp_path, "certify", "--store", "memory:", "--seed", "1", FORCE_COLOR="1", NO_COLOR="1")
    assert "\x1b[" not in plain.stdout and "overall level: FULL" in plain.stdout


# -- STORE-11: nothing left behind ----------------------------------------------------------------------------


@pytest.mark.parametrize("store", [[], ["--store", "sqlite:"]], ids=["default", "sqlite:"])
def test_certify_leaves_no_temporary_directory(
    store: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STORE-11: the temporary directory of `durable certify` (and the SQLite file in it) is removed."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    from pytest_durable.cli import main as durable

    assert durable(["certify", *store, "--seed", "3"]) == 0
    assert list(scratch.iterdir()) == []


def test_certify_sqlite_file_is_one_file_and_emptied(tmp_path: Path) -> None:
    """STORE-10, STORE-11: `--store sqlite:FILE` keeps every store in that one file (WAL/SHM aside) and
    drops their tables at the end."""
    import sqlite3

    from pytest_durable.cli import main as durable

    db = tmp_path / "certify.db"
    assert durable(["certify", "--store", f"sqlite:{db}", "--seed", "4"]) == 0
    assert {p.name for p in tmp_path.iterdir()} <= {"certify.db", "certify.db-wal", "certify.db-shm"}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == []


def _keys(url: str) -> set[bytes]:
    import redis

    client: Any = redis.Redis.from_url(url)
    try:
        return set(client.keys("*"))
    finally:
        client.close()


def test_certify_deletes_its_redis_keys(real_redis: str) -> None:
    """STORE-11: every key a certification wrote to Redis is deleted when it ends."""
    from pytest_durable.cli import main as durable

    before = _keys(real_redis)
    assert durable(["certify", "--store", real_redis, "--seed", "5"]) == 0
    assert _keys(real_redis) == before


PLUGIN_TEST = (
    REFUND_AGENT
    + """
def test_sweep(durable):
    durable.sweep(Refund, [("k", 1), ("j", 2)])
"""
)


def test_the_plugin_deletes_its_redis_keys(real_redis: str, pytester: pytest.Pytester) -> None:
    """STORE-11: the stores a test made on Redis are deleted at the end of the test."""
    pytester.makepyfile(test_user=PLUGIN_TEST)
    before = _keys(real_redis)
    result = pytester.runpytest_subprocess("--durable-store", real_redis, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert _keys(real_redis) == before


def test_the_plugin_sqlite_file_is_one_file(tmp_path: Path, pytester: pytest.Pytester) -> None:
    """STORE-10, STORE-11: --durable-store sqlite:FILE keeps every store in that file, emptied afterwards."""
    import sqlite3

    pytester.makepyfile(test_user=PLUGIN_TEST)
    db = tmp_path / "plugin.db"
    result = pytester.runpytest_subprocess("--durable-store", f"sqlite:{db}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert {p.name for p in tmp_path.iterdir()} <= {"plugin.db", "plugin.db-wal", "plugin.db-shm"}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://x", "unknown scheme"),
        ("redis://[::1", "Invalid IPv6 URL"),
        ("sqlite:{dir}", "is a directory; sqlite:PATH names one database file"),
        ("redis://127.0.0.1:{port}/0", "cannot reach store"),
    ],
)
def test_the_plugin_refuses_a_bad_store_once(url: str, expected: str, pytester: pytest.Pytester) -> None:
    """CLI-4: a bad --durable-store is one usage error before any test runs, not a failure per test."""
    pytest.importorskip("redis")
    pytester.makepyfile(test_user=PLUGIN_TEST)
    url = url.format(dir=pytester.path, port=free_port())
    result = pytester.runpytest_subprocess("--durable-store", url, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and expected in errors[0]
    result.stdout.no_fnmatch_line("*failed*")


def test_an_agent_that_raises_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-3: an agent failing its crash-free run is reported on one line (status 1), not a traceback."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": null}\n')  # None * 2 raises
    code, _, err = _run(capsys, "sweep", "tests.plugin.verdict_agents:OutsideEffect", "--inputs", str(inputs))
    assert code == 1 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "the agent raised ActionFailedError" in err


def test_a_database_the_server_lacks_is_one_line(real_redis: str, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-4: a well-formed URL naming a database the server does not have fails the probe once."""
    url = real_redis.rsplit("/", 1)[0] + "/999999"
    line = _one_line_error(*_run(capsys, "certify", "--store", url))
    assert f"cannot reach Redis store {url}" in line and "DB index" in line


def test_a_sqlite_path_in_a_missing_directory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-4: a mistyped sqlite path is refused before anything runs; no directory or file is made."""
    missing = tmp_path / "no" / "such" / "dir" / "x.db"
    line = _one_line_error(*_run(capsys, "certify", "--store", f"sqlite:{missing}"))
    assert "does not exist" in line and str(missing.parent) in line
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", ["certify", "sweep"])
def test_a_sqlite_file_that_is_not_a_database_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """CLI-4: `sqlite:FILE` naming an existing file that is not a SQLite database (here a Python module) is
    refused before anything runs, as one line naming the URL; the file is left byte for byte as it was."""
    victim = tmp_path / "notify_agent.py"
    victim.write_text("def notify(text):\n    return text\n")
    before = victim.read_bytes()
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": 1}\n')
    argv = (
        ["sweep", "tests.plugin.verdict_agents:NonIdempotent", "--inputs", str(inputs)]
        if command == "sweep"
        else ["certify"]
    )
    line = _one_line_error(*_run(capsys, *argv, "--store", f"sqlite:{victim}"))
    assert repr(f"sqlite:{victim}") in line and "is not a SQLite database" in line
    assert victim.read_bytes() == before


def test_an_empty_file_or_an_existing_database_passes_the_sqlite_check(tmp_path: Path) -> None:
    """CLI-4: an empty file (SQLite makes it a database) and a real database are accepted; a directory is not."""
    import sqlite3

    from reference_runtime.errors import StoreError
    from reference_runtime.stores import check_store

    empty = tmp_path / "empty.db"
    empty.touch()
    real = tmp_path / "real.db"
    sqlite3.connect(real).execute("CREATE TABLE t (x)").connection.close()
    for ok in (empty, real, tmp_path / "new.db"):
        assert check_store(f"sqlite:{ok}").path == str(ok)
    with pytest.raises(StoreError, match="is a directory"):
        check_store(f"sqlite:{tmp_path}")
    short = tmp_path / "short.db"
    short.write_bytes(b"SQLite")  # a prefix of the header is not a database either
    with pytest.raises(StoreError, match="is not a SQLite database"):
        check_store(f"sqlite:{short}")


def test_the_plugin_refuses_a_sqlite_file_that_is_not_a_database(pytester: pytest.Pytester) -> None:
    """CLI-4: `pytest --durable-store sqlite:FILE` on a non-database file is one usage error before any test
    runs, and the file is not modified."""
    pytester.makepyfile(notify_agent="def notify(text):\n    return text\n", test_x="def test_x(durable):\n    pass\n")
    before = (pytester.path / "notify_agent.py").read_bytes()
    result = pytester.runpytest_subprocess("--durable-store", "sqlite:notify_agent.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --durable-store *'sqlite:notify_agent.py'*is not a SQLite database*"])
    assert "Traceback" not in result.stderr.str() and "test_x" not in result.stdout.str()
    assert (pytester.path / "notify_agent.py").read_bytes() == before


def test_output_piped_to_a_reader_that_stops_early_is_no_traceback(tmp_path: Path) -> None:
    """CLI-3: output to a pipe whose reader has gone (`durable --help | head -1`) ends quietly with status
    0, without a BrokenPipeError traceback."""
    script = (
        "import os, sys\nr, w = os.pipe()\nos.close(r)\nos.dup2(w, 1)\n"
        "from pytest_durable.cli import main\nsys.exit(main(['--help']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "BrokenPipe" not in done.stderr, done.stderr


def test_sweep_keeps_runtime_log_records_out_of_the_terminal(tmp_path: Path) -> None:
    """CLI-1, DE-7: the tutorial's buggy agent makes the runtime log a non-deterministic call on every
    recovery; `durable sweep` reports what came of it per fault point, and prints no raw log record."""
    inputs = tmp_path / "refunds.jsonl"
    inputs.write_text(json.dumps({"key": "alice", "input": {"order": "A-1", "amount": 30}}) + "\n")
    done = _durable_subprocess(
        tmp_path, "sweep", "pytest_durable.examples.buggy_refund.refund_buggy:RefundAgent", "--inputs", str(inputs)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("fault point "), done.stdout[:300]
    assert done.stdout.splitlines()[-1].endswith("UNSAFE")
    assert "Non-deterministic call detected" not in done.stdout + done.stderr, done.stderr
    assert done.stderr == ""


def test_sweep_matrix_counts_recorded_and_unrecorded_re_runs_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REC-3, DE-6, CLI-1: each count of the `durable sweep` matrix means one thing. The tutorial's fixed
    agent re-runs its unrecorded refund after a crash between effect and record (DE-6, allowed): that
    point is `ok` with 0 recorded re-runs (REC-3) and 1 unrecorded re-run, not one mixed count."""
    inputs = tmp_path / "refunds.jsonl"
    inputs.write_text(json.dumps({"key": "alice", "input": {"order": "A-1", "amount": 30}}) + "\n")
    code, out, _ = _run(
        capsys, "sweep", "pytest_durable.examples.buggy_refund.refund_fixed:RefundAgent", "--inputs", str(inputs)
    )
    assert code == 0, out
    header, *rows = out.splitlines()
    assert header.split("  outcome  ")[1].split("  ") == [
        "recorded re-run (REC-3)",
        "unrecorded re-run (DE-6)",
        "duplicate outputs (REC-4)",
    ], header
    after_effect = [r for r in rows if r.startswith("after-effect ") and "issue_refund" in r]
    assert [r.split()[-4:] for r in after_effect] == [["ok", "0", "1", "0"]], rows


def test_bare_durable_prints_its_usage_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-3: `durable` without a command is a usage error: the usage goes to stderr, with status 2, and
    stdout stays empty; `durable --help` asked for it, so it goes to stdout with status 0."""
    code, out, err = _run(capsys)
    assert (code, out) == (2, "") and err.startswith("usage: durable "), (out, err)
    code, out, err = _run(capsys, "--help")
    assert (code, err) == (0, "") and out.startswith("usage: durable ")


@pytest.mark.parametrize("command", ["certify", "sweep", "inspect"])
def test_command_help_is_plain_text(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-5: each command's `--help` is plain text, without the reStructuredText markup of docstrings."""
    with pytest.raises(SystemExit) as exited:
        durable([command, "--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0 and out.startswith(f"usage: durable {command}")
    assert not re.search(r"``|:class:|:func:", out), out


class _Terminal:
    """A stand-in for a terminal's standard error."""

    def __init__(self, tty: bool) -> None:
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        return None


@pytest.mark.parametrize("tty", [True, False])
def test_sweep_progress_only_on_a_terminal(
    tty: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """CLI-7: on a terminal `durable sweep` draws points done of all, crashes fired and time left on stderr,
    wiped before the matrix; output that is not a terminal gets no progress line, and the flags override."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": 1}\n')
    argv = ["sweep", "tests.plugin.verdict_agents:NonIdempotent", "--inputs", str(inputs)]
    for flag, drawn in ((None, tty), ("--progress", True), ("--no-progress", False)):
        err = _Terminal(tty)
        monkeypatch.setattr(sys, "stderr", err)
        durable(argv + ([flag] if flag else []))
        out = capsys.readouterr().out
        assert "fault points" in out
        if drawn:
            last = err.text.rstrip(" \r").split("\r")[-1]
            done = r"durable sweep: (\d+)/\1 fault points \(100%\), \1 crashes fired, ETA 00:00"
            assert re.fullmatch(done, last), last
            assert err.text.endswith("\r")  # wiped
        else:
            assert err.text == "", err.text


def test_the_progress_line_counts_and_estimates() -> None:
    """CLI-7: the line's text, its estimate of the time left, that it redraws at most every `every` s, and
    that drawing it starts no thread (tqdm's monitor is off)."""
    from pytest_durable.cli.progress import ProgressLine, wanted

    term = _Terminal(True)
    line = ProgressLine(term, every=3600)  # type: ignore[arg-type]
    assert line.text(0, 10, 0, 0.0) == "durable sweep: 0/10 fault points (0%), 0 crashes fired, ETA ?"
    assert line.text(5, 10, 4, 50.0) == "durable sweep: 5/10 fault points (50%), 4 crashes fired, ETA 00:50"
    assert line.text(1, 100, 1, 60.0).endswith("ETA 1:39:00")
    threads = threading.active_count()
    line(0, 10, 0)
    line(1, 10, 1)  # within `every` of the last draw: not drawn
    assert threading.active_count() == threads
    line(10, 10, 10)  # the last one always is
    assert term.text.count("\r") == 2
    line.close()
    assert term.text.endswith("\r") and term.text.count("\r") == 4
    assert wanted(term, None) and not wanted(_Terminal(False), None)  # type: ignore[arg-type]
    assert wanted(_Terminal(False), True) and not wanted(term, False)  # type: ignore[arg-type]


def _point_lines(out: str) -> list[str]:
    """The matrix's fault-point lines of a `durable sweep` output (with their violation lines)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("fault point"))
    summary = re.compile(r"\d+ fault points, ")
    return [line for line in lines[start + 1 :] if not line.startswith("note:") and not summary.match(line)]


def test_sweep_parts_together_are_the_whole_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-8, PLG-29: `--shard 1/2` and `--shard 2/2` crash, between them, every fault point of the whole sweep
    once, each line as the whole sweep prints it; each part says which it is."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": 1}\n{"key": "j", "input": 2}\n')
    argv = ["sweep", "tests.plugin.verdict_agents:NonIdempotent", "--inputs", str(inputs), "--no-progress"]
    whole_code = durable(argv)
    whole = capsys.readouterr().out
    parts, codes = [], []
    for k in (1, 2):
        codes.append(durable([*argv, "--shard", f"{k}/2"]))
        out = capsys.readouterr().out
        assert re.search(rf"^part {k} of 2: \d+ fault points \(--shard {k}/2\)$", out, re.MULTILINE), out
        parts.append(_point_lines(out))
    assert all(parts) and sorted(parts[0] + parts[1]) == sorted(_point_lines(whole))
    assert codes == [whole_code, whole_code]


@pytest.mark.parametrize("bad", ["0/2", "3/2", "1", "a/b", "1/0", "2/1", "-1/2", "1/2/3"])
def test_a_bad_shard_is_one_line(bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-8, CLI-3: a --shard that is not K/N with 1 <= K <= N is one line naming it and an example (exit 2)."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": 1}\n')
    code = durable(["sweep", "tests.plugin.verdict_agents:NonIdempotent", "--inputs", str(inputs), "--shard", bad])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"--shard {bad!r}: expected K/N with 1 <= K <= N, e.g. --shard 1/2" in err


def test_sweep_on_a_virtual_clock_never_sleeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """CLI-8: with --virtual-clock the long retry backoffs of an agent take no real time (the real clock's
    sleep raises here); without it the first backoff reaches the real clock."""
    from reference_runtime.clock import SystemClock

    def no_real_sleep(self: SystemClock, seconds: float) -> None:
        raise AssertionError(f"a real sleep of {seconds} s")

    monkeypatch.setattr(SystemClock, "sleep", no_real_sleep)
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": "a"}\n')
    argv = ["sweep", "tests.plugin.verdict_agents:RetriesAfterAnHour", "--inputs", str(inputs), "--no-progress"]
    assert durable([*argv, "--virtual-clock"]) == 0
    out = capsys.readouterr().out
    assert "fault point" in out and "FAIL" not in out, out
    assert durable(argv) == 1
    assert "a real sleep of" in capsys.readouterr().err
