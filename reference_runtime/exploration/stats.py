"""Per-test counters of what the durable fixtures exercised; reported as JUnit properties and summed
into the terminal summary (on the xdist controller too, since they travel with the test reports)."""

from __future__ import annotations

from collections import Counter

#: Counter name -> the JUnit property it is reported as.
PROPERTIES = {
    "points": "durable_fault_points",
    "scenarios": "durable_schedules",
    "crashes": "durable_crashes",
    "anomalies": "durable_ledger_anomalies",
    "journals": "durable_journals_checked",
    "snapshot_starts": "durable_snapshot_starts",
    "re_executed_starts": "durable_re_executed_starts",
    "unchecked_effects": "durable_points_without_effects",
}
#: The property naming why sweep scenarios re-executed: ``"<count>:<reason>"`` (PLG-17).
START_REASON = "durable_start_reason"


class Stats:
    """Counts for one test."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        #: Why sweep scenarios re-executed instead of starting from a snapshot, with how many.
        self.reasons: Counter[str] = Counter()

    def add(self, **n: int) -> None:
        for name, value in n.items():
            if name not in PROPERTIES:
                raise KeyError(f"unknown durable counter {name!r}")
            self.counts[name] += value

    def properties(self) -> list[tuple[str, int | str]]:
        counts: list[tuple[str, int | str]] = [
            (PROPERTIES[name], self.counts[name]) for name in PROPERTIES if self.counts[name]
        ]
        return counts + [(START_REASON, f"{n}:{reason}") for reason, n in self.reasons.items()]
