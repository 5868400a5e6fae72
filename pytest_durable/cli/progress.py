"""The progress line of a long ``durable sweep`` (spec CLI-7): points done of all, crashes fired, time left.

Drawn on standard error, and only when it is a terminal: a sweep whose output goes to a file or a pipe prints
nothing but its matrix. The line is tqdm's (redrawn in place at most ten times a second, its estimate of the
time left, wiped when closed), imported only when a sweep draws it: the pytest plugin never loads it.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

__all__ = ["ProgressLine", "wanted"]

#: One line: no bar, the counts the spec names (CLI-7). ``{postfix}`` is ", N crashes fired".
_FORMAT = "durable sweep: {n_fmt}/{total_fmt} fault points ({percentage:.0f}%){postfix}, ETA {remaining}"


def wanted(stream: TextIO, asked: bool | None) -> bool:
    """Whether to draw: ``asked`` (``--progress`` / ``--no-progress``) if given, else whether ``stream`` is a
    terminal."""
    if asked is not None:
        return asked
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):
        return False


def _quiet_tqdm() -> Any:
    """tqdm without its monitor thread (which only unsticks bars updated from other threads): a sweep
    reports from the thread that runs it."""
    from tqdm import tqdm

    class Line(tqdm):  # type: ignore[type-arg]
        monitor_interval = 0

    return Line


class ProgressLine:
    """A callable for :func:`~reference_runtime.exploration.sweep.sweep`'s ``progress``, drawing with tqdm."""

    def __init__(self, stream: TextIO | None = None, every: float = 0.1) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self._bar: Any = None

    @staticmethod
    def text(done: int, total: int, fired: int, elapsed: float) -> str:
        """The line for ``done`` of ``total`` points after ``elapsed`` seconds."""
        from tqdm import tqdm

        return str(tqdm.format_meter(done, total, elapsed, bar_format=_FORMAT, postfix=f"{fired} crashes fired"))

    def __call__(self, done: int, total: int, fired: int) -> None:
        if self._bar is None:
            self._bar = _quiet_tqdm()(
                total=total,
                file=self.stream,
                bar_format=_FORMAT,
                postfix=f"{fired} crashes fired",
                mininterval=self.every,
                miniters=1,
                leave=False,  # closed, the line is wiped: the matrix starts at the left margin
            )
        bar = self._bar
        bar.set_postfix_str(f"{fired} crashes fired", refresh=False)
        bar.update(done - bar.n)
        if done >= total:
            bar.refresh()  # the last count is always drawn, however soon after the one before

    def close(self) -> None:
        """Wipe the line, so what is printed next starts at the left margin."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
