"""An injectable clock, so retries and timeouts can run in virtual time (e.g. under freezegun)."""

from __future__ import annotations

import time
from typing import Protocol

#: How far a virtual clock moves across a failover or between two compared runs (spec PLG-13).
RESTART_SECONDS = 60.0


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


def let_time_pass(clock: Clock | None, seconds: float = RESTART_SECONDS) -> None:
    """Make ``clock`` read a later time than it does now, as a process restart would (spec PLG-13, PLG-14).

    A virtual clock (``virtual`` true, with ``advance``) moves ``seconds`` forward at once. A real clock
    (``None`` means the system clock) is waited on until its reading changes, which takes at most one
    tick of its resolution (15.6 ms on a coarse clock, microseconds on most), so an agent that leaks the
    time into a durable call is caught whatever the resolution. The wait gives up after about 40 ms, for a
    time frozen by something the runtime does not drive."""
    advance = getattr(clock, "advance", None)
    if getattr(clock, "virtual", False) and callable(advance):
        advance(seconds)
        return
    now = clock.now if clock is not None else time.time
    start = now()
    # Spin first: a fine clock changes within a microsecond, and sleeping would cost a millisecond per run.
    for _ in range(2000):
        if now() != start:
            return
    for _ in range(40):
        time.sleep(0.001)
        if now() != start:
            return
