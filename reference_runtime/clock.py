"""An injectable clock, so retries and timeouts can run in virtual time (e.g. under freezegun)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """What the runtime reads time from. A clock with a true ``virtual`` attribute moves only when slept
    on or advanced; the runtime then measures batch deadlines on it alone, never with real timers."""

    def now(self) -> float:
        """Seconds, monotonic within a run."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; a virtual clock advances instead of waiting."""


class SystemClock:
    """Real time. ``time.time`` rather than ``monotonic`` so that freezegun can move it."""

    virtual = False

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class VirtualClock:
    """A clock that only moves when slept on or advanced: deterministic, instant."""

    virtual = True

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds
