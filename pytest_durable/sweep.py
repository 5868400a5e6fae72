"""Crash runs and the durable invariants they are checked against (spec REC-3, REC-4, REC-6; PLG-1).

``learn`` runs an agent crash-free and returns every fault point it reached; ``run_scenario`` runs it
again crashing at each selector of a :class:`~pytest_durable.scenario.Scenario`; ``check`` compares the
two. Shared by the fixtures, the sweep marker, schedule exploration and ``durable sweep``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reference_runtime import Agent, CallId, FaultInjector, FaultPoint, Phase, Runner, RunResult
from reference_runtime.clock import let_time_pass
from reference_runtime.stores.base import ActionStateStore

from .scenario import Scenario, selector_for

if TYPE_CHECKING:
    from .ledger import Ledger

StoreFactory = Callable[[], ActionStateStore]


@dataclass
class PointOutcome:
    """What happened when a run crashed as ``scenario`` says and recovered."""

    scenario: Scenario
    result: RunResult
    fired: list[FaultPoint] = field(default_factory=list)
    re_executed: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

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


def learn(agent: type[Agent], inputs: Sequence[tuple[str, Any]], store: StoreFactory,
          ledger: Ledger | None = None, **options: Any) -> tuple[RunResult, list[FaultPoint]]:
    """The crash-free result and the fault points it reached, in order."""
    if ledger is not None:
        ledger.new_run("the crash-free run", baseline=True)
    let_time_pass(options.get("clock"))  # runs compared with each other never share an instant (PLG-13)
    injector = FaultInjector()
    result = Runner(agent, store(), injector=injector, **options).run(inputs)
    return result, list(injector.trace)


def run_scenario(agent: type[Agent], inputs: Sequence[tuple[str, Any]], store: StoreFactory,
                 scenario: Scenario, ledger: Ledger | None = None, **options: Any,
                 ) -> tuple[RunResult, FaultInjector]:
    """Run with ``scenario``'s crashes, recovering after each."""
    if ledger is not None:
        ledger.new_run(f"the run crashing at {scenario.describe()}")
    let_time_pass(options.get("clock"))
    extra = scenario.runner_options()
    merged = {**options, **extra}
    if "config" in extra:
        merged["config"] = {**(options.get("config") or {}), **extra["config"]}  # type: ignore[dict-item]
    # Random schedules may hold crashes that recovery never reaches; the caller checks what fired.
    injector = FaultInjector(list(scenario.schedule), must_fire=False)
    result = Runner(agent, store(), injector=injector, **merged).run(inputs)
    return result, injector


def check(scenario: Scenario, baseline: RunResult, result: RunResult, injector: FaultInjector,
          ledger: Ledger | None = None) -> PointOutcome:
    """Every durable invariant that ``result`` (a run with crashes) must keep against ``baseline``."""
    out = PointOutcome(scenario, result, list(injector.fired))
    where = out.where
    if result.outputs != baseline.outputs:
        out.violations.append(f"REC-6: outputs differ after a crash at {where}: "
                              f"{result.outputs!r} != crash-free {baseline.outputs!r}")
    if result.memory != baseline.memory:
        diff = sorted(k for k in set(result.memory) | set(baseline.memory)
                      if result.memory.get(k) != baseline.memory.get(k))
        out.violations.append(f"REC-6: memory of key(s) {diff} differs after a crash at {where}")
    # Which attempt (failovers before it) each recorded call's terminal record landed in, by call id
    # (key, seq, action, call index): a fault point's fields 1..4, a journal entry's CallId.
    recorded: dict[tuple[Any, ...], int] = {}
    attempt, fired = 0, list(injector.fired)
    after_record = Phase.AFTER_RECORD  # once, not per point: enum attribute access is slow on 3.11
    for p in injector.trace:
        if p.phase is after_record:
            recorded.setdefault(p[1:5], attempt)
        if fired and p is fired[0]:
            fired.pop(0)
            attempt += 1
    for entry in result.journal:
        if entry.source == "executed" and recorded.get(entry.call_id, entry.attempt) < entry.attempt:
            out.re_executed.append(call_key(entry.call_id))
    for cid in sorted(set(out.re_executed)):
        out.violations.append(f"REC-3: call {cid} had a persisted record but executed again after a crash at "
                              f"{where}")
    seen = Counter((e.key, e.seq, e.action) for e in result.emitted)
    expected = Counter((e.key, e.seq, e.action) for e in baseline.emitted)
    for k, n in sorted(seen.items()):
        if n > expected.get(k, 0):
            out.duplicates.append(f"{k[0]}/{k[1]}/{k[2]}")
            out.violations.append(f"REC-4: action {k[0]}/{k[1]}/{k[2]} emitted {n} output events after a crash "
                                  f"at {where}, {expected.get(k, 0)} without one")
    if ledger is not None:
        out.violations.extend(ledger.violations())
    return out


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


