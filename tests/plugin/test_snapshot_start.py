"""Starting sweep scenarios from snapshots gives the verdict re-execution gives (PLG-16, PLG-17, COST-4).

The differential test sweeps every agent both ways — from snapshots of the crash-free run and by
re-executing up to each crash — and compares everything a sweep reports: per point the outcome, the
violations (messages included), re-executed and repeated calls, duplicates, the fired point, outputs,
memory and journal; then the verdict, its caveats and summary; or, for an agent that fails, the error."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_durable.cli import main as durable_cli
from pytest_durable.sweep import PointOutcome, Verdict, start_summary, sweep
from reference_runtime import Agent, durable
from reference_runtime.clock import VirtualClock
from reference_runtime.exploration.harness import DurableHarness
from reference_runtime.exploration.ledger import Ledger
from reference_runtime.exploration.snapshot_start import WriteLog
from reference_runtime.stores import get_scheme, register_scheme, store_factory, unregister_scheme
from reference_runtime.stores.memory import InMemoryStore

from ..runtime import agents as runtime_agents
from ..runtime import test_batch, test_tools_chat
from . import snapshot_agents as snap_agents
from . import verdict_agents

ROOT = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]
sys.path.insert(0, str(ROOT))
from benchmarks.p9_sweep import Many  # noqa: E402
from pytest_durable.examples.buggy_refund import refund_buggy, refund_fixed, services  # noqa: E402

sys.path.pop(0)

Patch = Callable[[pytest.MonkeyPatch, Ledger], None]


@dataclass
class Case:
    agent: type[Agent] | Any
    inputs: list[tuple[str, Any]]
    #: None: every point starts from a snapshot (but the sampled one); else a text every fallback names.
    fallback: str | None = None
    options: Callable[[], dict[str, Any]] = dict
    effects: Patch | None = None
    reset: Callable[[], None] = lambda: None
    store: Any = InMemoryStore
    #: Points that must re-execute although the sweep may use snapshots (other keys, checkpoints).
    partly: str | None = None
    #: Run under a frozen clock (the agent reads the time itself).
    frozen: bool = False


def _wrap_refund(mp: pytest.MonkeyPatch, ledger: Ledger) -> None:
    refund = ledger.wrap(services.PAYMENTS.refund, "refund", dedup=lambda order, amount, request_id: request_id)
    send = ledger.wrap(services.MAILER.send, "email", dedup=lambda to, text, message_id=None: message_id)
    mp.setattr(services.PAYMENTS, "refund", refund)
    mp.setattr(services.MAILER, "send", send)


def _wrap_verdict(mp: pytest.MonkeyPatch, ledger: Ledger) -> None:
    mp.setattr(verdict_agents, "notify", ledger.wrap(verdict_agents.notify, "notify"))
    mp.setattr(verdict_agents, "charge", ledger.wrap(verdict_agents.charge, "charge"))


def _shared_payments(mp: pytest.MonkeyPatch, ledger: Ledger) -> None:
    fake = ledger.client(verdict_agents.Payments(), "payments", methods=["charge"])
    mp.setattr(verdict_agents, "PAYMENTS", fake)


def _reset_all() -> None:
    random.seed(20261123)
    test_tools_chat.MODEL.counter = itertools.count()
    runtime_agents.reset()
    snap_agents.reset()
    test_tools_chat.reset()
    test_batch.reset()
    services.PAYMENTS.refunds.clear()
    services.MAILER.sent.clear()


TWO_KEYS = [("a", 1), ("b", 2)]
CASES: dict[str, Case] = {
    "many-calls": Case(Many, [("k", 12)]),
    "three-calls-one-key-two-inputs": Case(runtime_agents.ThreeCalls, [("a", 1), ("a", 5)]),
    "three-calls-two-keys": Case(runtime_agents.ThreeCalls, TWO_KEYS),
    "three-keys-ledger-effects": Case(
        verdict_agents.OutsideEffect, [("a", 1), ("b", 2), ("a", 3), ("c", 4)], effects=_wrap_verdict
    ),
    "two-keys-retry-virtual-clock": Case(
        snap_agents.Retrying, [("j", 1), ("k", 2)], options=lambda: {"clock": VirtualClock()}
    ),
    "two-keys-reconciled-shared-fake": Case(verdict_agents.Reconciled, [("k", 5), ("l", 6)], effects=_shared_payments),
    "checkpoint-every-input": Case(
        runtime_agents.ThreeCalls,
        [("a", 1), ("b", 2), ("a", 3)],
        options=lambda: {"checkpoint_every": 1},
        partly="a checkpoint completed before this point",
    ),
    "chained-actions-memory": Case(runtime_agents.Chained, [("a", 1), ("a", 2)]),
    "reconciler": Case(runtime_agents.WithReconciler, [("a", 3)]),
    "failing-call-caught": Case(runtime_agents.Failing, [("a", 3)]),
    "strict-mode": Case(runtime_agents.ThreeCalls, [("a", 1)], options=lambda: {"mismatch": "strict"}),
    "outside-effect-ledger": Case(verdict_agents.OutsideEffect, [("k", 4)], effects=_wrap_verdict),
    "non-idempotent-ledger": Case(verdict_agents.NonIdempotent, [("k", 4)], effects=_wrap_verdict),
    "non-idempotent-no-ledger": Case(verdict_agents.NonIdempotent, [("k", 4)]),
    "reconciled-shared-fake": Case(verdict_agents.Reconciled, [("k", 5)], effects=_shared_payments),
    "retry-virtual-clock": Case(snap_agents.Retrying, [("k", 1)], options=lambda: {"clock": VirtualClock()}),
    "two-phase-commit": Case(snap_agents.TwoPhase, [("k", 7)]),
    "memory-per-call": Case(snap_agents.Remembering, [("k", 3), ("k", 2)]),
    "tutorial-fixed": Case(
        refund_fixed.RefundAgent, [("order-7", {"order": "order-7", "amount": 30})], effects=_wrap_refund
    ),
    "tutorial-buggy": Case(
        refund_buggy.RefundAgent,
        [("order-7", {"order": "order-7", "amount": 30})],
        fallback="two crash-free runs made different durable calls",
        effects=_wrap_refund,
        frozen=True,
    ),
    # Async agents: one key per checkpoint segment and one call in flight at a time start from snapshots.
    "async-calls": Case(runtime_agents.AsyncCalls, [("a", 1)]),
    "async-tool-loop-one-key-two-inputs": Case(snap_agents.AsyncToolLoop, [("k", 1), ("k", 2)]),
    "async-tool-loop-checkpoint-every-input": Case(
        snap_agents.AsyncToolLoop,
        [("a", 1), ("b", 2), ("a", 3)],
        options=lambda: {"checkpoint_every": 1},
        partly="a checkpoint completed before this point",
    ),
    "batch-one-at-a-time-with-reconcilers": Case(test_batch.Reconciled, [("k", [1, 2, 3])]),
    # Tools one at a time pass the timing check; its scripted model numbers its answers across runs, which
    # the comparison of two crash-free runs catches as it does for a synchronous agent.
    "chat-and-tools-serial": Case(
        test_tools_chat.ReAct,
        [("u", "q")],
        fallback="two crash-free runs produced different outputs",
        options=lambda: {"config": {"tool-call.parallel": False}},
    ),
    # ... a parallel batch does not: its slots finish in the order thread timing gives (made the same in
    # both sweeps here by delays far apart, so that the two re-executing sweeps can be compared).
    "chat-and-tools-parallel": Case(test_tools_chat.ReAct, [("u", "q")], fallback="two durable calls in flight"),
    "side-call-while-a-call-runs": Case(
        snap_agents.SideCall, [("k", 1)], fallback="while a durable call's work was in flight (a task of their own"
    ),
    "parallel-batch": Case(
        test_batch.Batch,
        [("k", [1, 2, 3])],
        fallback="two durable calls in flight at once (k/0/work/1 started while another ran",
        reset=lambda: test_batch.reset({1: 0.0, 2: 0.03, 3: 0.06}),
    ),
    "random-result": Case(snap_agents.RandomResult, [("k", 1)], fallback="two crash-free runs produced different"),
    "counts-mod-four": Case(snap_agents.CountsModFour, [("k", 1)], fallback="ended differently from its snapshot"),
    "random-argument": Case(snap_agents.RandomArgument, [("k", 1)], fallback="two crash-free runs made different"),
    "counts-across-runs": Case(snap_agents.CountsAcrossRuns, [("k", 1)], fallback="two crash-free runs"),
    "fails-always": Case(snap_agents.FailsAlways, [("k", 1)]),
    "counts-executions-after-convergence": Case(snap_agents.CountsExecutions, [("k", 6), ("l", 5)]),
    "strict-nondeterministic-fails-after-crash": Case(
        snap_agents.RandomArgument, [("k", 1)], options=lambda: {"mismatch": "strict"}
    ),
    "custom-store-factory": Case(
        runtime_agents.ThreeCalls, [("a", 1)], fallback="is not a built-in", store=lambda: InMemoryStore()
    ),
}


@contextmanager
def _setup(case: Case) -> Iterator[tuple[Ledger | None, dict[str, Any]]]:
    _reset_all()
    case.reset()
    ledger = Ledger() if case.effects is not None else None
    options = case.options()
    with pytest.MonkeyPatch.context() as mp, ExitStack() as stack:
        if case.effects is not None:
            assert ledger is not None
            case.effects(mp, ledger)
        if case.frozen:
            from freezegun import freeze_time

            from reference_runtime.exploration.clock import FrozenClock

            options["clock"] = FrozenClock(stack.enter_context(freeze_time("2026-01-01T00:00:00+00:00")))
        yield ledger, options


def _wall_clock_masked(text: str) -> str:
    """Times a failing agent's message may hold (a real clock moves between the two sweeps)."""
    return re.sub(r"\d{9,}\.\d+", "<time>", text)


