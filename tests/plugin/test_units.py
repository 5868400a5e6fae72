"""The plugin's building blocks in-process: ledger (PLG-3), journals (PLG-2), scenarios and strategies
(PLG-5), the harness's crash and explore (PLG-1, PLG-5), virtual time (PLG-6)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_durable.strategies import crash_schedules, scenarios
from pytest_durable.sweep import learn, points_to_crash
from reference_runtime import (
    Agent,
    CrashAt,
    DurableCall,
    Event,
    InputEvent,
    OutputEvent,
    Phase,
    RunnerContext,
    action,
    current_call,
)
from reference_runtime.clock import RESTART_SECONDS
from reference_runtime.exploration import journal as journals
from reference_runtime.exploration.harness import DurableHarness, DurableInvariantError
from reference_runtime.exploration.ledger import Ledger, LedgerError
from reference_runtime.exploration.scenario import Scenario, ScheduleSyntaxError, scenario_from_marker
from reference_runtime.retry import Backoff, RetryPolicy
from reference_runtime.stores.factory import store_factory
from reference_runtime.stores.memory import InMemoryStore

LEDGER = Ledger()
EFFECTS: list[str] = []


def pay(order: str) -> str:
    EFFECTS.append(order)
    return f"paid {order}"


def mail(order: str) -> None:
    EFFECTS.append(f"mail {order}")


class Shop(Agent):
    """Pays durably; mails outside a durable call (the bug the ledger must show)."""

    @action(InputEvent)
    @staticmethod
    def order(event: Event, ctx: RunnerContext) -> None:
        receipt = ctx.durable_execute(LEDGER_PAY, event.attributes["input"])
        LEDGER_MAIL(event.attributes["input"])
        ctx.send_event(OutputEvent(receipt))


class GoodShop(Agent):
    @action(InputEvent)
    @staticmethod
    def order(event: Event, ctx: RunnerContext) -> None:
        receipt = ctx.durable_execute(LEDGER_PAY, event.attributes["input"])
        ctx.durable_execute(LEDGER_MAIL_DEDUP, event.attributes["input"])
        ctx.send_event(OutputEvent(receipt))


def _by_call_id(*_: Any) -> str:
    # The payment and mail services deduplicate on the idempotency id they are sent.
    return current_call().idempotency_key


LEDGER_PAY = LEDGER.wrap(pay, "pay", dedup=_by_call_id)
LEDGER_MAIL = LEDGER.wrap(mail, "mail")
LEDGER_MAIL_DEDUP = LEDGER.wrap(mail, "mail", dedup=_by_call_id)


def harness(tmp_path: Path | None = None, **kw: Any) -> DurableHarness:
    h = DurableHarness(InMemoryStore, "memory:", journal_dir=tmp_path, test_name="t", **kw)
    h._ledger = LEDGER  # the module-level wrappers book into this ledger
    return h


@pytest.fixture(autouse=True)
def _fresh_ledger() -> None:
    LEDGER.__init__()  # type: ignore[misc]
    EFFECTS.clear()


# -- ledger ---------------------------------------------------------------------------------------------------


def test_ledger_classifies_all_five_statuses() -> None:
    """PLG-3: ok, duplicated, lost, reconciled and unexpected, each against the crash-free run."""
    ledger = Ledger()
    ledger.new_run("crash-free", baseline=True)
    for cid in ("a", "b", "c", "d"):
        ledger.book("fx", cid)
    ledger.new_run("crashed")
    ledger.book("fx", "a")
    ledger.book("fx", "b")
    ledger.book("fx", "b")
    ledger.book("fx", "d")
    ledger.book_reconciled("fx", "d")
    ledger.book("fx", "e")
    status = {r.call_id: r.status for r in ledger.rows()}
    assert status == {"a": "ok", "b": "duplicated", "c": "lost", "d": "reconciled", "e": "unexpected"}
    assert ledger.counts() == {"ok": 1, "duplicated": 1, "lost": 1, "reconciled": 1, "unexpected": 1}
    with pytest.raises(LedgerError) as err:
        ledger.assert_exactly_once()
    table = str(err.value)
    assert "PLG-3" in table and "fx      b               1         2         2" in table
    assert [v.split()[4] for v in ledger.violations()] == ["b", "c", "e"]


def test_dedup_counts_like_the_external_system() -> None:
    """PLG-3: repeats with the same dedup key are one effect; a new key under the same call is a duplicate."""
    ledger = Ledger()
    send = ledger.wrap(lambda msg_id: None, "send", dedup=lambda msg_id: msg_id)
    ledger.new_run("base", baseline=True)
    ledger.book("send", "k/0/a/0")
    ledger.new_run("again")
    from reference_runtime.identity import CallContext, CallId
    from reference_runtime.memory import _in_durable_call as _current_call

    token = _current_call.set(CallContext(CallId("k", 0, "a", 0), "f", "d"))
    try:
        send("m1")
        send("m1")
        [row] = ledger.rows()
        assert (row.status, row.happened, row.attempts) == ("ok", 1, 2)
        send("m2")
        [row] = ledger.rows()
        assert (row.status, row.happened, row.attempts) == ("duplicated", 2, 3)
    finally:
        _current_call.reset(token)


def test_client_proxy_books_public_methods_only() -> None:
    """PLG-3: an HTTP-like client is wrapped method by method."""

    class Client:
        def post(self, path: str) -> str:
            return f"posted {path}"

        def _private(self) -> int:
            return 1

    ledger = Ledger()
    client = ledger.client(Client(), "api")
    assert client.post("/x") == "posted /x"
    assert client._private() == 1
    assert [(r.name, r.call_id) for r in ledger.rows()] == [("api.post", "outside:('/x')")]


def test_sweep_reports_the_duplicated_outside_effect_with_the_table() -> None:
    """PLG-1, PLG-3: an effect outside durable calls is duplicated by a crash before completion."""
    with pytest.raises(DurableInvariantError) as err:
        harness().sweep(Shop, [("o", "o1")])
    text = str(err.value)
    assert "PLG-3: effect mail for outside:('o1') duplicated" in text
    assert "fault points" in text


def test_durable_effects_pass_the_sweep_and_reconcilers_are_counted() -> None:
    """PLG-1: with every effect inside a durable call, only after-effect crashes repeat one, and the
    ledger rows name the idempotency ids."""
    outcomes = harness().sweep(GoodShop, [("o", "o1")])
    assert len(outcomes) >= 8 and all(o.ok for o in outcomes)
    after_effect = [o for o in outcomes if o.point.phase is Phase.AFTER_EFFECT]
    assert [o.point.label() for o in after_effect] == ["call0:after-effect", "call1:after-effect"]
    # The last run crashed after the mail's effect: the mail ran twice, the service kept one.
    rows = {(r.name, r.call_id): (r.happened, r.attempts, r.status) for r in LEDGER.rows()}
    assert rows == {("pay", "o/0/order/0"): (1, 1, "ok"), ("mail", "o/0/order/1"): (1, 2, "ok")} or all(
        v[0] == 1 and v[2] == "ok" for v in rows.values()
    )


# -- crash and explore -------------------------------------------------------------------------------------------


def test_crash_checks_one_point_and_names_the_clause() -> None:
    """PLG-1: durable.crash() crashes, recovers, and checks against a crash-free run."""
    out = harness().crash(GoodShop, [("o", "o1")], "call0:after-record")
    assert out.ok and [p.label() for p in out.fired] == ["call0:after-record"]
    with pytest.raises(DurableInvariantError, match=r"(?s)before-complete.*PLG-3: effect mail"):
        harness().crash(Shop, [("o", "o1")], "order:before-complete")
    with pytest.raises(AssertionError, match="never reached"):
        harness().crash(GoodShop, [("o", "o1")], "call7:after-record")


def test_explore_shrinks_to_a_minimal_schedule_and_prints_the_marker() -> None:
    """PLG-5: the failure is shrunk to one crash and reported as a replayable marker; pinning it replays it."""
    h = harness(seed=1)
    with pytest.raises(DurableInvariantError) as err:
        h.explore(Shop, [("o", "o1")], max_examples=60)
    text = str(err.value)
    assert "minimal failing crash schedule:" in text and "then" not in text.splitlines()[0]
    marker = next(line.strip() for line in text.splitlines() if line.strip().startswith("@pytest.mark."))
    args = marker[len("@pytest.mark.durable_schedule(") : -1]
    pinned = eval(f"scenario_from_marker_args({args})", {"scenario_from_marker_args": _marker})
    replay = harness(pinned=[pinned])
    with pytest.raises(DurableInvariantError):
        replay.explore(Shop, [("o", "o1")], max_examples=1)


def _marker(*args: Any, **kwargs: Any) -> Scenario:
    return scenario_from_marker(args, kwargs)


def test_explore_passes_a_correct_agent_under_multi_crash_schedules() -> None:
    """PLG-5: several crashes (also during recovery), both mismatch modes, reconcilers on and off."""
    assert harness(seed=7).explore(GoodShop, [("o", "o1"), ("p", "p1")], max_crashes=3, max_examples=40) >= 40


def test_crash_during_recovery_is_reached() -> None:
    """PLG-5: the second selector of a schedule is armed after the first fires and lands in recovery."""
    out = harness().crash(GoodShop, [("o", "o1")], ["call1:after-effect", "call0:before-call"])
    assert [p.label() for p in out.fired] == ["call1:after-effect", "call0:before-call"]
    assert out.result.failovers == 2


# -- scenarios and strategies ------------------------------------------------------------------------------------


@given(
    st.builds(
        CrashAt,
        st.sampled_from(list(Phase)),
        st.none() | st.text(min_size=1),
        st.none() | st.integers(0, 99),
        st.none() | st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
        st.none() | st.integers(0, 99),
        st.integers(1, 4),
    )
)
def test_selector_text_round_trips(selector: CrashAt) -> None:
    """PLG-5: every selector prints to text that parses back to the same selector."""
    assert CrashAt.parse(selector.text()) == selector


@pytest.mark.parametrize(
    "text",
    [
        "call1:nowhere",
        "call1:after-effect?color=red",
        "after-effect?seq=x",
        "after-effect?nth=0",
        "after-effect?seq=1&seq=2",
    ],
)
def test_bad_selectors_are_refused_with_the_text(text: str) -> None:
    with pytest.raises(ScheduleSyntaxError, match="crash selector"):
        CrashAt.parse(text)


def test_bad_markers_are_refused() -> None:
    with pytest.raises(ScheduleSyntaxError, match="mismatch"):
        scenario_from_marker(("call0:after-effect",), {"mismatch": "loose"})
    with pytest.raises(ScheduleSyntaxError, match="unknown keyword"):
        scenario_from_marker(("call0:after-effect",), {"color": 1})
    with pytest.raises(ScheduleSyntaxError, match="selector strings"):
        scenario_from_marker((3,), {})


def test_scenario_decorator_round_trips() -> None:
    s = Scenario.of("call1:after-effect?key=k", "checkpoint", mismatch="strict", reconcilers=False)
    assert s.decorator() == (
        '@pytest.mark.durable_schedule("call1:after-effect?key=k", "checkpoint", mismatch="strict", reconcilers=False)'
    )
    assert _marker("call1:after-effect?key=k", "checkpoint", mismatch="strict", reconcilers=False) == s


POINTS = points_to_crash(learn(GoodShop, [("o", "o1")], InMemoryStore)[1])


@settings(max_examples=50)
@given(crash_schedules(POINTS, max_crashes=3))
def test_schedules_draw_only_reached_points(schedule: tuple[CrashAt, ...]) -> None:
    """PLG-5: every drawn selector narrows to a point the crash-free run reached."""
    assert 1 <= len(schedule) <= 3
    assert all(any(c.matches(p) for p in POINTS) for c in schedule)


@settings(max_examples=30)
@given(scenarios(POINTS, mismatch=["strict"], reconcilers=[False]))
def test_scenarios_respect_the_chosen_modes(scenario: Scenario) -> None:
    assert scenario.mismatch == "strict" and not scenario.reconcilers
    assert scenario.runner_options() == {"mismatch": "strict", "config": {"durable-execution.reconcilers": False}}


def test_strategies_need_points() -> None:
    with pytest.raises(ValueError, match="no fault points"):
        crash_schedules([])


# -- journals and determinism -----------------------------------------------------------------------------------


class Stamped(Agent):
    """Passes the wall clock into a durable call: nondeterministic unless time is frozen."""

    @action(InputEvent)
    @staticmethod
    def stamp(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(str, f"{event.attributes['input']}@{time.time()}")))


def test_golden_journal_written_matched_and_diffed(tmp_path: Path) -> None:
    """PLG-2: write with update, match on the next run, and a changed argument fails at the first divergence
    with a field-level diff."""
    h = harness(tmp_path, update_journals=True)
    assert h.check_journal(GoodShop, [("o", "o1")]) == "written"
    path = tmp_path / "t.GoodShop.json"
    assert path.exists() and '"function_id"' in path.read_text()
    assert harness(tmp_path).check_journal(GoodShop, [("o", "o1")]) == "matched"
    with pytest.raises(journals.JournalMismatch) as err:
        harness(tmp_path).check_journal(GoodShop, [("o", "o2")])
    text = str(err.value)
    assert "journal diverges at entry 0 (call o/0/order/0)" in text
    assert "args_digest: golden" in text and "function_id" not in text.split("entry 0")[1].split("\n")[1]
    assert "--durable-update-journals" in text
    with pytest.raises(journals.JournalMismatch, match="no golden journal"):
        harness(tmp_path / "empty").check_journal(GoodShop, [("o", "o1")])


def test_journal_entries_are_ordered_by_call_not_by_timing() -> None:
    result = harness().run(GoodShop, [("b", "x"), ("a", "y")])
    calls = [e["call"] for e in journals.entries(result)]
    assert calls == ["a/0/order/0", "a/0/order/1", "b/0/order/0", "b/0/order/1"]
    assert result.records and all(s.completed for s in result.records.values())


def test_run_twice_flags_time_leaking_into_arguments() -> None:
    """PLG-2: two runs of an agent that passes time.time() into a call differ at that call."""
    with pytest.raises(journals.JournalMismatch, match=r"(?s)nondeterministic.*args_digest: run 1 .* != run 2"):
        harness().assert_deterministic(Stamped, [("k", "v")])
    harness().assert_deterministic(GoodShop, [("k", "v")], runs=3)


def test_frozen_time_still_shows_time_leaks_and_backoff_is_virtual() -> None:
    """PLG-6, PLG-13: under the frozen clock two compared runs are a restart apart, so time leaking into a call
    is still caught; retry backoff advances virtual time instead of sleeping."""
    from freezegun import freeze_time

    from reference_runtime.exploration.clock import FrozenClock

    with freeze_time("2026-01-01") as frozen:
        clock = FrozenClock(frozen)
        h = harness()
        h.clock = clock
        with pytest.raises(journals.JournalMismatch, match="Stamped is nondeterministic: run 2 differs from run 1"):
            h.assert_deterministic(Stamped, [("k", "v")])
        start = clock.now()
        result = h.run(Flaky, [("k", 3)])
        assert result.outputs == {"k": ["ok after 3"]}
        # 30 s of backoff happened in virtual time only (FrozenClock.sleep ticks freezegun, never sleeps);
        # the run itself started one restart later.
        assert clock.sleeps == [10.0, 20.0] and clock.now() - start == pytest.approx(30.0 + RESTART_SECONDS)


ATTEMPTS: dict[str, int] = {}


def flaky(n: int) -> str:
    call = current_call()
    ATTEMPTS[str(call.call_id)] = call.attempt
    if call.attempt < n:
        raise ConnectionError("try again")
    return f"ok after {call.attempt}"


class Flaky(Agent):
    @action(InputEvent)
    @staticmethod
    def go(event: Event, ctx: RunnerContext) -> None:
        policy = RetryPolicy(max_attempts=5, backoff=_backoff(), retry_on=(ConnectionError,))
        ctx.send_event(OutputEvent(ctx.durable_execute(flaky, event.attributes["input"], retry=policy)))


def _backoff() -> Backoff:
    return Backoff(initial=10.0, multiplier=2.0, maximum=100.0, jitter=0.0)


#: The clock the batch tools below take their time on (set by the test that runs them).
TOOL_CLOCK: list[Any] = []


def slow_lookup(seconds: float) -> float:
    TOOL_CLOCK[0].sleep(seconds)
    return seconds


class TimedBatch(Agent):
    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 1, "tool-call.batch.timeout.ms": 5_000}

    @action(InputEvent)
    @staticmethod
    async def go(event: Event, ctx: RunnerContext) -> None:
        calls = [DurableCall(slow_lookup, (s,)) for s in event.attributes["input"]]
        outcomes = await ctx.durable_execute_all_async(calls)
        ctx.send_event(OutputEvent([type(o.error).__name__ if o.error else o.value for o in outcomes]))


def test_batch_timeouts_run_on_the_frozen_clock() -> None:
    """PLG-6, BAT-6: under the frozen clock a batch deadline is virtual time: a tool that takes 60 s of it
    times out a 5 s batch at once, and the call after it never starts."""
    from freezegun import freeze_time

    from reference_runtime.exploration.clock import FrozenClock

    with freeze_time("2026-01-01") as frozen:
        clock = FrozenClock(frozen)
        TOOL_CLOCK[:] = [clock]
        h = harness()
        h.clock = clock
        result = h.run(TimedBatch, [("k", [1.0, 60.0, 2.0])])
    assert result.outputs == {"k": [[1.0, "BatchTimeoutError", "BatchTimeoutError"]]}
    assert clock.sleeps == [1.0, 60.0], "the third call never started"


def test_sqlite_store_factory_isolates_stores_in_one_file(tmp_path: Path) -> None:
    """STORE-10, STORE-11: sqlite:PATH is one database file; each store made for a run has its own tables
    in it, and cleanup drops them."""
    import sqlite3

    from reference_runtime import ActionState
    from reference_runtime.records import StateRef
    from tests.runtime.test_stores_core import ACTION

    db = tmp_path / "runs.db"
    factory = store_factory(f"sqlite:{db}", lambda: tmp_path / "unused")
    a, b = factory(), factory()
    ref = StateRef("k", 0, ACTION, InputEvent("x"), "k-0")
    assert a.path == b.path == db  # type: ignore[attr-defined]
    assert a.namespace != b.namespace  # type: ignore[attr-defined]
    a.put(ref, ActionState())
    assert a.get(ref) is not None and b.get(ref) is None
    factory.cleanup()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == ["runs.db"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == []


TAGS = {"refund", "priority", "vip", "eu", "retry", "fraud-check", "manual"}


class Tagged(Agent):
    """Passes a set's iteration order into a durable call: stable inside a process, not across them."""

    @action(InputEvent)
    @staticmethod
    def tag(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(len, list(TAGS))))


