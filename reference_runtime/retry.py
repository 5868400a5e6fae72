"""Retry policies for durable calls (spec RETRY-*).

Attempts happen inside one durable call: only the final outcome is recorded, so a replay neither
retries nor sleeps. Backoff sleeps on the runtime's clock, which a test replaces with a virtual one.
Jitter is derived from the call id and attempt, so a schedule is reproducible run to run.
"""

from __future__ import annotations

import hashlib
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

    def delay(self, attempt: int, salt: str = "") -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        base = min(self.maximum, self.initial * self.multiplier ** (attempt - 1))
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
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def should_retry(self, exc: BaseException, attempt: int) -> bool:
        return attempt < self.max_attempts and isinstance(exc, self.retry_on)