def _observed(outcomes: list[PointOutcome], ledger: Ledger | None) -> Any:
    verdict = Verdict(outcomes, effects_declared=ledger is not None)
    return (
        [
            (
                o.point,
                o.ok,
                o.violations,
                o.re_executed,
                o.duplicates,
                o.repeated,
                o.unchecked,
                o.fired,
                o.result.outputs,
                dict(o.result.memory),
                [e[:6] for e in o.result.journal],
                o.result.crashes,
                o.result.failovers,
            )
            for o in outcomes
        ],
        verdict.violations,
        verdict.caveats(),
        verdict.summary(),
    )


def sweep_both(case: Case, store: Any = None) -> tuple[Any, Any, list[PointOutcome] | None]:
    """What a sweep reports re-executing, what it reports from snapshots, and the snapshot outcomes."""
    seen: list[Any] = []
    snapshot_outcomes = None
    for re_execute in (True, False):
        with _setup(case) as (ledger, options):
            try:
                outcomes = sweep(case.agent, case.inputs, store or case.store, ledger, re_execute=re_execute, **options)
            except Exception as exc:
                seen.append(("raised", type(exc).__name__, _wall_clock_masked(str(exc))))
                continue
            # Compared as text: every field has a faithful repr, and the wall clock can be masked in it.
            seen.append(_wall_clock_masked(repr(_observed(outcomes, ledger))))
            if not re_execute:
                snapshot_outcomes = outcomes
    return seen[0], seen[1], snapshot_outcomes


