"""Crash runs and the durable invariants they are checked against (spec REC-3, REC-4, REC-6; PLG-1).

``learn`` runs an agent crash-free and returns every fault point it reached; ``run_scenario`` runs it
again crashing at each selector of a :class:`~pytest_durable.scenario.Scenario`; ``check`` compares the
two. Shared by the fixtures, the sweep marker, schedule exploration and ``durable sweep``.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from reference_runtime import Agent, CallId, FaultInjector, FaultPoint, Phase, Runner, RunResult
from reference_runtime.clock import let_time_pass
from reference_runtime.stores.base import ActionStateStore

from . import snapshot_start as snap
from .scenario import Scenario, selector_for

if TYPE_CHECKING:
    from .ledger import Ledger

#: Makes a fresh, empty store (each crash run of a sweep gets its own).
NewStore = Callable[[], ActionStateStore]


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


def call_key(call: CallId) -> str:
    return f"{call.key}/{call.seq}/{call.action}/{call.call_index}"


def learn(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: NewStore,
    ledger: Ledger | None = None,
    **options: Any,
) -> tuple[RunResult, list[FaultPoint]]:
    """The crash-free result and the fault points it reached, in order."""
    if ledger is not None:
        ledger.new_run("the crash-free run", baseline=True)
    let_time_pass(options.get("clock"))  # runs compared with each other never share an instant (PLG-13)
    injector = FaultInjector()
    result = Runner(agent, store(), injector=injector, **options).run(inputs)
    return result, list(injector.trace)


def run_scenario(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: NewStore,
    scenario: Scenario,
    ledger: Ledger | None = None,
    **options: Any,
) -> tuple[RunResult, FaultInjector]:
    """Run with ``scenario``'s crashes, recovering after each."""
    if ledger is not None:
        ledger.new_run(f"the run crashing at {scenario.describe()}")
    let_time_pass(options.get("clock"))
    # Random schedules may hold crashes that recovery never reaches; the caller checks what fired.
    injector = FaultInjector(list(scenario.schedule), must_fire=False)
    result = Runner(agent, store(), injector=injector, **scenario_options(scenario, options)).run(inputs)
    return result, injector


def scenario_options(scenario: Scenario, options: dict[str, Any]) -> dict[str, Any]:
    """The runner options of a run under ``scenario``: its switches over the caller's options."""
    extra = scenario.runner_options()
    merged = {**options, **extra}
    if "config" in extra:
        merged["config"] = {**(options.get("config") or {}), **extra["config"]}  # type: ignore[dict-item]
    return merged


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
    # Which attempt (failovers before it) each recorded call's terminal record landed in, by call id
    # (key, seq, action, call index): a fault point's fields 1..4, a journal entry's CallId. Attempt n is
    # the trace up to and including the n-th fired point. Comprehensions, not one loop with branches: a
    # sweep checks one scenario per point, each with a trace as long as the run (COST-4).
    trace = injector.trace
    after_record = Phase.AFTER_RECORD  # once, not per point: enum attribute access is slow on 3.11
    recorded: dict[tuple[Any, ...], int] = {}
    start = 0
    ends = [i + 1 for i in _positions(trace, injector.fired)] + [len(trace)]
    for attempt, end in enumerate(ends):
        landed = dict.fromkeys([p[1:5] for p in trace[start:end] if p.phase is after_record], attempt)
        landed.update(recorded)  # a call keeps the first attempt its record landed in
        recorded, start = landed, end
    # A slice copies a journal view in one go; iterating it yields entry by entry.
    executions = [e for e in result.journal[:] if e.source == "executed"]
    out.re_executed = [
        call_key(e.call_id) for e in executions if e.attempt and recorded.get(e.call_id, e.attempt) < e.attempt
    ]
    executed = Counter(e.call_id for e in executions)
    expected_runs, expected = _expected(baseline)
    rec3 = set(out.re_executed)
    # Only a call that ran twice, or that the crash-free run did not make, can have run more often.
    suspects = [c for c, n in executed.items() if n > 1] + list(executed.keys() - expected_runs.keys())
    out.repeated = sorted(
        str(c) for c in set(suspects) if executed[c] > expected_runs.get(c, 0) and call_key(c) not in rec3
    )
    for cid in sorted(set(out.re_executed)):
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
        out.violations.extend(ledger.violations())
        booked = {r.call_id for r in ledger.rows()}
    out.unchecked = [c for c in out.repeated if c not in booked]
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


def _positions(trace: list[FaultPoint], fired: Sequence[FaultPoint]) -> list[int]:
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


def points_to_crash(points: Sequence[FaultPoint]) -> list[FaultPoint]:
    """Each distinct point once, in the order first reached (a point repeated in a run, e.g. a retried
    call, is crashed at its first occurrence)."""
    seen: set[FaultPoint] = set()
    unique = []
    for p in points:
        if p not in seen:
            seen.add(p)
            unique.append(p)
    return unique


#: The start_reason of every scenario of a sweep asked to re-execute.
FORCED = "re-execution was asked for (re_execute=True, durable sweep --re-execute, --durable-re-execute)"
#: The start_reason of the one point a sweep runs both ways before trusting its snapshots.
SAMPLED = "the point sampled to check the snapshot path against re-execution"


