"""Crash sweeps: learn every fault point of a crash-free run, then crash at each and check the durable
invariants (spec REC-3, REC-4, REC-6; PLG-1). Shared by the fixtures and ``durable sweep``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference_runtime import Agent, CrashAt, FaultInjector, FaultPoint, Phase, Runner, RunResult
from reference_runtime.stores.base import ActionStateStore


@dataclass
class PointOutcome:
    """What happened when the run crashed at ``point`` and recovered."""

    point: FaultPoint
    result: RunResult
    re_executed: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def call_key(p: FaultPoint) -> str:
    return f"{p.key}/{p.seq}/{p.action}/{p.call_index}"


def learn(agent: type[Agent], inputs: Sequence[tuple[str, Any]], store: Callable[[], ActionStateStore],
          **options: Any) -> tuple[RunResult, list[FaultPoint]]:
    """The crash-free result and the fault points it reached."""
    injector = FaultInjector()
    result = Runner(agent, store(), injector=injector, **options).run(inputs)
    return result, list(injector.trace)


def check(point: FaultPoint, baseline: RunResult, result: RunResult, trace: list[FaultPoint]) -> PointOutcome:
    out = PointOutcome(point, result)
    where = point.describe()
    if result.outputs != baseline.outputs:
        out.violations.append(f"REC-6: outputs differ after a crash at {where}: "
                              f"{result.outputs!r} != crash-free {baseline.outputs!r}")
    if result.memory != baseline.memory:
        out.violations.append(f"REC-6: memory differs after a crash at {where}")
    crash_at = next(i for i, p in enumerate(trace) if p is point or p == point)
    recorded = {call_key(p) for p in trace[:crash_at] if p.phase is Phase.AFTER_RECORD}
    crash_attempt = result.crashes.index(point) if point in result.crashes else 0
    for entry in result.journal:
        if entry.attempt <= crash_attempt:
            continue  # the attempt that crashed ran these calls for the first time
        cid = f"{entry.call_id.key}/{entry.call_id.seq}/{entry.call_id.action}/{entry.call_id.call_index}"
        if entry.source == "executed" and cid in recorded:
            out.re_executed.append(cid)
    for cid in sorted(set(out.re_executed)):
        out.violations.append(f"REC-3: call {cid} ({where}) had a persisted record but executed again")
    seen = Counter((e.key, e.seq, e.action) for e in result.emitted)
    expected = Counter((e.key, e.seq, e.action) for e in baseline.emitted)
    for k, n in seen.items():
        if n > expected.get(k, 0):
            out.duplicates.append(f"{k[0]}/{k[1]}/{k[2]}")
            out.violations.append(f"REC-4: output of {k[0]}/{k[1]}/{k[2]} emitted {n} events after a crash at {where}, "
                                  f"{expected.get(k, 0)} without one")
    return out


def sweep(agent: type[Agent], inputs: Sequence[tuple[str, Any]], store: Callable[[], ActionStateStore],
          **options: Any) -> list[PointOutcome]:
    """Crash once at every point of the crash-free run, recover, check."""
    baseline, points = learn(agent, inputs, store, **options)
    outcomes = []
    for point in points:
        injector = FaultInjector([CrashAt.point(point)])
        result = Runner(agent, store(), injector=injector, **options).run(inputs)
        outcomes.append(check(injector.fired[0] if injector.fired else point, baseline, result, injector.trace))
    return outcomes