@pytest.mark.parametrize("name", list(CASES))
def test_a_sweep_from_snapshots_reports_what_re_execution_reports(name: str) -> None:
    """PLG-16, PLG-17: for every agent, the sweep started from snapshots and the re-executing sweep give
    the same per-point outcomes, violations (messages included), duplicates, verdict and errors; agents
    the snapshot cannot stand for re-execute and say why; the others really start from snapshots."""
    case = CASES[name]
    re_executed, from_snapshots, outcomes = sweep_both(case)
    assert from_snapshots == re_executed
    if outcomes is None:
        assert re_executed[0] == "raised" and "Error" in re_executed[1]
        return
    reasons = {o.start_reason for o in outcomes}
    starts = {o.start for o in outcomes}
    if case.fallback is not None:
        assert starts == {"re-executed"}
        assert all(case.fallback in (r or "") for r in reasons), reasons
        return
    sampled = [o for o in outcomes if o.start_reason and "sampled" in o.start_reason]
    assert len(sampled) == 1
    if case.partly is not None:
        assert "snapshot" in starts and any(case.partly in (r or "") for r in reasons), reasons
    else:
        assert sum(o.start == "snapshot" for o in outcomes) == len(outcomes) - 1


def test_the_flink_agents_example_gets_the_same_verdict_both_ways() -> None:
    """PLG-16, FA-1: the unchanged Flink Agents example (tests/flink_agents) starts from
    snapshots with the verdict of re-execution (where flink_agents is installed)."""
    pytest.importorskip("flink_agents")
    sys.path.insert(0, str(ROOT))
    try:
        from tests.flink_agents import helpdesk
        from tests.flink_agents.triage_agent import TriageAgent
    finally:
        sys.path.pop(0)

    def wrap(mp: pytest.MonkeyPatch, ledger: Ledger) -> None:
        case_id = lambda request_id, ticket, queue: request_id  # noqa: E731
        booked = ledger.wrap(helpdesk.HELPDESK.open_case, "open_case", dedup=case_id)
        mp.setattr(helpdesk.HELPDESK, "open_case", booked)

    case = Case(TriageAgent, [("acme", {"id": "T-1", "text": "Checkout is down!"})], effects=wrap)
    re_executed, from_snapshots, outcomes = sweep_both(case)
    assert from_snapshots == re_executed
    assert outcomes is not None and any(o.start == "snapshot" for o in outcomes)