def sweep(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: NewStore,
    ledger: Ledger | None = None,
    *,
    re_execute: bool = False,
    **options: Any,
) -> list[PointOutcome]:
    """Crash once at every point of the crash-free run, recover, check.

    Each scenario starts from a snapshot of the crash-free run at its point when that is equivalent to
    running the agent up to the crash (PLG-16), and re-executes otherwise, each outcome saying why
    (PLG-17). ``re_execute`` forces re-execution everywhere; the checks that choose the path (a second
    crash-free run, a sampled point run both ways) run either way, so that both paths run the agent the
    same number of times before the scenarios and their verdicts stay comparable even for an agent whose
    results depend on earlier runs in the process."""
    ref = snap.record(agent, inputs, store, ledger, options)
    ref.reason = snap.why_not(ref, store, ledger)
    again = None
    if ref.reason is None:
        again = snap.record(agent, inputs, store, ledger, options, "a second crash-free run", baseline=False)
    snap.prepare(ref, again)
    baseline = ref.result
    points = points_to_crash(ref.trace)
    mismatch = options.get("mismatch", "lenient")
    done: dict[FaultPoint, PointOutcome] = {}
    usable = [p for p in points if ref.usable(p) is None]
    if usable:
        sample = usable[len(usable) // 2]
        scenario = Scenario((selector_for(sample),), mismatch)
        verdict = _sample(ref, sample, scenario, agent, inputs, store, ledger, options)
        if isinstance(verdict, str):
            ref.reason = verdict
        else:
            verdict.start_reason = FORCED if re_execute else SAMPLED
            done[sample] = verdict
    outcomes = []
    # Points with the same snapshot come one after another (a store only grows along the run): keep the
    # last recovery only, so a sweep holds one recovered result at a time, not one per store state.
    shared: tuple[Any, snap.Recovery | None] = (None, None)
    for point in points:
        if point in done:
            outcomes.append(done[point])
            continue
        scenario = Scenario((selector_for(point),), mismatch)
        reason = FORCED if re_execute else ref.usable(point)
        if reason is None:
            key = snap.recovery_key(ref, point)
            reuse = shared[1] if shared[0] == key else None
            result, injector, recovery = snap.start(
                ref, point, scenario, ledger, scenario_options(scenario, options), reuse
            )
            shared = (key, recovery)
        else:
            result, injector = run_scenario(agent, inputs, store, scenario, ledger, **options)
        outcome = check(scenario, baseline, result, injector, ledger)
        if reason is None:
            outcome.start = "snapshot"
        outcome.start_reason = reason
        outcomes.append(outcome)
    return outcomes


def _sample(
    ref: snap.Reference,
    point: FaultPoint,
    scenario: Scenario,
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: NewStore,
    ledger: Ledger | None,
    options: dict[str, Any],
) -> PointOutcome | str:
    """Run ``point``'s scenario from its snapshot and by re-execution; the re-executed outcome if both
    agree on everything the checks read, else why the snapshot path is not used (PLG-17)."""
    seen = []
    try:
        for path in ("snapshot", "re-executed"):
            if path == "snapshot":
                merged = scenario_options(scenario, options)
                result, injector, _ = snap.start(ref, point, scenario, ledger, merged, trace_recovery=True)
            else:
                result, injector = run_scenario(agent, inputs, store, scenario, ledger, **options)
            outcome = check(scenario, ref.result, result, injector, ledger)
            seen.append((outcome, _observed(outcome, result, injector, ledger)))
    except Exception as exc:
        return f"the scenario sampled at {point.describe()} raised {type(exc).__name__}"
    if seen[0][1] != seen[1][1]:
        return (
            f"the scenario sampled at {point.describe()} ended differently from its snapshot than re-executed "
            "(the agent's run before the crash changes state the snapshot does not hold)"
        )
    return seen[1][0]


def _observed(outcome: PointOutcome, result: RunResult, injector: FaultInjector, ledger: Ledger | None) -> Any:
    return (
        outcome.violations,
        outcome.re_executed,
        outcome.duplicates,
        outcome.repeated,
        outcome.unchecked,
        result.outputs,
        dict(result.memory),
        [e[:6] for e in result.journal],
        list(injector.trace),
        list(injector.fired),
        [e.key for e in result.emitted],
        ledger.rows() if ledger is not None else None,
    )


def start_summary(outcomes: Sequence[PointOutcome]) -> list[str]:
    """How a sweep's scenarios started: how many from snapshots, and each reason to re-execute with how
    many points it held for (``durable sweep -v``, ``durable.sweep`` with ``pytest -v``)."""
    snapshots = sum(o.start == "snapshot" for o in outcomes)
    lines = [f"{snapshots} of {len(outcomes)} scenarios started from a snapshot of the crash-free run (PLG-16)"]
    reasons = Counter(o.start_reason for o in outcomes if o.start_reason is not None)
    lines += [f"{n} re-executed: {reason} (PLG-17)" for reason, n in reasons.items()]
    return lines


@dataclass(frozen=True)
class LearningFailed:
    """The parameter of a ``durable_sweep`` test whose agent failed while its fault points were learnt."""

    message: str


class MarkerError(TypeError):
    """A ``durable_sweep`` marker or harness call with bad arguments; the message names the test, the
    argument and the fix (PLG-9)."""


#: Runner arguments the harness sets itself, with what to use instead.
HARNESS_OWNED = {
    "store": "the store comes from --durable-store URL (ini durable_store); a custom store needs "
    "reference_runtime.Runner(agent, store) directly",
    "injector": "crashes come from the sweep, or from crash_at= / durable.crash(..., at=...)",
    "reopen_store": "the harness reopens stores itself",
}


@functools.cache
def _runner_options() -> frozenset[str]:
    return frozenset(inspect.signature(Runner.__init__).parameters) - {"self", "agent", *HARNESS_OWNED}


def check_runner_options(options: dict[str, Any], where: str) -> None:
    """Refuse options the harness owns or the runner does not take, naming the alternative."""
    for name in options:
        if name in HARNESS_OWNED:
            raise MarkerError(f"{where}: {name}= is not supported here: {HARNESS_OWNED[name]}")
    known = _runner_options()
    unknown = sorted(set(options) - known)
    if unknown:
        raise MarkerError(f"{where}: unknown runner option(s) {unknown}; known: {sorted(known)}")


def sweep_marker(args: Sequence[Any], kwargs: dict[str, Any], where: str) -> tuple[type[Agent], list[tuple[str, Any]]]:
    """The agent and inputs of a ``durable_sweep(agent, inputs, **runner_options)`` marker, checked."""
    from reference_runtime.flink_agents_compat import is_agent

    usage = "use @pytest.mark.durable_sweep(AgentClass, [(key, input), ...], **runner_options)"
    if len(args) != 2:
        raise MarkerError(f"{where}: durable_sweep takes 2 positional arguments, got {len(args)}; {usage}")
    agent, inputs = args
    if not is_agent(agent):
        raise MarkerError(
            f"{where}: durable_sweep's first argument must be an Agent subclass (or a flink_agents "
            f"Agent), got {agent!r}; "
            f"{usage}"
        )
    if isinstance(inputs, dict):
        raise MarkerError(
            f"{where}: durable_sweep's inputs are a dict; pass a list of (key, input) pairs, "
            f"e.g. list(inputs.items()) for {{key: input}}"
        )
    pairs = list(inputs) if isinstance(inputs, Sequence) and not isinstance(inputs, str | bytes) else None
    bad = pairs is None or any(not isinstance(p, tuple | list) or len(p) != 2 for p in pairs)
    if bad or not pairs:
        raise MarkerError(
            f"{where}: durable_sweep's inputs must be a non-empty list of (key, input) pairs, "
            f"got {inputs!r:.80}; {usage}"
        )
    check_runner_options(kwargs, f"{where}: durable_sweep")
    return agent, [(str(k), v) for k, v in pairs]


def sweep_params(args: Sequence[Any], kwargs: dict[str, Any], where: str) -> tuple[list[Any], list[str]]:
    """Parameters and ids for a ``durable_sweep(agent, inputs, **options)`` marker: the crash-free run
    (``crash=none``) then one selector per fault point it reaches (``crash=call3:after-effect``; narrowed
    with ``?key=…&seq=…`` only where the short label is ambiguous). Learned on the memory store and a
    virtual clock, at collection, in a canonical order so that every xdist worker collects the same ids.
    If the agent fails, the one parameter is a :class:`LearningFailed` that fails its test with the reason."""
    from reference_runtime.clock import VirtualClock
    from reference_runtime.stores.memory import InMemoryStore

    from .scenario import format_crash

    agent, inputs = sweep_marker(args, kwargs, where)
    try:
        # On a virtual clock: retry backoff and batch deadlines must not make collection wait (PLG-11).
        _, points = learn(agent, inputs, InMemoryStore, None, **{**kwargs, "clock": VirtualClock()})
    except Exception as exc:
        # One test that errors with the reason, rather than a traceback that stops the session (PLG-12).
        name = getattr(agent, "__qualname__", type(agent).__qualname__)
        return [
            LearningFailed(
                f"{where}: the crash-free run of {name} on the marker's inputs failed "
                f"while its fault points were learnt, so no crash test can run: "
                f"{type(exc).__name__}: {exc}"
            )
        ], ["crash=none"]
    order = list(Phase)
    # Per input: its calls in order, then its action phases; run-level points (checkpoints) last.
    unique = sorted(
        points_to_crash(points),
        key=lambda p: (
            p.key is None,
            p.key or "",
            p.seq or 0,
            p.action or "",
            p.call_index is None,
            p.call_index or 0,
            order.index(p.phase),
        ),
    )
    labels = Counter(p.label() for p in unique)
    params: list[Any] = [None]
    ids = ["crash=none"]
    for p in unique:
        selector = selector_for(p)
        params.append(selector)
        ids.append("crash=" + (p.label() if labels[p.label()] == 1 else format_crash(selector)))
    return params, ids
