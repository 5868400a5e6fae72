"""``durable certify`` and its report: what the report states (CONF-3) and that it does not depend on
the number of xdist workers (CONF-6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance import CAPABILITIES, SUITE_VERSION, StoreFactory, factory_from_url
from conformance.report import LEVELS, REPORT_SCHEMA, levels
from pytest_durable.cli import main as durable

ROOT = Path(__file__).resolve().parents[2]


def test_report_states_backend_capabilities_suite_version_seed_and_levels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONF-3: the JSON report of `durable certify --store sqlite:FILE` names the backend, the declared
    capabilities, the suite version and seed, and gives a level per capability; the terminal summary and
    the Markdown twin say the same."""
    report = tmp_path / "r.json"
    assert (
        durable(["certify", "--store", f"sqlite:{tmp_path / 'stores.db'}", "--report", str(report), "--seed", "11"])
        == 0
    )
    doc = json.loads(report.read_text())
    assert doc["schema"] == REPORT_SCHEMA
    assert doc["backend"] == "sqlite:"
    assert doc["declared_capabilities"] == sorted(CAPABILITIES)
    assert doc["suite_version"] == SUITE_VERSION
    assert doc["seed"] == 11
    assert set(doc["capabilities"]) == set(CAPABILITIES)
    for cap, entry in doc["capabilities"].items():
        assert entry["level"] in LEVELS, cap
        assert {"passed", "failed", "skipped", "xfailed", "failed_clauses"} <= set(entry)
    assert doc["level"] == "FULL"
    assert doc["checks"] and all(c["clauses"] for c in doc["checks"]), "every check cites a clause (CONF-2)"
    out = capsys.readouterr().out
    assert (
        "backend: sqlite:   capabilities: concurrent_writers, core, mid_write_kill, restart   suite: 0.1.0   seed: 11"
    ) in out
    md = report.with_suffix(".md").read_text()
    assert "`sqlite:`: **FULL** (seed 11)" in md and "| core | FULL |" in md


def test_backend_may_name_a_runner_factory(tmp_path: Path) -> None:
    """CONF-3, CONF-4: `--backend MODULE:NAME` returning a RunnerFactory certifies a runner; its report
    has the runner capabilities."""
    report = tmp_path / "r.json"
    assert durable(["certify", "--backend", "conformance:RunnerFactory.reference", "--report", str(report)]) == 0
    doc = json.loads(report.read_text())
    assert doc["backend"] == "reference-runner" and doc["level"] == "FULL"
    assert set(doc["capabilities"]) == {"runner", "runner_async", "runner_batch"}