def test_the_sqlite_store_starts_from_snapshots_too(tmp_path: Path) -> None:
    """PLG-16: a built-in sqlite: store is rebuilt at each point from the write log; same verdict."""
    stores = store_factory("sqlite:", lambda: tmp_path)
    try:
        for name in ("reconciler", "non-idempotent-ledger", "tutorial-fixed"):
            re_executed, from_snapshots, outcomes = sweep_both(CASES[name], stores)
            assert from_snapshots == re_executed
            assert outcomes is not None and any(o.start == "snapshot" for o in outcomes)
    finally:
        stores.cleanup()


def test_a_durable_world_forces_re_execution() -> None:
    """PLG-17: a durable.world() fake is made fresh per run and changed by the run before the crash,
    which no snapshot holds: the harness's sweep re-executes every point and says so."""
    harness = DurableHarness(InMemoryStore, "memory:")
    world = harness.world(verdict_agents.Payments)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(verdict_agents, "PAYMENTS", harness.ledger.client(world, "payments", methods=["charge"]))
        outcomes = harness.sweep(verdict_agents.Reconciled, [("k", 5)])
    assert {o.start for o in outcomes} == {"re-executed"}
    assert all("durable.world()" in (o.start_reason or "") for o in outcomes)


def test_a_sampled_point_that_disagrees_turns_snapshots_off() -> None:
    """PLG-17: state the snapshot does not hold, changed by the run before the crash, shows when the
    sampled point is run both ways; then every point re-executes, with that reason."""
    outcomes = sweep(snap_agents.CountsModFour, [("k", 1)], InMemoryStore)
    assert {o.start for o in outcomes} == {"re-executed"}
    assert all("ended differently from its snapshot" in (o.start_reason or "") for o in outcomes)


def test_an_async_agent_s_keys_in_one_segment_re_execute_and_say_why() -> None:
    """PLG-17: the keys of one checkpoint segment of an async agent run as tasks that interleave as thread
    timing lets them (which key's call lands first; a crash of one lets the other run on until it is
    cancelled), so no snapshot stands for a crash: every point re-executes, naming two of the keys, with the
    verdicts of forced re-execution. The same agent on one key starts from snapshots (the cases above)."""
    inputs = [("a", 1), ("b", 2)]
    swept = sweep(snap_agents.AsyncToolLoop, inputs, InMemoryStore)
    forced = sweep(snap_agents.AsyncToolLoop, inputs, InMemoryStore, re_execute=True)
    assert {o.start for o in swept} == {"re-executed"}
    assert all("keys 'a' and 'b' run in one checkpoint segment" in (o.start_reason or "") for o in swept)
    # Compared as sets: the order the keys' points were first reached in is thread timing's too.
    assert {(o.point, tuple(o.violations)) for o in swept} == {(o.point, tuple(o.violations)) for o in forced}
    assert len(swept) == len(forced) == len({o.point for o in swept})
    assert durable.in_flight is None  # the watch of the crash-free runs never outlives them


