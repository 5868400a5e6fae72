"""``DurableHarness``, the object behind the ``durable`` fixture: run an agent on a chosen store, crash it
at chosen points or at every point, explore crash schedules, check golden journals and determinism."""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from reference_runtime import ActionState, Agent, CallResult, CrashAt, FaultInjector, FaultPoint, Runner, RunResult
from reference_runtime.clock import let_time_pass
from reference_runtime.records import StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.forwarding import ForwardingStore

from . import journal as journals
from . import reached
from .ledger import Ledger
from .scenario import Scenario
from .sweep import (
    NewStore,
    Shard,
    capturing,
    check_runner_options,
    judge_on_recorded_values,
    learn,
    marker_options,
    points_to_crash,
    run_scenario,
    sweep,
)
from .verdict import PointOutcome, Verdict, check

if TYPE_CHECKING:
    from .clock import FrozenClock
    from .stats import Stats
    from .world import World

T = TypeVar("T")


class DurableInvariantError(AssertionError):
    """A crash run broke a durable invariant; the message names the crash point(s), the call and the
    spec clause, and for schedules the marker that reproduces the failure."""


class DurableRun(RunResult):
    """A :class:`RunResult` plus every action state the run persisted (last version written, keyed by
    state key), read back through the store even if a checkpoint pruned it later."""

    def __init__(self, result: RunResult, records: dict[str, ActionState]) -> None:
        super().__init__(
            emitted=result.emitted,
            memory=result.memory,
            journal=result.journal,
            failovers=result.failovers,
            crashes=result.crashes,
        )
        self.records = records


class RecordingStore(ForwardingStore):
    """Forwards to a store and keeps a copy of each action state as last written. A whole state is read
    back once per ``put``; call-record deltas are applied to the copy, so recording does not re-read the
    state on every durable call."""

    def __init__(self, inner: ActionStateStore) -> None:
        super().__init__(inner)
        self.records: dict[str, ActionState] = {}
        #: The reference of each state in ``records`` (same keys): its business key, sequence number, action.
        self.refs: dict[str, StateRef] = {}
        #: Every call record as last written, by (key, seq, action, call index): completion clears a state's
        #: call results, this keeps them.
        self.results: dict[tuple[str, int, str, int], CallResult] = {}

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, state)
        kept = self.inner.get(ref)
        if kept is not None:
            self.records[ref.state_key] = kept
            self.refs[ref.state_key] = ref
            for n, result in enumerate(kept.call_results):
                self.results[(ref.key, ref.seq, ref.action.name, n)] = result

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        super().put_call_results(ref, index, results)
        for n, result in enumerate(results, index):
            self.results[(ref.key, ref.seq, ref.action.name, n)] = result
        kept = self.records.get(ref.state_key)
        if kept is not None:
            kept.call_results[index : index + len(results)] = list(results)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        super().truncate_call_results(ref, index)
        kept = self.records.get(ref.state_key)
        if kept is not None:
            del kept.call_results[index:]


#: How many runs a harness keeps for inspection (the latest ones).
KEPT_RUNS = 8


@dataclass(frozen=True)
class KeptStore:
    """A SQLite copy of one run's store, written for inspection (PLG-27): ``label`` says which run,
    ``path`` is the file, ``url`` its store URL and ``command`` the ``durable inspect`` line that shows it."""

    label: str
    path: Path

    @property
    def url(self) -> str:
        return f"sqlite:{self.path}"

    @property
    def command(self) -> str:
        return f"durable inspect {shlex.quote(self.url)}"


def _selectors(at: str | CrashAt | Iterable[str | CrashAt]) -> list[CrashAt]:
    items = [at] if isinstance(at, str | CrashAt) else list(at)
    return [CrashAt.parse(a) if isinstance(a, str) else a for a in items]


