"""Small timing helpers shared by the benchmarks (best of several repeats, in one process)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