class SortedTags(Agent):
    @action(InputEvent)
    @staticmethod
    def tag(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(len, sorted(TAGS))))


def test_fresh_processes_expose_set_ordering_in_arguments() -> None:
    """PLG-2: in-process runs agree, but runs under other hash seeds send the set in another order."""
    harness().assert_deterministic(Tagged, [("k", 1)])
    with pytest.raises(journals.JournalMismatch, match=r"(?s)PYTHONHASHSEED=\d differs from run 1.*args_digest"):
        harness().assert_deterministic(Tagged, [("k", 1)], fresh_processes=True)
    harness().assert_deterministic(SortedTags, [("k", 1)], fresh_processes=True)


def test_fresh_process_needs_an_importable_agent() -> None:
    from reference_runtime.exploration.fresh_process import FreshProcessError

    class Local(Agent):
        pass

    with pytest.raises(FreshProcessError, match="module level"):
        harness().assert_deterministic(Local, [], fresh_processes=True)


def test_the_summary_line_counts_in_the_singular_and_the_plural() -> None:
    """PLG-7: one schedule is "1 crash schedule run", two are "2 crash schedules run"."""
    from pytest_durable import plugin

    class Reporter:
        lines: list[str] = []

        def write_sep(self, *args: object) -> None:
            pass

        def write_line(self, line: str) -> None:
            self.lines.append(line)

    class Config:
        stash = {plugin._TOTALS: {"durable_schedules": 1, "durable_crashes": 2, "durable_ledger_anomalies": 1}}

    plugin.pytest_terminal_summary(Reporter(), Config())  # type: ignore[arg-type]
    assert Reporter.lines == ["durable: 1 crash schedule run, 2 crashes injected, 1 ledger anomaly"]
