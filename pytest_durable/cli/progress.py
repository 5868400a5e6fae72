"""The progress line of a long ``durable sweep`` (spec CLI-2): points done of all, crashes fired, time left.

Drawn on standard error, and only when it is a terminal: a sweep whose output goes to a file or a pipe prints
nothing but its matrix. No dependency: one line rewritten in place with a carriage return, at most ten times
a second, and wiped before the matrix is printed.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressLine", "wanted"]


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


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


class ProgressLine:
    """A callable for :func:`~reference_runtime.exploration.sweep.sweep`'s ``progress``."""

    def __init__(self, stream: TextIO | None = None, every: float = 0.1) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self._now = time.monotonic
        self._start: float | None = None
        self._drawn = float("-inf")
        self._width = 0

    def text(self, done: int, total: int, fired: int, elapsed: float) -> str:
        """The line for ``done`` of ``total`` points after ``elapsed`` seconds."""
        share = f" ({100 * done // total}%)" if total else ""
        left = "?" if not done else _duration(elapsed / done * (total - done))
        return f"durable sweep: {done}/{total} fault points{share}, {fired} crashes fired, ETA {left}"

    def __call__(self, done: int, total: int, fired: int) -> None:
        now = self._now()
        if self._start is None:
            self._start = now
        if done < total and now - self._drawn < self.every:
            return
        self._drawn = now
        line = self.text(done, total, fired, now - self._start)
        pad = " " * max(0, self._width - len(line))
        self._width = len(line)
        self.stream.write("\r" + line + pad)
        self.stream.flush()

    def close(self) -> None:
        """Wipe the line, so what is printed next starts at the left margin."""
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
