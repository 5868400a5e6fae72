"""Crash runs: learn an agent's fault points, run it crashing as a scenario says, sweep every point
(spec PLG-1, PLG-16, PLG-17, CONF-4).

``learn`` runs an agent crash-free and returns every fault point it reached; ``run_scenario`` runs it
again crashing at each selector of a :class:`~reference_runtime.exploration.scenario.Scenario`;
:func:`~reference_runtime.exploration.verdict.check` compares the two; ``sweep`` does all three for every
point. Every run goes through a :class:`RunFunction`: the reference :class:`~reference_runtime.Runner` by
default, or a runner under test, which is how the conformance kit drives a third-party runner through the
same sweep. Shared by the fixtures, the sweep marker, schedule exploration, ``durable sweep`` and the kit.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reference_runtime import Agent, CallId, FaultInjector, FaultPoint, Phase, Runner, RunResult, durable
from reference_runtime.clock import let_time_pass
from reference_runtime.stores.base import ActionStateStore

from . import reached
from . import snapshot_start as snap
from .protocol import RunFunction, run_once
from .scenario import Scenario, selector_for
from .verdict import PointOutcome, check

if TYPE_CHECKING:
    from .ledger import Ledger

__all__ = [
    "FORCED",
    "HARNESS_OWNED",
    "MARKER_ONLY",
    "SAMPLED",
    "LearningFailed",
    "MarkerError",
    "NewStore",
    "Progress",
    "Shard",
    "capturing",
    "check_runner_options",
    "check_shard",
    "judge_on_recorded_values",
    "learn",
    "marker_options",
    "marker_shards",
    "points_to_crash",
    "run_scenario",
    "scenario_options",
    "shard_points",
    "start_summary",
    "sweep",
    "sweep_marker",
    "sweep_params",
]

#: Makes a fresh, empty store (each crash run of a sweep gets its own).
NewStore = Callable[[], ActionStateStore]
#: Told (points done, points in all, crashes fired) as a sweep goes.
Progress = Callable[[int, int, int], None]


def learn(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: NewStore,
    ledger: Ledger | None = None,
    *,
    run: RunFunction | None = None,
    **options: Any,
) -> tuple[RunResult, list[FaultPoint]]:
    """The crash-free result and the fault points it reached, in order."""
    if ledger is not None:
        ledger.new_run("the crash-free run", baseline=True)
    let_time_pass(options.get("clock"))  # runs compared with each other never share an instant (PLG-13)
    injector = FaultInjector()
    result = run_once(run, agent, inputs, store(), injector, options)
    reached.crash_free(agent, injector.trace)  # crash coverage (COV-2)
    return result, list(injector.trace)


def run_scenario(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: NewStore,
    scenario: Scenario,
    ledger: Ledger | None = None,
    *,
    run: RunFunction | None = None,
    **options: Any,
) -> tuple[RunResult, FaultInjector]:
    """Run with ``scenario``'s crashes, recovering after each."""
    if ledger is not None:
        ledger.new_run(f"the run crashing at {scenario.describe()}")
    let_time_pass(options.get("clock"))
    # Random schedules may hold crashes that recovery never reaches; the caller checks what fired.
    injector = FaultInjector(list(scenario.schedule), must_fire=False)
    result = run_once(run, agent, inputs, store(), injector, scenario_options(scenario, options))
    reached.crashed(agent, injector.fired)  # crash coverage (COV-2)
    return result, injector


