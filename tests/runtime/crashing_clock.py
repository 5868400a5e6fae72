"""A virtual clock that crashes the process during its n-th backoff sleep: a crash between two attempts of
a retried call (RETRY-5, BAT-7)."""

from __future__ import annotations

from reference_runtime import FaultPoint, Phase, SimulatedCrash, VirtualClock


class CrashingBackoffClock(VirtualClock):
    """Crashes during sleep number ``crash_on_sleep``, reporting call ``index`` of action ``work`` of key ``k``."""

    def __init__(self, crash_on_sleep: int, index: int = 0) -> None:
        super().__init__()
        self.crash_on_sleep = crash_on_sleep
        self.index = index

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if len(self.sleeps) == self.crash_on_sleep:
            raise SimulatedCrash(FaultPoint(Phase.AFTER_EFFECT, "k", 0, "work", self.index))