def _certify(tmp_path: Path, name: str, *extra: str, backend: bool = True) -> dict[str, Any]:
    report = tmp_path / f"{name}.json"
    # A --backend (not an in-process store URL) so that -n really starts workers (CONF-7).
    (tmp_path / "memfactory.py").write_text(
        "from conformance import factory_from_url\n\n\ndef make():\n    return factory_from_url('memory:')\n"
    )
    which = ["--backend", "memfactory:make"] if backend else ["--store", "memory:"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest_durable.cli", "certify", *which, "--seed", "3", "--report", str(report), *extra],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    doc: dict[str, Any] = json.loads(report.read_text())
    doc["_stdout"] = done.stdout
    return doc


def test_the_report_is_the_same_under_xdist(tmp_path: Path) -> None:
    """CONF-6: the same backend and seed give the same checks, outcomes and levels with and without
    `-n 2`."""
    one = _certify(tmp_path, "one")
    two = _certify(tmp_path, "two", "-n", "2")
    assert "bringing up nodes" in two.pop("_stdout") and "bringing up nodes" not in one.pop("_stdout")
    assert one == two


def test_an_in_process_store_runs_serially_under_n(tmp_path: Path) -> None:
    """CONF-7: `-n 2` on an in-process store (memory:, sqlite:) runs in this process, with a note, because
    its suite takes less time than starting workers (benchmark P6)."""
    doc = _certify(tmp_path, "serial", "-n", "2", backend=False)
    out = doc.pop("_stdout")
    assert "note: -n 2 ignored" in out and "bringing up nodes" not in out
    assert doc["level"] == "FULL"


@pytest.mark.parametrize("url", ["sqlite:", "memory:"])
def test_n_on_an_in_process_store_is_the_command_of_one_process(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONF-7, benchmark P6: `-n 2` on an in-process store runs pytest with exactly one process's arguments, so
    it is never slower but by the noise between two runs of one command; a `--backend` factory gets `-n`."""
    from conformance.certification import Backend, _pytest_args

    backend = Backend.of(url, tmp_path)
    one = _pytest_args(backend, None, 1, None, None, 0)
    assert _pytest_args(backend, 2, 1, None, None, 0) == one
    assert "note: -n 2 ignored" in capsys.readouterr().out
    forced = Backend.of(_sqlite_factory, tmp_path)
    try:
        args = _pytest_args(forced, 2, 1, None, None, 0)
    finally:
        assert isinstance(forced.factory, StoreFactory)
        forced.factory.cleanup()
    assert args[args.index("-n") + 1] == "2"


def _sqlite_factory() -> StoreFactory:
    return factory_from_url("sqlite:")


def _certify_slots_as_text(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`durable certify` of a broken store (call records sorted as text, STORE-5) in a fresh process."""
    (tmp_path / "mybackend.py").write_text(
        "from conformance import StoreFactory\n"
        "from tests.conformance.mutants.stores import SlotsSortedAsText\n\n"
        "def factory():\n"
        "    return StoreFactory(SlotsSortedAsText, name='slots-as-text')\n"
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_durable.cli",
            "certify",
            "--backend",
            "mybackend:factory",
            "--seed",
            "1",
            *extra,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{ROOT}:{tmp_path}"},
    )


def test_certify_failures_name_the_clause_and_show_the_values(tmp_path: Path) -> None:
    """KIT-1: under `durable certify` (a fresh process that imports the kit before pytest starts) a failed
    check names its clause and shows the values it compared: the kit's checks are assertion-rewritten."""
    run = _certify_slots_as_text(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    failure = run.stdout[run.stdout.index("test_many_deltas_keep_their_order") :]
    assert "STORE-5" in failure
    # A rewritten assert explains itself beyond the message: both compared lists appear.
    assert "AssertionError: STORE-5: slots out of place: expected" in failure
    assert "At index 2 diff: ('f', '10') != ('f', '2')" in failure, failure[:3000]


def test_certify_leaves_nothing_in_the_current_directory(tmp_path: Path) -> None:
    """STORE-11: `durable certify` run in an empty directory leaves it empty: Hypothesis keeps its files
    (constants cache, example database) under the run's temporary directory, not `.hypothesis/` here."""
    for extra in ([], ["-n", "2", "--backend", "conformance:RunnerFactory.reference"]):
        run = subprocess.run(
            [sys.executable, "-m", "pytest_durable.cli", "certify", "--seed", "2", *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == [], extra


def test_certify_failed_lines_name_the_check_not_the_deleted_directory(tmp_path: Path) -> None:
    """KIT-1: a FAILED line of `durable certify` names the check as `test_certify.py::TestCertify::NAME`,
    not a path into the temporary directory that is deleted when the run ends."""
    run = _certify_slots_as_text(tmp_path, "-v")
    assert run.returncode == 1, run.stdout + run.stderr
    # Only pytest's header says where the (deleted) generated suite lived.
    assert not [line for line in run.stdout.splitlines() if "durable-certify-" in line and "rootdir:" not in line]
    failed = [line for line in run.stdout.splitlines() if line.startswith("FAILED ")]
    assert "FAILED test_certify.py::TestCertify::test_many_deltas_keep_their_order" in [
        line.split(" - ")[0] for line in failed
    ], failed
    assert "test_certify.py::TestCertify::test_many_deltas_keep_their_order FAILED" in run.stdout


def _result(cap: str, outcome: str, declared: list[str]) -> dict[str, Any]:
    return {"capability": cap, "outcome": outcome, "clauses": ["X-1"], "declared_capabilities": declared}


def test_undeclared_skipped_capabilities_do_not_lower_the_overall_level() -> None:
    """KIT-4, CONF-3: a capability the backend does not declare, all of whose checks skipped, is NONE in the
    table but leaves the overall level FULL; a declared capability with a skipped check makes it BASE, and an
    undeclared one with a failure still counts."""
    overall, caps = levels([_result("core", "passed", ["core"]), _result("restart", "skipped", ["core"])])
    assert (overall, caps["restart"]["level"]) == ("FULL", "NONE")
    overall, _ = levels(
        [_result("core", "passed", ["core", "restart"]), _result("restart", "skipped", ["core", "restart"])]
    )
    assert overall == "BASE"
    overall, _ = levels(
        [
            _result("core", "passed", ["core"]),
            _result("restart", "failed", ["core"]),
            _result("restart", "passed", ["core"]),
        ]
    )
    assert overall == "PARTIAL"


def test_workers_without_xdist_are_refused_in_one_line_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI-3, CONF-9: `durable certify -n 2` where pytest-xdist is not installed says what to install, in one
    line, before any check runs (a plain install has no xdist)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xdist" else real(name, *a))
    code = durable(["certify", "--backend", "conformance:RunnerFactory.reference", "-n", "2"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "error: -n 2: pytest-xdist is not installed: pip install 'pytest-durable[xdist]' (or run without workers)"
    ]


def test_certify_is_a_function_returning_a_typed_report() -> None:
    """CONF-3, CONF-9: `conformance.certify(backend)` runs the fixed suite against a factory handed in (no source
    written) and returns the report: levels per capability, per-clause results, counts, seed; rendered as
    JSON, Markdown and JUnit XML."""
    import xml.etree.ElementTree as ET

    from conformance import Report, RunnerFactory, certify

    made: list[RunnerFactory] = []

    def backend() -> RunnerFactory:
        made.append(RunnerFactory.reference())
        return made[-1]

    report = certify(backend, seed=7)
    assert isinstance(report, Report) and len(made) == 1, "the backend is called once"
    assert (report.backend, report.level, report.seed, report.exit_code) == ("reference-runner", "FULL", 7, 0)
    assert set(report.capabilities) == {"runner", "runner_async", "runner_batch"}
    assert report.checks_run == report.checks_total == len(report.checks) > 20
    clauses = report.clauses()
    assert clauses["REC-3"] == "passed" and set(clauses.values()) == {"passed"}
    assert report.to_json()["level"] == "FULL" and "| runner | FULL |" in report.markdown()
    junit = ET.fromstring(report.junit())
    assert junit.get("tests") == str(len(report.checks)) and junit.get("failures") == "0"
    assert {p.get("value") for p in junit.iter("property") if p.get("name") == "clause"} == set(clauses)
