"""The verdict on a crash run: what it must keep against the crash-free run (spec REC-3, REC-4, REC-5, REC-6,
PLG-1, PLG-3), one vocabulary for the fixtures, ``durable sweep``, schedule exploration and the conformance kit.

:func:`check` compares a run that crashed (and recovered) with the crash-free run of the same inputs and
returns a :class:`PointOutcome`: its violations, each a line citing its clause, and what it saw (calls that
ran again, actions that emitted twice). :class:`Verdict` sums up a sweep. Calls are named by their
idempotency id, ``str(CallId)``, everywhere: violation lines, ledger rows, journal entries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from reference_runtime import CallId, FaultInjector, FaultPoint, Phase, RunResult

from .scenario import Scenario

if TYPE_CHECKING:
    from .ledger import Ledger, LedgerRow

__all__ = ["PointOutcome", "Verdict", "check", "memory_diff", "recorded_attempts"]


@dataclass
class PointOutcome:
    """What happened when a run crashed as ``scenario`` says and recovered."""

    scenario: Scenario
    result: RunResult
    fired: list[FaultPoint] = field(default_factory=list)
    #: Calls with a persisted record that executed again after the crash (each a REC-3 violation).
    re_executed: list[str] = field(default_factory=list)
    #: Actions that emitted their output events again (REC-4), as ``key/seq/action``.
    duplicates: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    #: Calls that ran again after a crash with no record and no reconciler (the DE-6 path), by
    #: idempotency id: harmless for an idempotent call, a duplicate effect otherwise.
    repeated: list[str] = field(default_factory=list)
    #: Those of ``repeated`` for which no declared effect was booked, so nothing checked the repeat.
    unchecked: list[str] = field(default_factory=list)
    #: How the scenario got to its crash: ``snapshot`` (started from the crash-free run's snapshot at the
    #: point) or ``re-executed`` (ran the agent up to it), and why it re-executed (PLG-16, PLG-17).
    start: str = "re-executed"
    start_reason: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def point(self) -> FaultPoint:
        """The first crash of the scenario (the only one in a sweep)."""
        return self.fired[0] if self.fired else FaultPoint(self.scenario.schedule[0].phase or Phase.BEFORE_CALL)

    @property
    def where(self) -> str:
        return " then ".join(p.describe() for p in self.fired) or self.scenario.describe()


def recorded_attempts(trace: Sequence[FaultPoint], fired: Sequence[FaultPoint]) -> dict[tuple[Any, ...], int]:
    """The one rule of "recorded before the crash" (REC-3, REC-5): for every call whose terminal record was
    persisted (an after-record point in ``trace``), the attempt its record first landed in, i.e. how many
    crashes of ``fired`` came before it. Attempt n is the trace up to and including the n-th fired point, so
    a crash at a call's after-record point counts its record as persisted. Keys are a call's (key, seq,
    action, call index, execution): a fault point's fields 1..4 and 6, equal to the journal's
    :class:`CallId`."""
    # Comprehensions, not one loop with branches: a sweep checks one scenario per point, each with a trace
    # as long as the run (COST-4).
    after_record = Phase.AFTER_RECORD  # once, not per point: enum attribute access is slow on 3.11
    recorded: dict[tuple[Any, ...], int] = {}
    start = 0
    ends = [i + 1 for i in _positions(trace, fired)] + [len(trace)]
    for attempt, end in enumerate(ends):
        landed = dict.fromkeys([(*p[1:5], p[6]) for p in trace[start:end] if p.phase is after_record], attempt)
        landed.update(recorded)  # a call keeps the first attempt its record landed in
        recorded, start = landed, end
    return recorded


def check(
    scenario: Scenario, baseline: RunResult, result: RunResult, injector: FaultInjector, ledger: Ledger | None = None
) -> PointOutcome:
    """Every durable invariant that ``result`` (a run with crashes) must keep against ``baseline``."""
    out = PointOutcome(scenario, result, list(injector.fired))
    where = out.where
    if result.outputs != baseline.outputs:
        out.violations.append(
            f"REC-6: outputs differ after a crash at {where}: {result.outputs!r} != crash-free {baseline.outputs!r}"
        )
    if result.memory != baseline.memory:
        out.violations.append(
            f"REC-6: memory differs after a crash at {where}: " + memory_diff(baseline.memory, result.memory)
        )
    recorded = recorded_attempts(injector.trace, injector.fired)
    # A slice copies a journal view in one go; iterating it yields entry by entry.
    executions = [e for e in result.journal[:] if e.source == "executed"]
    rerun = {e.call_id for e in executions if e.attempt and recorded.get(e.call_id, e.attempt) < e.attempt}
    out.re_executed = sorted(map(str, rerun))
    executed = Counter(e.call_id for e in executions)
    expected_runs, expected = _expected(baseline)
    # Only a call that ran twice, or that the crash-free run did not make, can have run more often.
    # Spelled as a loop over this run's calls: ``keys() - keys()`` walks the crash-free run's every call, which
    # a sweep paid once per point (quadratic in a long agent, P9b).
    suspects = [c for c, n in executed.items() if n > 1 or c not in expected_runs]
    out.repeated = sorted(str(c) for c in set(suspects) if executed[c] > expected_runs.get(c, 0) and c not in rerun)
    for cid in out.re_executed:
        out.violations.append(f"REC-3: call {cid} had a persisted record but executed again after a crash at {where}")
    seen = Counter((e.key, e.seq, e.action) for e in result.emitted)
    for k, n in sorted(seen.items()):
        if n > expected.get(k, 0):
            out.duplicates.append(f"{k[0]}/{k[1]}/{k[2]}")
            out.violations.append(
                f"REC-4: action {k[0]}/{k[1]}/{k[2]} emitted {n} output events after a crash "
                f"at {where}, {expected.get(k, 0)} without one"
            )
    booked: set[str] = set()
    if ledger is not None:
        rows = ledger.rows()
        if ledger.executions:
            out.violations.extend(_execution_violations(rows, recorded, len(injector.fired), where))
        else:
            out.violations.extend(ledger.violations(rows))
        booked = {r.call_id for r in rows}
    out.unchecked = [c for c in out.repeated if c not in booked]
    return out


def _execution_violations(
    rows: Sequence[LedgerRow], recorded: Mapping[tuple[Any, ...], int], crashes: int, where: str
) -> list[str]:
    """REC-3 and REC-5 judged on what really ran, from a ledger on which every execution of a durable call is
    booked (``Ledger(executions=True)``): a call may run once more per crash that came before its record was
    persisted, so never again once it was (REC-3) and at most once more per crash otherwise (REC-5). The
    journal's account of a run is the runner's claim; these counts are what its calls did."""
    landed = {str(CallId(*k)): attempt for k, attempt in recorded.items()}
    out = []
    for r in rows:
        extra = r.happened - r.expected
        allowed = landed.get(r.call_id, crashes)
        if extra <= allowed:
            continue
        if allowed == 0:
            out.append(
                f"REC-3: call {r.call_id} had a persisted record but its {r.name} ran {r.happened} time(s) after a "
                f"crash at {where}, {r.expected} without one"
            )
        else:
            out.append(
                f"REC-5: call {r.call_id} ran its {r.name} {r.happened} time(s) after a crash at {where}, "
                f"{r.expected} without one: at most once more per crash before its record was persisted"
            )
    return out


#: Per crash-free result, what :func:`check` compares every scenario of a sweep with: executions per
#: call id and output events per action. Kept while the result lives.
_EXPECTED: WeakKeyDictionary[RunResult, tuple[Counter[Any], Counter[Any]]] = WeakKeyDictionary()


def _expected(baseline: RunResult) -> tuple[Counter[Any], Counter[Any]]:
    found = _EXPECTED.get(baseline)
    if found is None:
        found = _EXPECTED[baseline] = (
            Counter(e.call_id for e in baseline.journal if e.source == "executed"),
            Counter((e.key, e.seq, e.action) for e in baseline.emitted),
        )
    return found


def _positions(trace: Sequence[FaultPoint], fired: Sequence[FaultPoint]) -> list[int]:
    """Where in ``trace`` each fired point is (the very objects: an equal point may come earlier)."""
    found, start = [], 0
    for point in fired:
        i = trace.index(point, start)
        while trace[i] is not point:
            i = trace.index(point, i + 1)
        found.append(i)
        start = i + 1
    return found


def memory_diff(expected: Mapping[str, dict[str, Any]], got: Mapping[str, dict[str, Any]], limit: int = 5) -> str:
    """The memory paths whose values differ, each with the crash-free value and the recovered one."""
    missing = object()
    lines = []
    for key in sorted(set(expected) | set(got)):
        want, have = expected.get(key, {}), got.get(key, {})
        for path in sorted(set(want) | set(have)):
            a, b = want.get(path, missing), have.get(path, missing)
            if a != b:
                shown = ("absent" if v is missing else repr(v) for v in (a, b))
                lines.append("key {!r} path {!r}: crash-free {}, after recovery {}".format(key, path, *shown))
    more = f"\n    … and {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n    " + "\n    ".join(lines[:limit]) + more


@dataclass
class Verdict:
    """The verdict on a sweep, shared by ``durable sweep`` and the plugin (PLG-1, PLG-3).

    ``effects_declared`` says whether side effects were declared to a ledger at all: without that,
    an effect outside ``durable_execute`` or repeated by a re-executed call cannot be seen, and the
    verdict says so instead of implying the agent is safe."""

    outcomes: list[PointOutcome]
    effects_declared: bool

    @property
    def violations(self) -> list[str]:
        return [v for o in self.outcomes for v in o.violations]

    @property
    def failing(self) -> list[PointOutcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def unchecked(self) -> list[str]:
        """Calls re-executed after a crash with no reconciler and no declared effect booked."""
        return sorted({c for o in self.outcomes for c in o.unchecked})

    @property
    def ok(self) -> bool:
        return not self.violations

    def caveats(self) -> list[str]:
        """What this verdict could not check; empty when it checked everything it knows of."""
        notes = []
        if not self.effects_declared:
            notes.append(
                "no side effects were declared, so duplicate effects were not checked: an effect "
                "outside durable_execute, or a non-idempotent call re-executed after a crash, "
                "would pass unseen (declare effects: durable sweep --effect MODULE:NAME, or "
                "durable_ledger.wrap in a test) (PLG-3)"
            )
        if self.unchecked:
            notes.append(
                f"{len(self.unchecked)} call(s) ran again after a crash with no record and no "
                f"reconciler (DE-6) and no declared effect was booked for them: "
                f"{', '.join(self.unchecked)}; safe only if those calls are idempotent"
            )
        return notes

    def summary(self) -> str:
        """One line: how many fault points, how many failed, and whether that can be called safe."""
        head = f"{len(self.outcomes)} fault points, {len(self.failing)} with violations"
        if not self.ok:
            return f"{head}: UNSAFE"
        return f"{head}: NOT VERIFIED (see the notes above)" if self.caveats() else f"{head}: safe"
