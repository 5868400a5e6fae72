"""The verdict table ``python -m benchmarks`` ends with (docs/benchmarks.md, "Reading a run"): each target met,
forbidden by its floor, NOT met or not measured, judged from its figure, bound and floor alone; and P12's
verdicts brought back from the flink_agents venv's python when this one lacks the package."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import __main__ as bench_main
from benchmarks import _util, p12_examples
from benchmarks._util import FORBIDDEN, MET, NOT_MEASURED, NOT_MET, Verdict, judge, load_verdicts, record, summary


@pytest.fixture(autouse=True)
def _fresh_verdicts() -> Iterator[None]:
    saved = list(_util.VERDICTS)
    _util.VERDICTS.clear()
    yield
    _util.VERDICTS[:] = saved


@pytest.mark.parametrize(
    ("figure", "floor", "state"),
    [
        (3.0, None, MET),  # on the bound is within it
        (2.5, 3.3, MET),  # met, whatever the floor says
        (3.7, 3.3, FORBIDDEN),  # the least anyone measures is already over the bound
        (3.7, 2.9, NOT_MET),  # room under the bound that we do not use
        (3.7, 3.0, NOT_MET),  # a floor on the bound forbids nothing
        (3.7, None, NOT_MET),  # no floor measured: nothing forbids it
    ],
)
def test_a_target_at_most_is_met_forbidden_or_not_met(figure: float, floor: float | None, state: str) -> None:
    assert judge("P1a durable call", figure, 3, " µs", floor=floor) == state
    (verdict,) = _util.VERDICTS
    assert verdict.state == state
    assert verdict.bound == "<= 3.00 µs"
    assert verdict.figure == f"{figure:.2f} µs"
    assert verdict.floor == ("" if floor is None else f"{floor:.2f} µs")


@pytest.mark.parametrize(
    ("figure", "floor", "state"),
    [
        (1.6, None, MET),
        (1.42, 1.55, FORBIDDEN),  # the floor's own speed-up is under the bound
        (1.42, 1.77, NOT_MET),
    ],
)
def test_a_target_at_least_turns_the_comparisons_round(figure: float, floor: float | None, state: str) -> None:
    assert judge("P9b -n 2", figure, 1.6, floor=floor, at_least=True) == state
    assert _util.VERDICTS[0].bound == ">= 1.60x"


def test_a_figure_a_hair_off_its_bound_shows_the_digit_that_decides() -> None:
    """1.597 against >= 1.6 reads 1.597x, not a "1.60x" beside NOT met; a floor likewise; a figure exactly on
    the bound keeps its digits."""
    assert judge("P9b -n 2", 1.5974, 1.6, floor=1.7401, at_least=True) == NOT_MET
    assert (_util.VERDICTS[-1].figure, _util.VERDICTS[-1].floor) == ("1.597x", "1.740x")
    judge("P10 flink-agents", 1.40, 1.3, floor=1.2996)
    assert (_util.VERDICTS[-1].figure, _util.VERDICTS[-1].floor) == ("1.4000x", "1.2996x")
    judge("P1a", 3.0, 3, " µs")
    assert _util.VERDICTS[-1].figure == "3.00 µs"


def test_numbers_keep_their_digits_and_thousands() -> None:
    judge("P4 scenarios", 7956.4, 4000, "/s", at_least=True, digits=0)
    assert (_util.VERDICTS[0].figure, _util.VERDICTS[0].bound) == ("7 956/s", ">= 4 000/s")


def test_the_summary_names_every_open_target_and_every_one_not_measured() -> None:
    judge("P1a durable call", 2.9, 3, " µs")
    judge("P1c FULL, WAL growing", 62.0, 40, " µs", floor=41.1)
    judge("P10 Kafka native", 1.22, 1.15, floor=1.14)
    record("P12 shipped examples", "<= 2.00x", "flink_agents missing", NOT_MEASURED)
    text = summary(_util.VERDICTS)
    header, *rows, last, absent = text.splitlines()
    assert re.split(r"\s{2,}", header.strip()) == ["target", "bound", "this run", "floor", "verdict"]
    assert len(rows) == 4
    assert "forbidden by its floor" in rows[1] and "NOT met" in rows[2]
    assert last == "neither met nor forbidden by its floor: P10 Kafka native"
    assert absent == "not measured: P12 shipped examples"


def test_the_summary_says_when_every_target_measured_is_met_or_forbidden() -> None:
    judge("P1a durable call", 2.9, 3, " µs")
    judge("P1c FULL, WAL growing", 62.0, 40, " µs", floor=41.1)
    assert summary(_util.VERDICTS).splitlines()[-1] == (
        "every target measured is met or forbidden by its floor (2 verdicts)"
    )


def test_verdicts_cross_interpreters_through_the_file_the_environment_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "verdicts.json"
    monkeypatch.setenv(_util.VERDICTS_FILE, str(out))
    judge("P12 worst", 1.54, 2, floor=0.01)
    _util.save_verdicts()
    assert load_verdicts(str(out)) == [Verdict("P12 worst", "<= 2.00x", "1.54x", "0.01x", MET)]
    # A run that wrote nothing, or wrote something else, brings back no verdict rather than an error.
    assert load_verdicts(str(tmp_path / "absent.json")) == []
    (tmp_path / "bad.json").write_text("{not json")
    assert load_verdicts(str(tmp_path / "bad.json")) == []
    (tmp_path / "wrong.json").write_text(json.dumps([{"target": "x"}]))
    assert load_verdicts(str(tmp_path / "wrong.json")) == []


def test_p12_runs_in_the_flink_agents_venv_and_its_verdicts_join_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A stand-in for the venv's python: it checks what it is asked to run and writes one verdict where the
    # environment says, as `python -m benchmarks p12` does there.
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(
        "#!/bin/sh\n"
        '[ "$1 $2 $3" = "-m benchmarks p12" ] || exit 3\n'
        'printf \'[{"target": "P12 worst (react)", "bound": "<= 2.00x", "figure": "1.54x", "floor": "0.02x",'
        ' "state": "met"}]\' > "$DURABLE_BENCH_VERDICTS"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("DURABLE_FLINK_AGENTS_VENV", str(tmp_path / "venv"))
    monkeypatch.delenv(_util.VERDICTS_FILE, raising=False)
    monkeypatch.setattr(bench_main, "_has_flink_agents", lambda: False)
    assert bench_main.main(["p12"]) == 0
    out = capsys.readouterr().out
    assert f"(run by {python}: this python has no flink_agents)" in out
    assert "P12 worst (react)" in out.split("== targets")[1]
    assert out.rstrip().endswith("every target measured is met or forbidden by its floor (1 verdict)")


def test_without_that_venv_p12_runs_here_and_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DURABLE_FLINK_AGENTS_VENV", str(tmp_path / "no-venv"))
    monkeypatch.delenv(_util.VERDICTS_FILE, raising=False)
    monkeypatch.setattr(bench_main, "_has_flink_agents", lambda: False)
    monkeypatch.setattr(p12_examples.importlib.util, "find_spec", lambda name: None)
    assert bench_main.main(["p12"]) == 0
    out = capsys.readouterr().out
    assert "P12 not measured: flink_agents and pyflink not installed" in out
    assert out.rstrip().splitlines()[-1] == "not measured: P12 shipped examples, scenario / crash-free run"