def scenario_options(scenario: Scenario, options: dict[str, Any]) -> dict[str, Any]:
    """The runner options of a run under ``scenario``: its switches over the caller's options."""
    extra = scenario.runner_options()
    merged = {**options, **extra}
    if "config" in extra:
        merged["config"] = {**(options.get("config") or {}), **extra["config"]}  # type: ignore[dict-item]
    return merged


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
    run: RunFunction | None = None,
    progress: Progress | None = None,
    shard: tuple[int, int] | None = None,
    **options: Any,
) -> list[PointOutcome]:
    """Crash once at every point of the crash-free run, recover, check; a crash that does not fire where the
    crash-free run reached its point is a violation (PLG-19). ``run`` is the runner (default: the reference
    :class:`~reference_runtime.Runner`); a runner under test re-executes every scenario.

    Each scenario starts from a snapshot of the crash-free run at its point when that is equivalent to
    running the agent up to the crash (PLG-16), and re-executes otherwise, each outcome saying why
    (PLG-17). ``re_execute`` forces re-execution everywhere; the checks that choose the path (a second
    crash-free run, a sampled point run both ways) run either way, so that both paths run the agent the
    same number of times before the scenarios and their verdicts stay comparable even for an agent whose
    results depend on earlier runs in the process.

    ``progress`` is called with (points done, points in all, crashes fired so far) once the points are known
    and after every scenario (``durable sweep`` draws its progress line with it).

    ``shard=(k, n)`` runs the k-th (from 0) of n contiguous parts of the points, cut where the scenarios'
    estimated costs are equal (:func:`shard_points`), so n processes together run every point once; each
    runs the crash-free runs and the sampled points as a whole sweep does, and so decides alike (PLG-29)."""
    if shard is not None:
        check_shard(shard)
    with _fewer_full_collections():
        return _sweep(agent, inputs, store, ledger, re_execute, run, progress, shard, options)


@contextlib.contextmanager
def _fewer_full_collections() -> Iterator[None]:
    """Collect the garbage collector's oldest generation 100 times less often while a sweep runs, and restore
    the thresholds after. A sweep keeps every point's outcome and allocates a journal entry per replayed
    call, and each full collection walks all it keeps: 30 % of a 2 000-call agent's sweep (benchmark P9b),
    which no generation-0 or -1 setting changed. Younger garbage is collected as before."""
    global _gc_sweeps, _gc_before
    with _GC_LOCK:  # sweeps in several threads: the first in raises the threshold, the last out restores it
        _gc_sweeps += 1
        if _gc_sweeps == 1:
            _gc_before = gc.get_threshold()
            gc.set_threshold(_gc_before[0], _gc_before[1], _gc_before[2] * 100)
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_sweeps -= 1
            if _gc_sweeps == 0:
                gc.set_threshold(*_gc_before)


#: Sweeps running now, and the collector's thresholds from before the first of them.
_gc_sweeps = 0
_gc_before: tuple[int, int, int] = (0, 0, 0)
_GC_LOCK = threading.Lock()