def test_forced_re_execution_says_so_and_the_summary_counts_starts() -> None:
    """PLG-16: re_execute=True runs every point from scratch; start_summary counts the starts."""
    outcomes = sweep(Many, [("k", 3)], InMemoryStore, re_execute=True)
    assert {o.start for o in outcomes} == {"re-executed"}
    assert start_summary(outcomes) == [
        f"0 of {len(outcomes)} scenarios started from a snapshot of the crash-free run (PLG-16)",
        f"{len(outcomes)} re-executed: re-execution was asked for (re_execute=True, durable sweep "
        "--re-execute, --durable-re-execute) (PLG-17)",
    ]
    fast = sweep(Many, [("k", 3)], InMemoryStore)
    assert (
        start_summary(fast)[0] == f"{len(fast) - 1} of {len(fast)} scenarios started from a snapshot of the "
        "crash-free run (PLG-16)"
    )


def test_durable_sweep_verbose_prints_the_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PLG-17, CLI-1: `durable sweep -v` prints how scenarios started and why any re-executed;
    `--re-execute` forces re-execution with the same verdict."""
    two_keys = tmp_path / "two.jsonl"
    two_keys.write_text('{"key": "j", "input": 3}\n{"key": "k", "input": 4}\n')
    agent = "tests.runtime.agents:AsyncCalls"
    assert durable_cli(["sweep", agent, "--inputs", str(two_keys), "-v"]) == 0
    out = capsys.readouterr().out
    assert "re-executed: the agent has async actions and keys 'j' and 'k' run in one checkpoint segment" in out
    assert "(PLG-17)" in out
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"key": "k", "input": 4}\n')
    agent = "tests.plugin.verdict_agents:NonIdempotent"
    effect = ["--effect", "tests.plugin.verdict_agents:charge"]
    assert durable_cli(["sweep", agent, "--inputs", str(inputs), *effect, "-v"]) == 1
    fast = capsys.readouterr().out
    assert "5 of 6 scenarios started from a snapshot of the crash-free run (PLG-16)" in fast
    assert durable_cli(["sweep", agent, "--inputs", str(inputs), *effect, "--re-execute"]) == 1
    slow = capsys.readouterr().out
    assert slow == fast[: fast.index("\n", fast.index("UNSAFE")) + 1]  # the matrix and verdict, without -v


@pytest.mark.parametrize("agent", [runtime_agents.WithReconciler, runtime_agents.ThreeCalls])
def test_the_write_log_rebuilds_the_store_at_every_point(agent: type[Agent]) -> None:
    """PLG-16: the store rebuilt from the write log at a point holds exactly what the crash-free run's
    store held when it reached that point."""
    from reference_runtime import FaultInjector, Runner

    log = WriteLog(InMemoryStore())
    seen: dict[Any, tuple[tuple[int, int], dict[str, Any]]] = {}

    def contents(store: InMemoryStore) -> dict[str, Any]:
        return {k: (e.header, list(e.calls)) for k, e in store._entries.items()}

    class Reader(FaultInjector):
        def reach(self, point: Any) -> None:
            super().reach(point)
            assert isinstance(log.inner, InMemoryStore)
            seen.setdefault(point, (log.position(), contents(log.inner)))

    Runner(agent, log, injector=Reader(), checkpoint_every=1).run([("a", 1), ("a", 2)])
    assert len(seen) > 10
    for point, (position, held) in seen.items():
        rebuilt = InMemoryStore()
        log.replay(rebuilt, position)
        assert contents(rebuilt) == held, point
    # Replaying in two steps (up to one position, then from it to a later one) gives the same store, also
    # from the middle of one logged write of several appended calls.
    positions = sorted({position for position, _ in seen.values()})
    assert any(done > 0 for _, done in positions)
    for n, early in enumerate(positions):
        for late in positions[n:]:
            once, twice = InMemoryStore(), InMemoryStore()
            log.replay(once, late)
            log.replay(twice, early)
            log.replay(twice, late, early)
            assert contents(twice) == contents(once), (early, late)


@pytest.mark.parametrize("calls", [10, 40])
def test_a_sweep_runs_one_recovery_per_store_state_and_logs_one_write_per_state(
    calls: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-4: a sweep of an action making N calls runs N + O(1) agent runs (not one run up to each of its
    3N + O(1) points), and the write log holds O(1) entries for the action however many calls it makes."""
    from reference_runtime import Runner

    runs = [0]
    real = Runner.run

    def counted(self: Runner, *args: Any, **kwargs: Any) -> Any:
        runs[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Runner, "run", counted)
    outcomes = sweep(Many, [("k", calls)], InMemoryStore)
    assert len(outcomes) == 3 * calls + 3
    # The crash-free run, a second one, the sampled point both ways, a point's recovery run to its end and
    # stopped where it converges (COST-7), then one recovery per store state at a crash: N states "records
    # 0..i-1" (call i's before-call and after-effect, call i-1's after-record), all N records (the last
    # after-record, before-complete), completed (after-complete, checkpoint).
    assert runs[0] == 6 + calls + 2
    ops = WriteLog(InMemoryStore())
    real(Runner(Many, ops), [("k", calls)])
    assert [op.kind for op in ops.ops] == ["miss", "put", "calls", "put", "prune"]


