"""Small timing helpers shared by the benchmarks (best of several repeats, in one process)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TypeVar

T = TypeVar("T")


def best_of(fn: Callable[[], object], repeats: int = 5) -> float:
    """The fastest of ``repeats`` runs of ``fn``, in seconds: the least disturbed by other load."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def rotated(items: Sequence[T], turn: int) -> list[T]:
    """``items`` started at position ``turn`` (modulo their number): round ``turn`` of parts taking turns, so no
    part always runs first or last after a round's start, where a slow spell of the host would keep landing."""
    k = turn % len(items)
    return [*items[k:], *items[:k]]


#: A pytest module of ``count`` tests, each burning ``seconds`` of CPU time (on a busy machine it takes longer,
#: like real work): the floor of a parallel speed-up, work split evenly with nothing to share.
BURN_SUITE = """
import time

import pytest


@pytest.mark.parametrize("i", range({count}))
def test_burn(i):
    end = time.process_time() + {seconds!r}
    while time.process_time() < end:
        pass
"""


# -- the run's verdicts -------------------------------------------------------------------------------------
MET = "met"
FORBIDDEN = "forbidden by its floor"
NOT_MET = "NOT met"
NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Verdict:
    """One target's verdict in this run: its figure beside its bound and, where one is measured, its floor
    (the least any implementation measures here, in the figure's unit)."""

    target: str
    bound: str
    figure: str
    floor: str
    state: str


#: Every target judged in this process, in the order judged; ``python -m benchmarks`` prints them last.
VERDICTS: list[Verdict] = []


def _fmt(value: float, unit: str, digits: int) -> str:
    return f"{value:,.{digits}f}".replace(",", " ") + unit


def spaced(n: int) -> str:
    """``n`` with its thousands apart: 100 000."""
    return _fmt(n, "", 0)


def _bound(bound: float, unit: str, digits: int, at_least: bool) -> str:
    return f"{'>=' if at_least else '<='} {_fmt(bound, unit, digits)}"


def judge(
    target: str,
    figure: float,
    bound: float,
    unit: str = "x",
    *,
    floor: float | None = None,
    at_least: bool = False,
    digits: int = 2,
) -> str:
    """Record and return the verdict on ``target``: met when ``figure`` is within ``bound`` (at most, or at
    least with ``at_least``); else forbidden by its floor when ``floor`` is itself outside the bound, since no
    implementation measures less than its floor; else NOT met. ``unit`` follows each number."""
    met = figure >= bound if at_least else figure <= bound
    forbidden = floor is not None and (floor < bound if at_least else floor > bound)
    state = MET if met else FORBIDDEN if forbidden else NOT_MET
    # A figure or floor on the wrong side of the bound by less than its last digit gets more digits, so the
    # table never shows "1.60x ... NOT met" against ">= 1.60x".
    shown = digits
    while shown < digits + 4 and any(
        v is not None and v != bound and _fmt(v, "", shown) == _fmt(bound, "", shown) for v in (figure, floor)
    ):
        shown += 1
    VERDICTS.append(
        Verdict(
            target,
            _bound(bound, unit, digits, at_least),
            _fmt(figure, unit, shown),
            "" if floor is None else _fmt(floor, unit, shown),
            state,
        )
    )
    return state


def record(target: str, bound: str, figure: str, state: str) -> str:
    """Record a verdict judged by the benchmark itself (a target that is not a number against a bound);
    returns ``state``."""
    VERDICTS.append(Verdict(target, bound, figure, "", state))
    return state


def unmeasured(
    target: str, bound: float, why: str, unit: str = "x", *, at_least: bool = False, digits: int = 2
) -> None:
    """Record ``target`` as not measured here, ``why`` in its figure's place; its bound is written as
    :func:`judge` writes it."""
    VERDICTS.append(Verdict(target, _bound(bound, unit, digits, at_least), why, "", NOT_MEASURED))


#: The environment variable naming a file a benchmark run in another interpreter writes its verdicts to.
VERDICTS_FILE = "DURABLE_BENCH_VERDICTS"


def save_verdicts() -> None:
    """Write this process's verdicts to the file ``$DURABLE_BENCH_VERDICTS`` names, if it names one: how a run
    in another interpreter (P12 in the flink_agents venv) hands them to the run that started it."""
    path = os.environ.get(VERDICTS_FILE)
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump([asdict(v) for v in VERDICTS], f)


def load_verdicts(path: str) -> list[Verdict]:
    """The verdicts :func:`save_verdicts` wrote to ``path`` (none when the run wrote nothing)."""
    try:
        with open(path, encoding="utf-8") as f:
            return [Verdict(**v) for v in json.load(f)]
    except (OSError, ValueError, TypeError):
        return []


def summary(verdicts: Sequence[Verdict]) -> str:
    """The verdicts as one table, and a last line saying whether every target measured is met or forbidden by
    its floor (the done-when of the performance issue) and which are not."""
    rows = [("target", "bound", "this run", "floor", "verdict")]
    rows += [(v.target, v.bound, v.figure, v.floor, v.state) for v in verdicts]
    open_ = [v.target for v in verdicts if v.state == NOT_MET]
    absent = [v.target for v in verdicts if v.state == NOT_MEASURED]
    if open_:
        last = f"neither met nor forbidden by its floor: {'; '.join(open_)}"
    else:
        n = len(verdicts) - len(absent)
        last = f"every target measured is met or forbidden by its floor ({n} verdict{'' if n == 1 else 's'})"
    if absent:
        last += f"\nnot measured: {'; '.join(absent)}"
    return f"{table(rows)}\n{last}"


def table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


# -- series for ``--plot`` ------------------------------------------------------------------------------
#: figure title -> (x label, y label, log x, {series name: [(x, y), ...]})
SERIES: dict[str, tuple[str, str, bool, dict[str, list[tuple[float, float]]]]] = {}


def point(figure: str, series: str, x: float, y: float, *, xlabel: str, ylabel: str, logx: bool = True) -> None:
    """Record one measured point of a scaling benchmark, for ``python -m benchmarks --plot``."""
    entry = SERIES.setdefault(figure, (xlabel, ylabel, logx, {}))
    entry[3].setdefault(series, []).append((x, y))


def plot(directory: str) -> list[str]:
    """One PNG per figure recorded by :func:`point`; returns the paths written."""
    import os
    import re

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(directory, exist_ok=True)
    written = []
    for title, (xlabel, ylabel, logx, series) in SERIES.items():
        fig, ax = plt.subplots(figsize=(10, 4.2))
        for name, pts in series.items():
            xs, ys = zip(*sorted(pts), strict=True)
            ax.plot(xs, ys, marker="o", label=name)
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        # Beside the axes, not on them: an anchor far above the rest (DBOS in P1) leaves the lines low.
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        fig.tight_layout()
        path = os.path.join(directory, re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") + ".png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
