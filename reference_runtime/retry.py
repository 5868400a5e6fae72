"""Retry policies for durable calls (spec RETRY-*).

Attempts happen inside one durable call: only the final outcome is recorded, so a replay neither
retries nor sleeps. Attempts themselves are not recorded (RETRY-5): a crash before the final outcome is
recorded restarts the retries at attempt 1 on recovery, so retries are at-least-once per execution attempt.
Backoff sleeps on the runtime's clock, which a test replaces with a virtual one. Jitter is derived from
the call id and attempt, so a schedule is reproducible run to run.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``initial * multiplier**(attempt-1)``, capped at ``maximum``, then spread
    by ±``jitter`` (a fraction)."""

    initial: float = 0.1
    multiplier: float = 2.0
    maximum: float = 30.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial < 0 or self.multiplier < 1 or self.maximum < 0 or not 0 <= self.jitter <= 1:
            raise ValueError("backoff needs initial >= 0, multiplier >= 1, maximum >= 0, 0 <= jitter <= 1")
        if not math.isfinite(self.maximum):
            raise ValueError(
                f"Backoff(maximum={self.maximum!r}): the cap on one wait must be a finite number of seconds"
            )

    def delay(self, attempt: int, salt: str = "") -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        try:
            grown = self.initial * self.multiplier ** (attempt - 1)
        except OverflowError:  # attempt ~1 025 with multiplier 2: the cap applies (RETRY-7)
            grown = math.inf
        base = min(self.maximum, grown)
        if not self.jitter:
            return base
        h = hashlib.sha256(f"{salt}/{attempt}".encode()).digest()
        unit = int.from_bytes(h[:8], "big") / 2**64  # in [0, 1)
        return max(0.0, base * (1 + self.jitter * (2 * unit - 1)))


@dataclass(frozen=True)
class RetryPolicy:
    """Retry a durable call up to ``max_attempts`` times on exceptions of the ``retry_on`` types."""

    max_attempts: int = 3
    backoff: Backoff = Backoff()
    retry_on: tuple[type[BaseException], ...] = (Exception,)

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise TypeError(f"RetryPolicy(max_attempts={self.max_attempts!r}): expected an int >= 1")
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy(max_attempts={self.max_attempts!r}): max_attempts must be at least 1")
        if not isinstance(self.backoff, Backoff):
            raise TypeError(f"RetryPolicy(backoff={self.backoff!r}): expected a Backoff(...)")
        # A frozen dataclass: the normalized tuple is stored through object.__setattr__.
        object.__setattr__(self, "retry_on", _exception_types(self.retry_on))

    def should_retry(self, exc: BaseException, attempt: int) -> bool:
        return attempt < self.max_attempts and isinstance(exc, self.retry_on)


def _exception_types(retry_on: object) -> tuple[type[BaseException], ...]:
    """``retry_on`` as a tuple of exception classes (one class is accepted too), or a TypeError naming the
    bad entry (RETRY-6): a bad entry found at retry time would replace the call's real exception."""
    items: Iterable[object] = (
        (retry_on,)
        if isinstance(retry_on, type)
        else (retry_on if isinstance(retry_on, tuple | list | set | frozenset) else (retry_on,))
    )
    given = tuple(items)
    types = tuple(t for t in given if isinstance(t, type) and issubclass(t, BaseException))
    if len(types) != len(given) or not types:
        raise TypeError(
            f"RetryPolicy(retry_on={retry_on!r}): expected an exception class or a tuple of them, "
            f"e.g. retry_on=(ConnectionError, TimeoutError)"
        )
    return types
