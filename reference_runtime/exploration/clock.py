"""Virtual time for durable tests: a freezegun-frozen clock the runtime and the agent share.

While the ``durable_clock`` fixture is active, ``time.time()``, ``datetime.now()`` and friends return the
frozen instant everywhere (the agent's own code included), and sleeping on the clock — which the runtime
does for retry backoff — moves that instant forward instead of waiting.
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any


class FrozenClock:
    """A :class:`reference_runtime.clock.Clock` over a running freezegun ``freeze_time``.

    ``now()`` is ``time.time()`` under freezegun; ``sleep(s)`` and ``advance(s)`` tick the frozen time.
    ``sleeps`` lists every sleep requested, so a test can assert a backoff schedule.
    """

    virtual = True

    def __init__(self, frozen: Any) -> None:
        self._frozen = frozen
        self._lock = threading.Lock()
        self.sleeps: list[float] = []

    def now(self) -> float:
        import time

        return time.time()

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
        if seconds > 0:
            self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Move virtual time forward by ``seconds`` (never backwards)."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._frozen.tick(dt.timedelta(seconds=seconds))

    def datetime(self) -> dt.datetime:
        """The current virtual instant as an aware UTC datetime."""
        return dt.datetime.fromtimestamp(self.now(), tz=dt.UTC)
