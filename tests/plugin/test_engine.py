"""The crash-exploration engine (``reference_runtime.exploration``, PLG-20) on its own: any runner drives its
sweep (CONF-4), its verdict judges what really ran when every execution is booked (REC-3, REC-5, CONF-8), a
sweep crash that never fires is a violation (PLG-19), and a call has one spelling everywhere (IDN-5)."""

from __future__ import annotations

from conformance import agents
from reference_runtime import (
    Agent,
    CallId,
    CrashAt,
    Event,
    FaultInjector,
    FaultPoint,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    RunResult,
    action,
)
from reference_runtime.exploration import journal
from reference_runtime.exploration.ledger import Ledger
from reference_runtime.exploration.protocol import reference_run
from reference_runtime.exploration.scenario import Scenario
from reference_runtime.exploration.sweep import sweep
from reference_runtime.exploration.verdict import check, recorded_attempts
from reference_runtime.stores.memory import InMemoryStore
from tests.conformance.broken_runners import RunArgs, forgetful, run_function

INPUTS = [("k", 1)]


@run_function
def hiding(run: RunArgs) -> RunResult:
    """The forgetful runner (it recovers against an empty store: every call executes again) whose journal says
    every call after the first attempt replayed."""
    result = forgetful(
        run.agent, run.inputs, store=run.store, injector=run.injector, mismatch=run.mismatch, config=run.config
    )
    journal = [e._replace(source="replayed") if e.attempt else e for e in result.journal]
    return RunResult(
        emitted=result.emitted,
        memory=result.memory,
        journal=journal,
        failovers=result.failovers,
        crashes=result.crashes,
    )


def test_a_runner_under_test_drives_the_sweep_and_its_hidden_re_executions_are_counted() -> None:
    """CONF-4, CONF-8, REC-3, PLG-20: the sweep runs a run function in place of the reference runner; its
    journal claims replays, so only the executions the agent booked show that recorded calls ran again."""
    agents.reset()
    trusting = sweep(agents.Steps, INPUTS, InMemoryStore, run=hiding)
    assert all(o.start == "re-executed" for o in trusting)
    assert {o.start_reason for o in trusting} == {
        "a runner under test drives the agent: only the reference Runner's recovery starts from a snapshot"
    }
    assert not [v for o in trusting for v in o.violations if v.startswith("REC-3")], "the journal hid them"
    counted = sweep(agents.Steps, INPUTS, InMemoryStore, agents.LEDGER.ledger, run=hiding)
    lines = [v for o in counted for v in o.violations if v.startswith("REC-3")]
    assert "REC-3: call k/0/work/0 had a persisted record but its execution ran 2 time(s)" in "\n".join(lines)
    honest = sweep(agents.Steps, INPUTS, InMemoryStore, agents.LEDGER.ledger, run=reference_run)
    assert honest and all(o.ok for o in honest), [v for o in honest for v in o.violations]


def _point(phase: Phase, index: int) -> FaultPoint:
    return FaultPoint(phase, "k", 0, "work", index)


def _result() -> RunResult:
    return RunResult(emitted=[], memory={}, journal=[], failovers=0, crashes=[])


def test_executions_are_judged_once_more_per_crash_before_the_record_and_never_after() -> None:
    """REC-3, REC-5: with every execution booked, a call recorded before the crash may not run again, and one
    not yet recorded may run once more per crash, not twice."""
    before, after = _point(Phase.AFTER_RECORD, 0), _point(Phase.AFTER_EFFECT, 1)
    crash = _point(Phase.AFTER_EFFECT, 1)
    trace = [_point(Phase.BEFORE_CALL, 0), before, _point(Phase.BEFORE_CALL, 1), crash, after]
    # Keys are call ids, the action's execution included (IDN-9).
    assert recorded_attempts(trace, [crash]) == {CallId("k", 0, "work", 0): 0}
    call0, call1 = str(CallId("k", 0, "work", 0)), str(CallId("k", 0, "work", 1))
    ledger = Ledger(executions=True)
    ledger.new_run("crash-free", baseline=True)
    for call in (call0, call1):
        ledger.book("execution", call)
    ledger.new_run("crash")
    for call in (call0, call0, call1, call1, call1):
        ledger.book("execution", call)
    injector = FaultInjector(trace=trace, fired=[crash])
    outcome = check(Scenario((CrashAt.point(crash),)), _result(), _result(), injector, ledger)
    assert [v.split(" after ")[0] for v in outcome.violations] == [
        f"REC-3: call {call0} had a persisted record but its execution ran 2 time(s)",
        f"REC-5: call {call1} ran its execution 3 time(s)",
    ]
    ledger.new_run("crash, recovered correctly")
    for call in (call0, call1, call1):
        ledger.book("execution", call)
    assert check(Scenario((CrashAt.point(crash),)), _result(), _result(), injector, ledger).ok


class Flaky(Agent):
    """Takes another path after its first run: its first call happens only once per process."""

    runs = 0

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        Flaky.runs += 1
        if Flaky.runs == 1:
            ctx.durable_execute(str, 1)
        ctx.send_event(OutputEvent("done"))


def test_a_sweep_crash_that_never_fires_is_a_violation() -> None:
    """PLG-19: a point the crash-free run reached but the crash run does not is reported, not passed."""
    Flaky.runs = 0
    outcomes = sweep(Flaky, INPUTS, InMemoryStore, re_execute=True)
    missed = [v for o in outcomes for v in o.violations if v.startswith("PLG-19")]
    assert missed and "never fired" in missed[0]


def test_a_call_has_one_spelling_in_verdict_ledger_and_journal() -> None:
    """IDN-5, PLG-20: the verdict's lines, the ledger's rows and the journal name a call by ``str(CallId)``,
    which quotes key and action."""
    key = "a/b c"
    call = CallId(key, 0, "work", 0)
    assert str(call) == "a%2Fb%20c/0/work/0"
    agents.reset()
    outcomes = sweep(agents.Steps, [(key, 1)], InMemoryStore, agents.LEDGER.ledger, run=hiding)
    text = "\n".join(v for o in outcomes for v in o.violations)
    assert f"call {call} had a persisted record" in text and "call a/b c/" not in text
    assert {r.call_id for r in agents.LEDGER.ledger.rows()} >= {str(call)}
    entries = journal.entries(Runner(agents.Steps).run([(key, 1)]))
    assert entries[0]["call"] == str(call)