def test_the_plugin_option_forces_re_execution_and_verbose_says_how_scenarios_started(
    pytester: pytest.Pytester,
) -> None:
    """PLG-16, PLG-17, PLG-7: under `pytest -v` the durable summary counts the sweep scenarios started from
    snapshots and lists why the others re-executed; `--durable-re-execute` (ini `durable_re_execute`)
    re-executes them all with the same result."""
    pytester.syspathinsert(str(ROOT))
    pytester.makepyfile(
        test_user="""
from tests.runtime.agents import ThreeCalls

def test_sweep(durable):
    durable.sweep(ThreeCalls, [("a", 1), ("b", 2), ("a", 3)], checkpoint_every=1)
"""
    )
    result = pytester.runpytest_subprocess("-v", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "durable: 11 sweep scenarios started from a snapshot of the crash-free run, 23 re-executed (PLG-16)",
            "  22 re-executed: a checkpoint completed before this point: recovery restores it (PLG-17)",
            "  1 re-executed: the point sampled to check the snapshot path against re-execution (PLG-17)",
        ]
    )
    result = pytester.runpytest_subprocess("-v", "-p", "no:randomly", "--durable-re-execute")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "durable: 0 sweep scenarios started from a snapshot of the crash-free run, 34 re-executed (PLG-16)",
            "  34 re-executed: re-execution was asked for (*) (PLG-17)",
        ]
    )
    pytester.makeini("[pytest]\ndurable_re_execute = true\n")
    result = pytester.runpytest_subprocess("-v", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["durable: 0 sweep scenarios started from a snapshot *, 34 re-executed (PLG-16)"])
    assert "sweep scenarios" not in pytester.runpytest_subprocess("-p", "no:randomly").stdout.str()


def test_remote_stores_and_custom_factories_re_execute_with_the_reason() -> None:
    """PLG-17: only the built-in memory: and sqlite: stores are rebuilt at a point; a Redis or Kafka store
    URL, or a factory of one's own, re-executes and the reason names it."""
    from reference_runtime.exploration.snapshot_start import record, why_not

    ref = record(runtime_agents.ThreeCalls, [("a", 1)], InMemoryStore, None, {})
    assert why_not(ref, InMemoryStore, None) is None
    assert why_not(ref, store_factory("memory:"), None) is None
    assert why_not(ref, store_factory("redis://127.0.0.1:6379/0"), None) == (
        "the redis: store is rebuilt at a point only for the built-in memory: and sqlite: stores"
    )
    # A registered scheme is not built in, even one that opens the memory store.
    copy = dataclasses.replace(get_scheme("memory"), name="copymem", parse=None, origin="")
    register_scheme(copy)
    try:
        assert why_not(ref, store_factory("copymem:"), None) == (
            "the copymem: store is rebuilt at a point only for the built-in memory: and sqlite: stores"
        )
    finally:
        unregister_scheme("copymem")
    assert "the store factory fresh is not a built-in" in (why_not(ref, fresh, None) or "")


def fresh() -> InMemoryStore:
    return InMemoryStore()