def _sweep(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: NewStore,
    ledger: Ledger | None,
    re_execute: bool,
    run: RunFunction | None,
    progress: Progress | None,
    shard: tuple[int, int] | None,
    options: dict[str, Any],
) -> list[PointOutcome]:
    with capturing() as ref_values:
        ref = snap.record(agent, inputs, store, ledger, options, run=run)
    ref.reason = snap.why_not(ref, store, ledger, run)
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
        verdict = _sample(ref, sample, scenario, agent, inputs, store, ledger, options, ref_values)
        if isinstance(verdict, str):
            ref.reason = verdict
        else:
            verdict.start_reason = FORCED if re_execute else SAMPLED
            done[sample] = verdict
        # Run either way, as the sample above: both paths run the agent equally often (PLG-16).
        _sample_convergence(ref, usable, ledger, options)
    if shard is not None:
        points = shard_points(ref, points, shard, re_execute)
    outcomes: list[PointOutcome] = []
    fired = 0
    if progress is not None:
        progress(0, len(points), 0)
    # Points with the same snapshot come one after another (a store only grows along the run): keep the
    # last recovery only, so a sweep holds one recovered result at a time, not one per store state.
    shared: tuple[Any, snap.Recovery | None, FaultPoint | None, dict[CallId, tuple[str, durable.Outcome]]] = (
        None,
        None,
        None,
        {},
    )
    for point in points:
        if point in done:
            outcomes.append(done[point])
            fired += bool(done[point].fired)
            if progress is not None:
                progress(len(outcomes), len(points), fired)
            continue
        scenario = Scenario((selector_for(point),), mismatch)
        reason = FORCED if re_execute else ref.usable(point)
        if reason is None:
            key = snap.recovery_key(ref, point)
            reuse = shared[1] if shared[0] == key else None
            with capturing() as found:
                result, injector, recovery = snap.start(
                    ref, point, scenario, ledger, scenario_options(scenario, options), reuse
                )
            if reuse is None:
                shared = (key, recovery, point, found)
            if recovery.converged is not None:
                # Converged on the crash-free run's state (COST-7): the rest of the run is the crash-free
                # run's, so its outputs and memory cannot differ (REC-6) and there is nothing to re-judge.
                outcome = snap.check_converged(ref, scenario, result, injector, recovery)
            else:
                outcome = check(scenario, baseline, result, injector, ledger)
                if _rec6(outcome):
                    # From a snapshot, the calls before the crash ran first in the crash-free run; a shared
                    # recovery ran its calls once, for the first of its points. Gathered only when judged:
                    # the calls before a point are as many as the point is deep (P9b).
                    first, ran = shared[2], shared[3]
                    assert first is not None
                    values = {**ran, **_ran_before(ref, first, ref_values)}
                    judge_on_recorded_values(outcome, agent, inputs, store, ledger, ref_values, values, options)
        else:
            with capturing() as values:
                result, injector = run_scenario(agent, inputs, store, scenario, ledger, run=run, **options)
            outcome = check(scenario, baseline, result, injector, ledger)
            if run is None:
                judge_on_recorded_values(outcome, agent, inputs, store, ledger, ref_values, values, options)
        if not outcome.fired:
            outcome.violations.append(
                f"PLG-19: the crash at {point.describe()} never fired: the run did not reach the point the crash-free "
                "run reached (a nondeterministic agent or runner)"
            )
        if reason is None:
            outcome.start = "snapshot"
        outcome.start_reason = reason
        outcomes.append(outcome)
        fired += bool(outcome.fired)
        if progress is not None:
            progress(len(outcomes), len(points), fired)
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
    ref_values: dict[CallId, tuple[str, durable.Outcome]],
) -> PointOutcome | str:
    """Run ``point``'s scenario from its snapshot and by re-execution; the re-executed outcome if both
    agree on everything the checks read, else why the snapshot path is not used (PLG-17)."""
    seen = []
    try:
        for path in ("snapshot", "re-executed"):
            with capturing() as values:
                if path == "snapshot":
                    values.update(_ran_before(ref, point, ref_values))
                    merged = scenario_options(scenario, options)
                    result, injector, _ = snap.start(
                        ref, point, scenario, ledger, merged, trace_recovery=True, converge=False
                    )
                else:
                    result, injector = run_scenario(agent, inputs, store, scenario, ledger, **options)
            outcome = check(scenario, ref.result, result, injector, ledger)
            judge_on_recorded_values(outcome, agent, inputs, store, ledger, ref_values, values, options)
            seen.append((outcome, _observed(outcome, result, injector, ledger)))
    except Exception as exc:
        return f"the scenario sampled at {point.describe()} raised {type(exc).__name__}"
    if seen[0][1] != seen[1][1]:
        return (
            f"the scenario sampled at {point.describe()} ended differently from its snapshot than re-executed "
            "(the agent's run before the crash changes state the snapshot does not hold)"
        )
    return seen[1][0]


@contextlib.contextmanager
def capturing() -> Iterator[dict[CallId, tuple[str, durable.Outcome]]]:
    """Collect the args digest and outcome of every durable call that runs in the block, by call id, the
    first run of each (PLG-25)."""
    found: dict[CallId, tuple[str, durable.Outcome]] = {}
    durable.captured = found
    try:
        yield found
    finally:
        durable.captured = None


def check_shard(shard: Any) -> None:
    """Refuse a ``shard`` that is not a pair ``(k, n)`` of ints with 0 <= k < n."""
    ok = (
        isinstance(shard, tuple) and len(shard) == 2 and all(type(v) is int for v in shard) and 0 <= shard[0] < shard[1]
    )
    if not ok:
        raise ValueError(
            f"shard must be a pair (k, n) of ints with 0 <= k < n, e.g. (0, 2) for the first of two; got {shard!r}"
        )