def sweep(agent: type[Agent], inputs: Sequence[tuple[str, Any]], store: StoreFactory,
          ledger: Ledger | None = None, **options: Any) -> list[PointOutcome]:
    """Crash once at every point of the crash-free run, recover, check."""
    baseline, points = learn(agent, inputs, store, ledger, **options)
    outcomes = []
    for point in points_to_crash(points):
        scenario = Scenario((selector_for(point),), options.get("mismatch", "lenient"))
        result, injector = run_scenario(agent, inputs, store, scenario, ledger, **options)
        outcomes.append(check(scenario, baseline, result, injector, ledger))
    return outcomes


@dataclass(frozen=True)
class LearningFailed:
    """The parameter of a ``durable_sweep`` test whose agent failed while its fault points were learnt."""

    message: str


def sweep_params(args: Sequence[Any], kwargs: dict[str, Any], where: str) -> tuple[list[Any], list[str]]:
    """Parameters and ids for a ``durable_sweep(agent, inputs, **options)`` marker: the crash-free run
    (``crash=none``) then one selector per fault point it reaches (``crash=call3:after-effect``; narrowed
    with ``?key=…&seq=…`` only where the short label is ambiguous). Learned on the memory store and a
    virtual clock, at collection, in a canonical order so that every xdist worker collects the same ids.
    If the agent fails, the one parameter is a :class:`LearningFailed` that fails its test with the reason."""
    from reference_runtime.clock import VirtualClock
    from reference_runtime.flink_agents_compat import is_agent
    from reference_runtime.stores.memory import InMemoryStore

    from .scenario import format_crash

    if len(args) != 2 or not is_agent(args[0]):
        raise TypeError(f"{where}: use @pytest.mark.durable_sweep(AgentClass, inputs, **runner_options)")
    agent, inputs = args[0], [(str(k), v) for k, v in args[1]]
    try:
        # On a virtual clock: retry backoff and batch deadlines must not make collection wait (PLG-11).
        _, points = learn(agent, inputs, InMemoryStore, None, **{**kwargs, "clock": VirtualClock()})
    except Exception as exc:
        # One test that errors with the reason, rather than a traceback that stops the session (PLG-12).
        name = getattr(agent, "__qualname__", type(agent).__qualname__)
        return [LearningFailed(f"{where}: the crash-free run of {name} on the marker's inputs failed "
                               f"while its fault points were learnt, so no crash test can run: "
                               f"{type(exc).__name__}: {exc}")], ["crash=none"]
    order = list(Phase)
    # Per input: its calls in order, then its action phases; run-level points (checkpoints) last.
    unique = sorted(points_to_crash(points), key=lambda p: (p.key is None, p.key or "", p.seq or 0, p.action or "",
                                                              p.call_index is None, p.call_index or 0,
                                                              order.index(p.phase)))
    labels = Counter(p.label() for p in unique)
    params: list[Any] = [None]
    ids = ["crash=none"]
    for p in unique:
        selector = selector_for(p)
        params.append(selector)
        ids.append("crash=" + (p.label() if labels[p.label()] == 1 else format_crash(selector)))
    return params, ids