def _converged_and_full(agent: Any, inputs: list[tuple[str, Any]]) -> tuple[int, int]:
    """For every point of a sweep of ``agent``: the scenario stopped where its recovery converges and run to
    its end give the same outcome, trace, journal, outputs and memory (COST-7); returns how many of the
    points converged, and how many points there were."""
    from reference_runtime.exploration import snapshot_start as snap
    from reference_runtime.exploration.scenario import Scenario, selector_for
    from reference_runtime.exploration.sweep import _observed, points_to_crash
    from reference_runtime.exploration.verdict import check

    ref = snap.record(agent, inputs, InMemoryStore, None, {})
    snap.prepare(ref, None)
    converged = 0
    points = points_to_crash(ref.trace)
    for point in points:
        if ref.usable(point) is not None:
            continue
        scenario = Scenario((selector_for(point),))
        seen = []
        for converge in (True, False):
            result, injector, recovery = snap.start(
                ref, point, scenario, None, {}, trace_recovery=True, converge=converge
            )
            if recovery.converged is not None:
                converged += 1
                outcome = snap.check_converged(ref, scenario, result, injector, recovery)
            else:
                outcome = check(scenario, ref.result, result, injector)
            seen.append(repr(_observed(outcome, result, injector, None)))
        assert seen[0] == seen[1], point
    return converged, len(points)


@pytest.mark.parametrize(
    ("agent", "inputs"),
    [
        (Many, [("k", 9)]),
        (runtime_agents.Chained, [("a", 1), ("a", 2)]),
        (runtime_agents.ThreeCalls, [("a", 1), ("b", 2), ("a", 3)]),
        (snap_agents.Remembering, [("k", 3), ("k", 2)]),
        (runtime_agents.WithReconciler, [("a", 3)]),
        (runtime_agents.Failing, [("a", 3)]),
        (verdict_agents.NonIdempotent, [("k", 4)]),
    ],
)
def test_a_scenario_stopped_where_it_converges_ends_as_one_run_to_its_end(agent: Any, inputs: Any) -> None:
    """COST-7: per point, the scenario stopped early and the same recovery run to its end agree on everything
    a sweep reports, and early stops do happen (at most points inside an action)."""
    _reset_all()
    converged, _ = _converged_and_full(agent, inputs)
    assert converged > 0, "no recovery converged: the test would check nothing"


def test_a_violation_after_the_convergence_point_is_still_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """COST-7: a violation that shows only after the point where a recovery converged is still reported, at
    every point where running the recovery to its end reports it. (1) An agent whose end depends on how many
    of its calls ran rather than replayed (state the comparison cannot see): the sampled point run stopped
    early and to its end disagree, so no scenario stops early. (2) A runner that emits its outputs twice once
    it has failed over (a mutation of the runtime after the convergence point): caught the same way. In both,
    the sweep from snapshots reports exactly what the re-executing sweep reports."""
    from reference_runtime import Runner

    case = CASES["counts-executions-after-convergence"]
    re_executed, from_snapshots, outcomes = sweep_both(case)
    assert from_snapshots == re_executed
    assert outcomes is not None
    middle = [o for o in outcomes if o.point.call_index is not None and o.point.call_index > 0]
    assert middle and all(any(v.startswith("REC-6") for v in o.violations) for o in middle)

    real = Runner._run_one

    async def twice(self: Runner, *args: Any) -> None:
        await real(self, *args)
        if self.failovers:
            self._emitted.append(self._emitted[-1])

    monkeypatch.setattr(Runner, "_run_one", twice)
    mutated = Case(Many, [("k", 8)])
    re_executed, from_snapshots, outcomes = sweep_both(mutated)
    assert from_snapshots == re_executed
    assert outcomes is not None
    crashed_mid_action = [o for o in outcomes if o.point.call_index is not None]
    assert crashed_mid_action and all(o.duplicates == ["k/0/work"] for o in crashed_mid_action)


def test_a_converged_check_finds_each_execution_s_recorded_calls() -> None:
    """COST-7, IDN-9: the converged check looks up, by call id, where each call's record landed in the
    crash-free run; the ids carry the action's execution, so every call of every round is found (a key
    without the execution would find none, and a call re-run after its record would go unreported)."""
    from reference_runtime.exploration import snapshot_start as snap

    from ..runtime.test_executions import INPUTS
    from ..runtime.tool_loop_agent import ToolLoop

    ref = snap.record(ToolLoop, INPUTS, InMemoryStore, None, {})
    where, recorded = ref.calls()
    assert any(cid.execution > 1 for cid in where)
    assert set(where) == set(recorded)