def shard_points(
    ref: snap.Reference, points: Sequence[FaultPoint], shard: tuple[int, int], re_execute: bool = False
) -> list[FaultPoint]:
    """The k-th of n contiguous parts of ``points`` (``shard=(k, n)``), cut so that the parts cost about the
    same: a scenario started from a snapshot costs the calls its recovery replays (its call index), paid by
    the first of the points that share a recovery (COST-4), a re-executed one a whole run, and every point
    its own start and check.
    A cut never separates points that share a recovery. The same points and crash-free run give the same
    parts in every process (PLG-29)."""
    k, n = shard
    weights: list[int] = []
    starts: list[bool] = []
    previous: Any = object()
    for p in points:
        if not re_execute and ref.usable(p) is None:
            key = snap.recovery_key(ref, p)
            first = key != previous
            previous = key
            weights.append(((p.call_index or 0) if first else 0) + _POINT_COST)
        else:
            previous = object()
            first = True
            weights.append(len(ref.trace) + _POINT_COST)
        starts.append(first)
    total = sum(weights)
    cuts = [0]
    done = 0
    for i, w in enumerate(weights):
        # Cut before point i once the parts so far hold their share, at a point that starts a recovery.
        if len(cuts) < n and starts[i] and done * n >= total * len(cuts):
            cuts.append(i)
        done += w
    cuts += [len(points)] * (n + 1 - len(cuts))
    return list(points[cuts[k] : cuts[k + 1]])


#: What a point costs beside its recovery's replays (its store, start and check), in replayed calls: about
#: 0.15 ms against 0.46 µs per planned replay (COST-8) in sweeps of 500 to 5 000 calls (benchmark P9b).
_POINT_COST = 330


def _rec6(outcome: PointOutcome) -> bool:
    return any(v.startswith("REC-6") for v in outcome.violations)


def _ran_before(
    ref: snap.Reference, point: FaultPoint, ref_values: dict[CallId, tuple[str, durable.Outcome]]
) -> dict[CallId, tuple[str, durable.Outcome]]:
    """The values of the calls the crash-free run ran before ``point``: a scenario started from its snapshot
    ran them there, first (PLG-25)."""
    end = ref.trace.index(point)
    ran = {
        CallId(str(p.key), p.seq or 0, str(p.action), p.call_index or 0, p.execution)
        for p in ref.trace[:end]
        if p.phase is Phase.AFTER_EFFECT
    }
    return {cid: ref_values[cid] for cid in ran if cid in ref_values}


def judge_on_recorded_values(
    outcome: PointOutcome,
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: NewStore,
    ledger: Ledger | None,
    baseline_values: dict[CallId, tuple[str, durable.Outcome]],
    crash_values: dict[CallId, tuple[str, durable.Outcome]],
    options: dict[str, Any],
) -> None:
    """Recorded values are the reference (PLG-25): a crash run starts, and its recovery runs, later than the
    crash-free run (PLG-13), so a value one of its calls returned (the time read by
    ``ctx.durable_execute(time.time)``) may differ from the crash-free run's. When its outputs or memory differ
    (REC-6), hold them against the crash-free run whose calls return, instead of running, the value each call
    returned the first time it ran in the crash run (``crash_values``; from a snapshot, a call that ran before
    the point ran in the crash-free run) and the crash-free run's value for a call that did not run in it
    (``baseline_values``): each an args digest and outcome by call id. Equal, the difference came from what
    the calls returned, not from recovery, and the REC-6 lines are dropped. A call that ran again after the
    crash and returned another value (a second charge, the time read again after the restart) still shows
    as REC-6; the other checks stand."""
    if not crash_values or not any(v.startswith("REC-6") for v in outcome.violations):
        return
    values = {cid: found for cid, (_, found) in {**baseline_values, **crash_values}.items()}
    if all(baseline_values.get(cid, (None, None))[1] == values[cid] for cid in crash_values):
        return  # the crash run's calls returned what the crash-free run's did: the difference is recovery's
    if ledger is not None:
        ledger.new_run("the crash-free run replaying the crash run's recorded values")
    durable.replayed = values
    try:
        reference = Runner(agent, store(), injector=FaultInjector(), **options).run(inputs)
    except Exception:  # the replayed values take the agent elsewhere: keep the verdict as it is
        return
    finally:
        durable.replayed = None
    if reference.outputs == outcome.result.outputs and reference.memory == outcome.result.memory:
        outcome.violations = [v for v in outcome.violations if not v.startswith("REC-6")]


