"""Known-failures files (spec CONF-5): strict xfail, warnings for stale entries, writing a fresh file,
under one process and under ``-n 2``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import known_failures as kf

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

SUITE = """
import pytest
from conformance import StoreConformance, StoreFactory
from tests.conformance.broken_stores import IgnoresPrune

class TestBroken(StoreConformance):
    @pytest.fixture(scope="session")
    @classmethod
    def durable_store_factory(cls):
        return StoreFactory(IgnoresPrune, reopen=lambda s: s, capabilities={"core", "restart"}, name="IgnoresPrune")
"""

PRUNE = "TestBroken::test_prune_boundaries"


@pytest.fixture
def broken(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_broken=SUITE)
    pytester.syspathinsert(str(ROOT))
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p", "conformance.plugin", "--durable-conformance-seed", "7", "-p", "no:randomly", "-p", "no:benchmark", *args
    )


# -- the file format ---------------------------------------------------------------------------------------


def test_parse_entries_reasons_comments_and_blank_lines() -> None:
    """CONF-5: `<id>  # reason` per line; comments and blank lines are skipped; line numbers are kept."""
    entries = kf.parse(
        "# header\n\nTestA::test_x   # prune keeps seq n\n  test_y[1]#no space\ntest_z\na.py::TestB::test_w  #\n",
        "kf.txt",
    )
    assert [(e.entry, e.reason, e.line) for e in entries] == [
        ("TestA::test_x", "prune keeps seq n", 3),
        ("test_y[1]#no space", "", 4),
        ("test_z", "", 5),
        ("a.py::TestB::test_w", "", 6),
    ]
    assert entries[0].where() == "kf.txt:3"
    assert "TestA::test_x" in entries[0].xfail_reason() and "prune keeps seq n" in entries[0].xfail_reason()


def test_a_hash_glued_to_the_id_is_refused() -> None:
    """CONF-5: `id# reason` is ambiguous and refused with the line number."""
    with pytest.raises(kf.KnownFailuresError, match=r"kf.txt:1: put at least one space"):
        kf.parse("TestA::test_x# reason\n", "kf.txt")


@pytest.mark.parametrize(
    ("entry", "nodeid", "matches"),
    [
        ("t.py::TestA::test_x", "t.py::TestA::test_x", True),
        ("TestA::test_x", "t.py::TestA::test_x", True),
        ("test_x", "t.py::TestA::test_x", True),
        ("t.py::TestA::test_x", "sub/t.py::TestA::test_x", True),
        ("est_x", "t.py::TestA::test_x", False),
        ("TestA::test_x", "t.py::TestA::test_xy", False),
        ("test_x", "t.py::TestA::test_x[a-1]", True),
        ("test_x[a-1]", "t.py::TestA::test_x[a-1]", True),
        ("test_x[a-2]", "t.py::TestA::test_x[a-1]", False),
    ],
)
def test_entries_match_node_ids_and_suffixes_at_boundaries(entry: str, nodeid: str, matches: bool) -> None:
    """CONF-5: an entry is a node id or a suffix starting at `::` or `/`; without `[…]` it covers every
    parametrization."""
    (e,) = kf.parse(f"{entry}  # r")
    assert e.matches(nodeid) is matches


def test_render_round_trips_through_parse() -> None:
    """CONF-5: a written file parses back to the same entries, one line per failure, sorted."""
    text = kf.render([("t.py::B::test_b", "AssertionError: x\nmore"), ("t.py::A::test_a", "")], header="hi")
    assert text.splitlines()[0] == "# hi"
    assert [(e.entry, e.reason) for e in kf.parse(text)] == [
        ("t.py::A::test_a", ""),
        ("t.py::B::test_b", "AssertionError: x"),
    ]


def test_an_unreadable_file_is_a_usage_error(broken: pytest.Pytester) -> None:
    result = run(broken, "--durable-known-failures", "missing.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot read the known-failures file*missing.txt*"])


# -- running with a file ----------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist-2"])
def test_a_written_file_makes_the_next_run_pass_with_known_failures(
    broken: pytest.Pytester, workers: list[str]
) -> None:
    """CONF-5: --durable-write-known-failures lists this run's failures; with that file the same checks
    are strict xfail, the run passes, and the level still shows they fail."""
    first = run(broken, "--durable-write-known-failures", "known.txt", *workers)
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    first.stdout.fnmatch_lines(["*wrote * known failure(s) to *known.txt"])
    entries = kf.load(broken.path / "known.txt")
    assert any(e.entry.endswith(PRUNE) for e in entries)
    assert all(e.reason for e in entries), "every written entry carries the failure message as its reason"
    failed = first.parseoutcomes()["failed"]
    assert len(entries) == failed

    second = run(broken, "--durable-known-failures", "known.txt", "--durable-conformance-report", "r.json", *workers)
    assert second.ret == pytest.ExitCode.OK, second.stdout.str()
    assert second.parseoutcomes()["xfailed"] == failed
    doc = json.loads((broken.path / "r.json").read_text())
    prune = next(c for c in doc["checks"] if c["nodeid"].endswith(PRUNE))
    assert prune["outcome"] == "xfailed" and prune["known_failure"].endswith(PRUNE)
    assert doc["capabilities"]["core"]["xfailed"] >= 1
    assert doc["capabilities"]["core"]["level"] == "PARTIAL"
    assert "STORE-4" in doc["capabilities"]["core"]["failed_clauses"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist-2"])
def test_a_listed_check_that_passes_fails_the_run_naming_the_entry(broken: pytest.Pytester, workers: list[str]) -> None:
    """CONF-5: strict xfail — a known failure that now passes fails the run, and the message names the
    entry and where it is, so the stale line can be removed."""
    (broken.path / "known.txt").write_text(
        f"{PRUNE}  # prune is a no-op\nTestBroken::test_put_get_round_trip  # thought broken\n"
    )
    result = run(
        broken, "--durable-known-failures", "known.txt", "-rf", "--durable-conformance-report", "r.json", *workers
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*[[]XPASS(strict)[]] known failure 'TestBroken::test_put_get_round_trip' "
            f"({broken.path / 'known.txt'}:2): thought broken*"
        ]
    )
    outcomes = result.parseoutcomes()
    assert outcomes["xfailed"] >= 1 and outcomes["failed"] >= 1
    doc = json.loads((broken.path / "r.json").read_text())
    (xpassed,) = [c for c in doc["checks"] if c["outcome"] == "xpassed"]
    assert xpassed["nodeid"].endswith("test_put_get_round_trip") and "XPASS(strict)" in xpassed["reason"]
    core = [c for c in doc["checks"] if c["capability"] == "core"]
    met = sum(c["outcome"] in ("passed", "xpassed") for c in core)
    assert doc["capabilities"]["core"]["passed"] == met, "a strict XPASS counts as passed: the clause is met"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist-2"])
def test_an_entry_matching_nothing_warns_once_naming_it(broken: pytest.Pytester, workers: list[str]) -> None:
    """CONF-5: a stale entry is a pytest warning naming the entry and its line — once, also under xdist."""
    (broken.path / "known.txt").write_text(f"{PRUNE}  # prune is a no-op\nTestBroken::test_renamed_long_ago  # gone\n")
    result = run(broken, "--durable-known-failures", "known.txt", "-k", "prune or renamed", *workers)
    out = result.stdout.str()
    message = "known-failures entry 'TestBroken::test_renamed_long_ago' (*known.txt:2) matches no collected test"
    result.stdout.fnmatch_lines([f"*KnownFailureWarning: {message}*"])
    assert out.count("test_renamed_long_ago' (") == 1, out
    assert f"'{PRUNE}'" not in out.split("warnings summary")[-1], "the matching entry is not reported"


def test_the_ini_value_names_the_file_relative_to_the_ini_file(broken: pytest.Pytester) -> None:
    """CONF-5: `durable_known_failures` in the ini file is the option's twin."""
    (broken.path / "conf").mkdir()
    (broken.path / "conf" / "known.txt").write_text(f"{PRUNE}  # prune is a no-op\n")
    broken.makeini("[pytest]\ndurable_known_failures = conf/known.txt\n")
    result = run(broken, "-k", "prune_boundaries")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["*known failures: *known.txt (1 entries)*"])


def test_junit_carries_clause_capability_backend_and_known_failure(broken: pytest.Pytester) -> None:
    """CONF-3, CONF-5: each check's JUnit testcase has its clause, capability, backend, declared
    capabilities and, when listed, the known-failures entry as properties."""
    import xml.etree.ElementTree as ET

    (broken.path / "known.txt").write_text(f"{PRUNE}  # prune is a no-op\n")
    run(broken, "--durable-known-failures", "known.txt", "--junitxml", "junit.xml", "-k", "prune_boundaries")
    (case,) = ET.parse(broken.path / "junit.xml").getroot().iter("testcase")
    props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    assert ("clause", "STORE-4") in props and ("capability", "core") in props
    assert ("backend", "IgnoresPrune") in props and ("declared_capabilities", "core,restart") in props
    assert ("known_failure", PRUNE) in props
