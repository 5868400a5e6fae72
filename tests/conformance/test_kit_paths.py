"""KIT-6: the report and known-failures paths of `durable certify` and of the kit's plugin are checked before
anything runs — one line naming the option, the path and the fix — not after the whole run."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_durable.cli import main as durable

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

# A backend that leaves a trace when it is loaded: a path error must stop certify before that.
BACKEND = (
    "from pathlib import Path\n"
    "from conformance import factory_from_url\n\n\n"
    "def make():\n"
    "    Path('backend-loaded').write_text('yes')\n"
    "    return factory_from_url('memory:')\n"
)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "tracefactory.py").write_text(BACKEND)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--report", "missing/r.json", "--report missing/r.json: the directory {tmp}/missing does not exist; create"),
        ("--report", ".", "--report .: {tmp} is a directory; name a file"),
        (
            "--write-known-failures",
            "missing/kf.txt",
            "--write-known-failures missing/kf.txt: the directory {tmp}/missing does not exist; create",
        ),
        (
            "--known-failures",
            "nothere.txt",
            "--known-failures nothere.txt: cannot read the known-failures file {tmp}/nothere.txt: it does not "
            "exist; fix the path, or write one from a run with --write-known-failures FILE",
        ),
    ],
    ids=["report-missing-dir", "report-is-dir", "write-known-missing-dir", "known-missing"],
)
def test_certify_refuses_a_bad_path_in_one_line_before_running(
    workdir: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    """KIT-6: exit 2 and one stderr line naming the option, the path and the fix; the backend was not
    even loaded and no check ran."""
    code = durable(["certify", "--backend", "tracefactory:make", option, value, "-q"])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {message.format(tmp=workdir)}"), err
    assert not (workdir / "backend-loaded").exists(), "the backend was loaded before the path was checked"
    assert "passed" not in out and "durable conformance" not in out


def test_certify_names_the_bad_line_of_a_known_failures_file(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """KIT-6, CONF-5: a malformed known-failures file is one line with the option and the file's line."""
    (workdir / "kf.txt").write_text("TestA::test_x# glued\n")
    assert durable(["certify", "--known-failures", "kf.txt"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"error: --known-failures kf.txt: {workdir / 'kf.txt'}:1: put at least one space before the '#' that "
        "starts the reason: 'TestA::test_x# glued'"
    ]


@pytest.fixture
def traced(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_trace="def test_runs():\n    open('test-ran', 'w').close()\n")
    pytester.syspathinsert(str(ROOT))
    return pytester


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--durable-conformance-report",
            "missing/r.json",
            "--durable-conformance-report missing/r.json: the directory {tmp}/missing does not exist",
        ),
        ("--durable-conformance-report", ".", "--durable-conformance-report .: {tmp} is a directory; name a file"),
        (
            "--durable-write-known-failures",
            "missing/kf.txt",
            "--durable-write-known-failures missing/kf.txt: the directory {tmp}/missing does not exist",
        ),
        (
            "--durable-known-failures",
            "nothere.txt",
            "--durable-known-failures nothere.txt: cannot read the known-failures file {tmp}/nothere.txt: it "
            "does not exist; fix the path, or write one from a run with --durable-write-known-failures FILE",
        ),
    ],
    ids=["report-missing-dir", "report-is-dir", "write-known-missing-dir", "known-missing"],
)
def test_plugin_refuses_a_bad_path_at_configure_time(
    traced: pytest.Pytester, option: str, value: str, message: str
) -> None:
    """KIT-6: a usage error naming the option, the path and the fix, before any test runs."""
    result = traced.runpytest("-p", "conformance.plugin", option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert f"ERROR: {message.format(tmp=traced.path)}" in result.stderr.str()
    assert not (traced.path / "test-ran").exists()


def test_plugin_names_the_ini_value_of_a_missing_known_failures_file(traced: pytest.Pytester) -> None:
    """KIT-6: the ini value `durable_known_failures` is named as such when its file is missing."""
    traced.makeini("[pytest]\ndurable_known_failures = conf/known.txt\n")
    result = traced.runpytest("-p", "conformance.plugin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: durable_known_failures = conf/known.txt (*tox.ini): cannot read the known-failures file "
            f"{traced.path / 'conf' / 'known.txt'}: it does not exist*"
        ]
    )
    assert not (traced.path / "test-ran").exists()