def _sample_convergence(
    ref: snap.Reference, points: Sequence[FaultPoint], ledger: Ledger | None, options: dict[str, Any]
) -> None:
    """Run the middle point at which a recovery may converge (spec COST-7) from its snapshot twice, to its
    end and stopped where it converges; unless both end alike, no scenario of the sweep stops early."""
    if ref.reason is not None or ref.no_converge is not None or ledger is not None:
        return
    eligible = [
        p
        for p in points
        if p.call_index is not None and ref.usable(p) is None and ref.tails[ref.injector.marks[p].trace] is None
    ]
    if not eligible:
        return
    point = eligible[len(eligible) // 2]
    scenario = Scenario((selector_for(point),), options.get("mismatch", "lenient"))
    merged = scenario_options(scenario, options)
    seen = []
    try:
        for converge in (False, True):
            result, injector, recovery = snap.start(
                ref, point, scenario, None, merged, trace_recovery=True, converge=converge
            )
            if recovery.converged is not None:
                outcome = snap.check_converged(ref, scenario, result, injector, recovery)
            else:
                outcome = check(scenario, ref.result, result, injector)
            seen.append(_observed(outcome, result, injector, None))
    except Exception as exc:
        ref.no_converge = f"the scenario sampled at {point.describe()} raised {type(exc).__name__}"
        return
    if seen[0] != seen[1]:
        ref.no_converge = (
            f"the scenario sampled at {point.describe()} ended differently stopped where its recovery converged "
            "than run to its end (its recovery depends on more than the state compared, COST-7)"
        )


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
class Shard:
    """The parameter of one part of a ``durable_sweep(..., shards=n)`` test: part ``index`` (from 0) of
    ``count``, of a crash-free run that reached ``points`` distinct fault points at collection (PLG-29)."""

    index: int
    count: int
    points: int

    def describe(self) -> str:
        return f"part {self.index + 1} of {self.count} ({self.points} fault points in all)"


#: Keyword arguments of ``durable_sweep`` that are the marker's own, not runner options.
MARKER_ONLY = ("shards",)


def marker_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A ``durable_sweep`` marker's keyword arguments without its own (:data:`MARKER_ONLY`): the runner's."""
    return {k: v for k, v in kwargs.items() if k not in MARKER_ONLY}


def marker_shards(kwargs: dict[str, Any], where: str, workers: int) -> int | None:
    """The ``shards=`` of a ``durable_sweep`` marker: None (a test per fault point), an int >= 1, or
    ``"auto"``, which is ``workers`` (the xdist workers of the session, 1 without xdist)."""
    if "shards" not in kwargs:
        return None
    shards = kwargs["shards"]
    if shards == "auto":
        return max(1, workers)
    if type(shards) is not int or shards < 1:
        raise MarkerError(
            f'{where}: durable_sweep\'s shards= must be an int >= 1 or "auto" (one part per xdist worker), '
            f"got {shards!r}"
        )
    return shards


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
    check_runner_options(marker_options(kwargs), f"{where}: durable_sweep")
    return agent, [(str(k), v) for k, v in pairs]


def sweep_params(
    args: Sequence[Any], kwargs: dict[str, Any], where: str, workers: int = 1
) -> tuple[list[Any], list[str]]:
    """Parameters and ids for a ``durable_sweep(agent, inputs, **options)`` marker: the crash-free run
    (``crash=none``) then one selector per fault point it reaches (``crash=call3:after-effect``; narrowed
    with ``?key=…&seq=…`` only where the short label is ambiguous). Learned on the memory store and a
    virtual clock, at collection, in a canonical order so that every xdist worker collects the same ids.
    With ``shards=n`` (``"auto"``: ``workers``), the crash-free run then n :class:`Shard` parts
    (``shard=1/n`` …), each sweeping its part of the points in one test (PLG-29).
    If the agent fails, the one parameter is a :class:`LearningFailed` that fails its test with the reason."""
    from reference_runtime.clock import VirtualClock
    from reference_runtime.stores.memory import InMemoryStore

    agent, inputs = sweep_marker(args, kwargs, where)
    shards = marker_shards(kwargs, where, workers)
    options = marker_options(kwargs)
    try:
        # On a virtual clock: retry backoff and batch deadlines must not make collection wait (PLG-11).
        _, points = learn(agent, inputs, InMemoryStore, None, **{**options, "clock": VirtualClock()})
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
    if shards is not None:
        count = len(points_to_crash(points))
        return [None, *(Shard(k, shards, count) for k in range(shards))], [
            "crash=none",
            *(f"shard={k + 1}/{shards}" for k in range(shards)),
        ]
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
        ids.append("crash=" + (p.label() if labels[p.label()] == 1 else selector.text()))
    return params, ids