class DurableHarness:
    """Runs agents for one test. Created by the ``durable`` fixture; see docs/plugin/reference.md."""

    def __init__(
        self,
        store_factory: NewStore,
        url: str,
        *,
        stats: Stats | None = None,
        journal_dir: Path | None = None,
        test_name: str = "test",
        update_journals: bool = False,
        pinned: Sequence[Scenario] = (),
        seed: int = 0,
        max_examples: int = 100,
        sweep: tuple[Sequence[Any], dict[str, Any], CrashAt | Shard | None] | None = None,
        re_execute: bool = False,
    ) -> None:
        self._store_factory = store_factory
        self.url = url
        self.clock: FrozenClock | None = None
        self.stats = stats
        self.journal_dir = journal_dir
        self.test_name = test_name
        self.update_journals = update_journals
        self.pinned = list(pinned)
        self.seed = seed
        self.max_examples = max_examples
        self._sweep = sweep
        #: :meth:`sweep` re-executes up to every crash instead of starting from snapshots (PLG-16).
        self.re_execute = re_execute
        #: None without a ``durable_sweep`` marker; else whether :meth:`run` ran the marked agent yet.
        self.sweep_ran: bool | None = None if sweep is None else False
        #: The check of the last crash run made by :meth:`run` under a sweep marker.
        self.outcome: PointOutcome | None = None
        self._ledger: Ledger | None = None
        self._journal_uses: dict[str, int] = {}
        self._worlds: list[World[Any]] = []
        #: The latest runs worth inspecting (at most KEPT_RUNS): a label and the run's recording store.
        self.kept_runs: list[tuple[str, RecordingStore]] = []
        self._plain_runs = 0

    # -- plumbing ------------------------------------------------------------------------------------------

    @property
    def ledger(self) -> Ledger:
        """The side-effect ledger of this test (the ``durable_ledger`` fixture is the same object)."""
        if self._ledger is None:
            self._ledger = Ledger()
        return self._ledger

    def world(self, factory: Callable[[], T]) -> World[T]:
        """A fake outside world made fresh by ``factory`` for every run of this test: the crash-free run
        and each crash scenario (a crash and its recovery share one). Attribute access on the returned
        object goes to the current run's fake, so put it where the agent looks (``monkeypatch.setattr``)
        and a reconciler sees only what happened in its own run (PLG-8)."""
        from .world import World

        world = World(factory)
        self.ledger.on_new_run(world.fresh)
        self._worlds.append(world)
        return world

    def store_factory(self) -> NewStore:
        """A callable making a fresh empty store of the configured kind."""
        return self._store_factory

    def _recording(self, label: str) -> Callable[[], RecordingStore]:
        """A store factory whose stores record what the run wrote and are kept for inspection as ``label``."""

        def new() -> RecordingStore:
            store = RecordingStore(self._store_factory())
            self.kept_runs.append((label, store))
            del self.kept_runs[:-KEPT_RUNS]
            return store

        return new

    def _keep_failing(
        self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], scenario: Scenario, options: dict[str, Any]
    ) -> None:
        """Run a failing scenario once more, and the crash-free run before it, on stores kept for inspection
        (for the sweep and exploration paths, which do not keep the stores of every scenario they run)."""
        try:
            for world in self._worlds:
                world.fresh()
            learn(agent, inputs, self._recording("the crash-free run"), None, **options)
            for world in self._worlds:
                world.fresh()
            label = f"the run crashing at {scenario.describe()}, recovered"
            run_scenario(agent, inputs, self._recording(label), scenario, None, **options)
        except Exception:  # the failure being reported matters more than its copy
            pass

    def keep_stores(self, directory: Path) -> list[KeptStore]:
        """Write a SQLite copy of each kept run's store into ``directory`` (made if missing), one file per run:
        every action state the run wrote, as last written, the completed states a checkpoint pruned included
        (PLG-27). ``durable inspect`` reads each file (``KeptStore.command``)."""
        from reference_runtime.stores.sqlite import SqliteStore

        kept = []
        directory.mkdir(parents=True, exist_ok=True)
        for n, (label, recording) in enumerate(self.kept_runs, 1):
            slug = re.sub(r"[^A-Za-z0-9]+", "-", label.partition(" [")[0].removeprefix("the ")).strip("-")[:64]
            path = directory / f"{n}-{slug}.db"
            store = SqliteStore(path, synchronous="OFF")
            try:
                for state_key, state in recording.records.items():
                    store.put(recording.refs[state_key], state)
            finally:
                store.close()
            kept.append(KeptStore(label, path))
        return kept

    def _options(self, options: dict[str, Any]) -> dict[str, Any]:
        check_runner_options(options, "durable")
        if self.clock is not None and "clock" not in options:
            options = {**options, "clock": self.clock}
        return options

    def _count(self, **n: int) -> None:
        if self.stats is not None:
            self.stats.add(**n)

    # -- running -------------------------------------------------------------------------------------------

    def run(
        self,
        agent: type[Agent] | None = None,
        inputs: Sequence[tuple[str, Any]] | None = None,
        *,
        crash_at: str | CrashAt | Iterable[str | CrashAt] = (),
        **options: Any,
    ) -> DurableRun:
        """Run ``agent`` on ``inputs``; each selector of ``crash_at`` (e.g. ``"call1:after-effect"``)
        crashes the run in turn, followed by recovery. No invariant is checked: see :meth:`crash`.

        In a test marked ``durable_sweep(Agent, inputs)``, running that agent (the arguments default to the
        marker's) crashes at the test's fault point, recovers, and checks every durable invariant against a
        crash-free run before returning the recovered result."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        if self._sweep is not None:
            marked, marked_inputs = self._sweep[0][0], self._sweep[0][1]
            agent = agent or marked
            inputs = marked_inputs if inputs is None else inputs
            if agent is marked and not crash_at:
                return self._sweep_run(agent, inputs, {**marker_options(self._sweep[1]), **options})
        if agent is None or inputs is None:
            raise TypeError("durable.run() needs an agent class and inputs (outside a durable_sweep test)")
        return self._plain_run(agent, inputs, _selectors(crash_at), options)

    def _plain_run(
        self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], selectors: list[CrashAt], options: dict[str, Any]
    ) -> DurableRun:
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        return self._recorded_run(agent, inputs, selectors, options)[0]

    def _recorded_run(
        self,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        selectors: list[CrashAt],
        options: dict[str, Any],
        label: str | None = None,
    ) -> tuple[DurableRun, FaultInjector]:
        """:meth:`_plain_run`, with the injector that watched it; its store is kept as ``label`` (default:
        ``run N`` and its crashes)."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        injector = FaultInjector(list(selectors))
        self._plain_runs += 1
        crashes = f" crashing at {' then '.join(_selector_text(c) for c in selectors)}" if selectors else ""
        store = self._recording(label or f"run {self._plain_runs}{crashes}")()
        if self._ledger is not None:
            self._ledger.new_run("the run")
        options = self._options(options)
        let_time_pass(options.get("clock"))  # e.g. the runs assert_deterministic compares (PLG-13)
        result = Runner(agent, store, injector=injector, **options).run(inputs)
        if selectors:  # crash coverage (COV-2)
            reached.crashed(agent, injector.fired)
        else:
            reached.crash_free(agent, injector.trace)
        if injector.pending:
            raise AssertionError(
                f"crash point(s) never reached: {[_selector_text(c) for c in injector.plan]}; "
                f"reached: {sorted({p.label() for p in injector.trace})}"
            )
        self._count(crashes=len(injector.fired))
        return _with_records(result, store), injector

    def _sweep_run(self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], options: dict[str, Any]) -> DurableRun:
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        assert self._sweep is not None
        self.sweep_ran = True
        point = self._sweep[2]
        if point is None:
            return self._plain_run(agent, inputs, [], options)
        if isinstance(point, Shard):
            return self._shard_run(agent, inputs, options, point)
        options = self._options(options)
        with capturing() as baseline_values:
            baseline, _ = learn(agent, inputs, self._recording("the crash-free run"), self._ledger, **options)
        scenario = Scenario((point,), options.get("mismatch", "lenient"))
        label = f"the run crashing at {scenario.describe()}, recovered"
        with capturing() as values:
            result, injector = run_scenario(agent, inputs, self._recording(label), scenario, self._ledger, **options)
        self.outcome = check(scenario, baseline, result, injector, self._ledger)
        self._count(
            points=1,
            crashes=len(injector.fired),
            anomalies=len(self._ledger.anomalies()) if self._ledger else 0,
            unchecked_effects=0 if self._ledger is not None and self._ledger.booked else 1,
        )
        judge_on_recorded_values(
            self.outcome, agent, inputs, self._store_factory, self._ledger, baseline_values, values, options
        )
        if not injector.fired:
            raise AssertionError(
                f"fault point {_selector_text(point)} was reached at collection but not in this "
                "run: the agent takes a different path each run (nondeterministic?)"
            )
        if not self.outcome.ok:
            raise DurableInvariantError(
                _explain(self.outcome, self._ledger) + self._hint(self.outcome, agent, inputs, baseline, options)
            )
        return _with_records(result, self.kept_runs[-1][1])

    def _shard_run(
        self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], options: dict[str, Any], shard: Shard
    ) -> DurableRun:
        """One part of a ``durable_sweep(..., shards=n)`` test: the crash-free run the test's assertions read,
        then the sweep of this part's points (PLG-29). Every scenario's outputs and memory are held against
        the crash-free run's (REC-6), so the crash-free result stands for all of them."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        run, injector = self._recorded_run(agent, inputs, [], options, "the crash-free run")
        found = len(points_to_crash(injector.trace))
        if found != shard.points:
            raise AssertionError(
                f"the crash-free run reached {found} fault points here but {shard.points} at collection: the "
                f"agent takes a different path each run (nondeterministic?), so the {shard.count} parts of this "
                "sweep would not cover every point once; sweep it in one test (durable.sweep) to see where"
            )
        self.sweep(agent, inputs, shard=(shard.index, shard.count), **options)
        return run

    def _hint(
        self,
        outcome: PointOutcome,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        baseline: RunResult,
        options: dict[str, Any],
    ) -> str:
        """When outputs or memory differ, name the likely cause: a second crash-free run tells whether
        the agent differs without a crash, and its journal whether the durable calls differ too."""
        if not any(v.startswith("REC-6") for v in outcome.violations):
            return ""
        for world in self._worlds:  # the second crash-free run gets a fresh world like every run
            world.fresh()
        again, _ = learn(agent, inputs, self._store_factory, None, **options)
        if (again.outputs, again.memory) == (baseline.outputs, baseline.memory):
            return (
                "\nnote: two crash-free runs agree, so the crash caused the difference: the re-run action "
                "read something its first attempt changed or that is not replayed (a global, a fake "
                "service's state, a value computed outside durable_execute). Read the outside world "
                "through durable_execute so recovery replays the value (REC-2); give stateful fakes a "
                "fresh state per run with durable.world(factory)"
            )
        if journals.first_divergence(journals.entries(baseline), journals.entries(again)) is not None:
            return (
                "\nnote: two crash-free runs already differ, so not every difference above comes from the "
                "crash: the agent's durable calls take different arguments each run; "
                "durable.assert_deterministic() shows the first differing call (PLG-2)"
            )
        differing = self._first_differing_result(agent, inputs, options)
        if differing is not None:
            return (
                "\nnote: two crash-free runs already differ although their durable calls take the same "
                f"arguments: a durable function (or a fake or client it calls) returned different results for "
                f"the same arguments, first {differing}, because it keeps state across runs (e.g. a "
                "module-level fake or counter). Build such fakes with durable.world(factory) so that each run "
                "gets a fresh one (PLG-8)"
            )
        return (
            "\nnote: two crash-free runs already differ although their durable calls are the same: the "
            "action computes outputs or memory from state outside its inputs and memory (time, "
            "randomness, globals) outside any durable call. Compute such values inside durable_execute "
            "so they are recorded and replayed (REC-2)"
        )

    def _first_differing_result(
        self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], options: dict[str, Any]
    ) -> str | None:
        """Two more crash-free runs, each on fresh worlds: the first durable call (in journal order) whose
        recorded result differs between them although its function and arguments are the same, as
        ``function F at call index N (call ID)``; None when every result is the same."""
        runs: list[tuple[RunResult, RecordingStore]] = []
        for _ in range(2):
            for world in self._worlds:
                world.fresh()
            made = RecordingStore(self._store_factory())
            result, _ = learn(agent, inputs, functools.partial(_same, made), None, **options)  # makes one store
            runs.append((result, made))
        (first, one), (_, other) = runs
        last: dict[tuple[str, int, str, int], Any] = {}
        for entry in first.journal:
            c = entry.call_id
            last[(c.key, c.seq, c.action, c.call_index)] = entry
        for where, entry in sorted(last.items(), key=lambda kv: kv[0]):
            a, b = one.results.get(where), other.results.get(where)
            if a is None or b is None or (a.function_id, a.args_digest) != (b.function_id, b.args_digest):
                continue
            if (a.status, a.result_payload, a.exception_payload) != (b.status, b.result_payload, b.exception_payload):
                return f"function {a.function_id} at call index {where[3]} (call {entry.call_id})"
        return None

    def points(self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], **options: Any) -> list[FaultPoint]:
        """Every distinct fault point a crash-free run reaches, in order."""
        _, points = learn(agent, inputs, self._store_factory, None, **self._options(options))
        return points_to_crash(points)

    def check_scenario(
        self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], scenario: Scenario, **options: Any
    ) -> PointOutcome:
        """Run ``scenario`` and fail with :class:`DurableInvariantError` if any invariant breaks."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        options = self._options(options)
        ledger = self._ledger
        baseline, _ = learn(agent, inputs, self._recording("the crash-free run"), ledger, **options)
        label = f"the run crashing at {scenario.describe()}, recovered"
        result, injector = run_scenario(agent, inputs, self._recording(label), scenario, ledger, **options)
        outcome = check(scenario, baseline, result, injector, ledger)
        # A schedule counts once all its crashes fired: one that never fires tested nothing (PLG-15).
        self._count(
            scenarios=int(bool(scenario.schedule) and len(injector.fired) == len(scenario.schedule)),
            crashes=len(injector.fired),
            anomalies=len(ledger.anomalies()) if ledger else 0,
        )
        if not outcome.ok:
            raise DurableInvariantError(
                _explain(outcome, ledger) + self._hint(outcome, agent, inputs, baseline, options)
            )
        return outcome

    def crash(
        self,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        at: str | CrashAt | Iterable[str | CrashAt],
        **options: Any,
    ) -> PointOutcome:
        """Crash at ``at`` (one selector or a schedule), recover, finish, and check every durable invariant
        against a crash-free run. The selector must be reached."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        scenario = Scenario(tuple(_selectors(at)), options.pop("mismatch", "lenient"))
        outcome = self.check_scenario(agent, inputs, scenario, **options)
        if len(outcome.fired) < len(outcome.scenario.schedule):
            raise AssertionError(f"crash point(s) never reached: {outcome.scenario.texts()[len(outcome.fired) :]}")
        return outcome

    def sweep(
        self,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        *,
        re_execute: bool | None = None,
        shard: tuple[int, int] | None = None,
        **options: Any,
    ) -> list[PointOutcome]:
        """Crash once at every fault point of the crash-free run; fail listing every violation.

        Scenarios start from snapshots of the crash-free run where that is equivalent (PLG-16, PLG-17);
        ``re_execute=True`` (default: ``--durable-re-execute``) runs the agent up to every crash instead.
        ``shard=(k, n)`` sweeps only the k-th (from 0) of n parts of the points (PLG-29)."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        options = self._options(options)
        forced = self.re_execute if re_execute is None else re_execute
        outcomes = sweep(agent, inputs, self._store_factory, self._ledger, re_execute=forced, shard=shard, **options)
        snapshots = sum(o.start == "snapshot" for o in outcomes)
        checked = self._ledger is not None and self._ledger.booked
        self._count(
            points=len(outcomes),
            crashes=len(outcomes),
            snapshot_starts=snapshots,
            re_executed_starts=len(outcomes) - snapshots,
            unchecked_effects=0 if checked else len(outcomes),
        )
        if self.stats is not None:
            self.stats.reasons.update(o.start_reason for o in outcomes if o.start_reason is not None)
        verdict = Verdict(outcomes, effects_declared=checked)
        if not verdict.ok:
            bad = verdict.failing
            part = f" (part {shard[0] + 1} of {shard[1]})" if shard is not None else ""
            baseline, _ = learn(agent, inputs, self._store_factory, None, **options)
            hint = self._hint(bad[0], agent, inputs, baseline, options)
            self._keep_failing(agent, inputs, bad[0].scenario, options)
            raise DurableInvariantError(
                f"durable invariants violated at {len(bad)} of {len(outcomes)} fault "
                f"points{part}:\n  " + "\n  ".join(verdict.violations) + hint
            )
        return outcomes

    def explore(
        self,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        *,
        max_crashes: int = 3,
        max_examples: int | None = None,
        mismatch: Sequence[str] = ("lenient", "strict"),
        reconcilers: Sequence[bool] = (True, False),
        **options: Any,
    ) -> int:
        """Run crash schedules: first one crash at each learnt point, most revealing points first (PLG-15),
        then Hypothesis-generated schedules (several crashes, during recovery too, both mismatch modes,
        reconcilers on and off) whose every crash fires. A failure is shrunk to a minimal schedule and
        reported with the ``@pytest.mark.durable_schedule(...)`` marker that replays it. Scenarios pinned by
        that marker run first. ``max_examples`` (default ``--durable-max-examples``, 100) is the number of
        schedules in all. Returns the number of schedules run whose crashes all fired."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        from hypothesis import HealthCheck, given, seed, settings

        from .strategies import fireable, reachable_scenarios

        options = self._options(options)
        pinned_fired = 0
        for pinned in self.pinned:
            outcome = self.check_scenario(agent, inputs, pinned, **options)
            pinned_fired += bool(pinned.schedule) and len(outcome.fired) == len(pinned.schedule)
        budget = max_examples or self.max_examples
        modes: list[Any] = list(mismatch)
        switches = list(reconcilers)
        baseline, points = learn(agent, inputs, self._store_factory, self._ledger, **options)
        fired = [0]
        injected = [0]  # every crash that fired, for the summary's "crashes injected" (PLG-18)
        failing: list[tuple[Scenario, str]] = []

        def one(scenario: Scenario) -> None:
            __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
            if self._ledger is not None:
                # Each example needs its own crash-free expectation, as the ledger counts per run.
                learn(agent, inputs, self._store_factory, self._ledger, **options)
            result, injector = run_scenario(agent, inputs, self._store_factory, scenario, self._ledger, **options)
            injected[0] += len(injector.fired)
            outcome = check(scenario, baseline, result, injector, self._ledger)
            if scenario.schedule and len(injector.fired) == len(scenario.schedule):
                fired[0] += 1
            if not outcome.ok:
                failing.append(
                    (scenario, _explain(outcome, self._ledger) + self._hint(outcome, agent, inputs, baseline, options))
                )
                raise DurableInvariantError(failing[-1][1])

        def trace_after(scenario: Scenario) -> list[FaultPoint]:
            if scenario not in traces:
                traces[scenario] = self._trace_after(agent, inputs, scenario, options)
            return traces[scenario]

        traces: dict[Scenario, list[FaultPoint]] = {}
        # Single crashes at the most revealing points first, so that a small budget still covers them.
        singles = [Scenario((c,), modes[0], switches[0]) for c in fireable(points, max_nth=1)]
        try:
            for scenario in singles[:budget]:
                one(scenario)
            left = budget - min(budget, len(singles))
            if left:

                @seed(self.seed)
                @settings(
                    max_examples=left,
                    deadline=None,
                    database=None,
                    report_multiple_bugs=False,
                    suppress_health_check=list(HealthCheck),
                )
                @given(reachable_scenarios(trace_after, max_crashes=max_crashes, mismatch=modes, reconcilers=switches))
                def generated(scenario: Scenario) -> None:
                    __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
                    one(scenario)

                generated()
        except DurableInvariantError:
            scenario, text = failing[-1]  # Hypothesis re-runs the minimal example last
            self._keep_failing(agent, inputs, scenario, options)
            raise DurableInvariantError(
                f"minimal failing crash schedule: {scenario.describe()}\n{text}\n"
                f"reproduce with:\n    {scenario.decorator()}\n"
                f"(or --durable-seed {self.seed})"
            ) from None
        finally:
            self._count(scenarios=fired[0], crashes=injected[0])
        return pinned_fired + fired[0]

    def _trace_after(
        self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], scenario: Scenario, options: dict[str, Any]
    ) -> list[FaultPoint]:
        """The points reached after ``scenario``'s last crash fired (all of them for no crash); empty when
        the scenario fails before that or a crash never fires."""
        try:
            _, injector = run_scenario(agent, inputs, self._store_factory, scenario, self._ledger, **options)
        except Exception:
            return []
        if len(injector.fired) < len(scenario.schedule):
            return []
        if not scenario.schedule:
            return list(injector.trace)
        last = injector.fired[-1]
        index = next(i for i, p in enumerate(injector.trace) if p is last)
        return injector.trace[index + 1 :]

    # -- determinism ---------------------------------------------------------------------------------------

    def check_journal(
        self, agent: type[Agent], inputs: Sequence[tuple[str, Any]], *, name: str | None = None, **options: Any
    ) -> str:
        """Compare the crash-free run's durable calls with the golden journal of this test and agent
        (write it with ``--durable-update-journals``). Returns ``written``, ``updated`` or ``matched``."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        if self.journal_dir is None:
            raise RuntimeError("golden journals need the durable fixture (no journal directory configured)")
        label = name or agent.__qualname__
        self._journal_uses[label] = self._journal_uses.get(label, 0) + 1
        path = journals.path_for(self.journal_dir, self.test_name, label, self._journal_uses[label])
        result = self.run(agent, inputs, **options)
        status = journals.compare(path, label, journals.entries(result), update=self.update_journals)
        self._count(journals=1)
        return status

    def assert_deterministic(
        self,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        *,
        runs: int = 2,
        fresh_processes: bool = False,
        **options: Any,
    ) -> None:
        """Run ``runs`` times on fresh stores and fail at the first durable call whose function id, digest
        or outcome differs (time, randomness or unordered collections leaking into arguments).

        With ``fresh_processes`` two more runs happen in new interpreters with different
        ``PYTHONHASHSEED`` values, which is what exposes set ordering and other per-process hashing (within
        one process a set always iterates the same way). The agent must be importable by module and name."""
        __tracebackhide__ = True  # a failure points at the test, not at the harness (PLG-24)
        name = agent.__qualname__
        first = journals.entries(self.run(agent, inputs, **options))
        others = [(f"run {n}", journals.entries(self.run(agent, inputs, **options))) for n in range(2, runs + 1)]
        if fresh_processes:
            from .fresh_process import journal_in_fresh_process

            for seed in (1, 2):
                label = f"a fresh process with PYTHONHASHSEED={seed}"
                others.append((label, journal_in_fresh_process(agent, inputs, seed, options)))
        for label, again in others:
            diff = journals.first_divergence(first, again, ("run 1", label))
            if diff is not None:
                raise journals.JournalMismatch(
                    f"{name} is nondeterministic: {label} differs from run 1 (PLG-2)\n{diff}"
                )


def _with_records(result: RunResult, store: RecordingStore) -> DurableRun:
    return DurableRun(result, dict(store.records))


def _same(store: ActionStateStore) -> ActionStateStore:
    return store


def _selector_text(c: CrashAt) -> str:
    try:
        return c.text()
    except ValueError:
        return repr(c)


def _explain(outcome: PointOutcome, ledger: Ledger | None) -> str:
    text = f"durable invariants violated after crashing at {outcome.where}:\n  " + "\n  ".join(outcome.violations)
    if ledger is not None and ledger.anomalies():
        text += "\nside-effect ledger:\n" + ledger.table()
    return text
