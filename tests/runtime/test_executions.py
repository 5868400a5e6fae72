"""Issue 25, verdicts you can trust on real agents: every execution of an action is its own fault point
(FLT-6) with call ids of its own (IDN-9), equal arguments hit their record however their objects are
shared (IDN-10), and a sweep of a multi-key tool loop agrees with a count kept outside the runtime and is
the same run after run (PLG-22)."""

from __future__ import annotations

import itertools
import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pydantic
import pytest

from reference_runtime import CallId, CrashAt, Event, FaultInjector, Phase, Runner
from reference_runtime.exploration.scenario import Scenario, selector_for
from reference_runtime.exploration.sweep import NewStore, learn, points_to_crash, run_scenario, sweep
from reference_runtime.exploration.verdict import Verdict, check
from reference_runtime.faults import ScheduleSyntaxError
from reference_runtime.identity import args_digest, flink_args_digest
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.sqlite import SqliteStore

from .tool_loop_agent import CALLS, ROUNDS, ToolLoop

INPUTS = [("a", 1), ("b", 2), ("a", 3)]


@pytest.fixture(params=["memory", "sqlite"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> NewStore:
    """Fresh stores: in memory, or SQLite files (not synced: no test here kills the process), from which
    recovery rebuilds memory as new objects."""
    if request.param == "memory":
        return InMemoryStore
    names = itertools.count()
    return lambda: SqliteStore(tmp_path / f"store{next(names)}.db", synchronous="OFF")


def test_every_execution_of_an_action_has_points_and_call_ids_of_its_own() -> None:
    """FLT-6, IDN-9: the n-th execution of an action for one input is counted in run order; its fault points
    carry the ordinal and its calls have their own idempotency ids, the first execution spelled as always."""
    result, trace = learn(ToolLoop, INPUTS, InMemoryStore)
    executions = {(p.key, p.seq, p.action, p.execution) for p in trace if p.action is not None}
    assert {(a, n) for _, _, a, n in executions} == {("think", n) for n in range(1, ROUNDS + 2)} | {
        ("act", n) for n in range(1, ROUNDS + 1)
    }
    ids = [e.call_id for e in result.journal]
    assert len(ids) == len(set(ids)) == len(INPUTS) * (2 * ROUNDS + 1)
    assert str(CallId("a", 0, "think", 0)) == "a/0/think/0"
    assert str(CallId("a", 0, "think", 0, 2)) == "a/0/think#2/0"
    assert str(CallId("a#b", 1, "t#", 0, 3)) == "a%23b/1/t%23#3/0"
    assert {str(i) for i in ids} >= {"a/0/think/0", "a/0/think#2/0", "a/0/act#3/0", "a/1/think#4/0"}


def test_a_selector_names_an_execution_and_old_selectors_mean_the_first() -> None:
    """FLT-6: ``execution=n`` selects the n-th execution; the text a point's selector writes parses back to it
    and fires there; a selector without it fires at the first execution, as it always did."""
    text = "call0:after-record?key=a&seq=0&action=think&execution=2"
    selector = CrashAt.parse(text)
    assert selector.execution == 2 and selector.text() == text
    _, trace = learn(ToolLoop, INPUTS, InMemoryStore)
    second = next(p for p in trace if p.phase is Phase.AFTER_RECORD and p.action == "think" and p.execution == 2)
    assert selector_for(second) == selector and CrashAt.point(second) == selector
    assert "execution=2" in second.describe()
    old = CrashAt.parse("call0:after-record?key=a&seq=0&action=think")
    for armed, execution in ((selector, 2), (old, 1)):
        injector = FaultInjector([armed])
        Runner(ToolLoop, InMemoryStore(), injector=injector).run(INPUTS)
        assert [p.execution for p in injector.fired] == [execution]
    first = next(p for p in trace if p.phase is Phase.AFTER_RECORD and p.action == "think")
    assert selector_for(first).text() == "call0:after-record?key=a&seq=0&action=think"
    for bad in ("call0:after-record?execution=0", "call0:after-record?execution=x"):
        with pytest.raises(ScheduleSyntaxError, match="execution"):
            CrashAt.parse(bad)


class Message(pydantic.BaseModel):
    role: str
    content: str
    extra: dict[str, Any] = {}


def _fresh(text: str) -> str:
    """An equal string that is a new object."""
    return "".join([text[:1], text[1:]])


def test_equal_arguments_digest_equal_however_their_objects_are_shared() -> None:
    """IDN-10: the runtime's digest depends on the arguments' values, not on which of their objects are one:
    strings, lists, dicts and pydantic models shared or rebuilt from JSON; Flink Agents' digest (kept
    computable) differs for the shared strings, the cause of issue 25; unshared arguments digest as it."""
    word = "hello world"
    cases = [
        (([word, word],), ([word, _fresh(word)],)),
        (({"k": [word]}, [word]), ({"k": [_fresh(word)]}, [_fresh(word)])),
        ((["中", "中"],), ([chr(0x4E2D), chr(0x4E2D)],)),
    ]
    inner = [1, 2]
    cases.append((([inner, inner],), ([[1, 2], [1, 2]],)))
    messages = [Message(role="user", content=word), Message(role="assistant", content=word, extra={"t": word})]
    rebuilt = [Message.model_validate_json(m.model_dump_json()) for m in messages]
    cases.append(((messages,), (rebuilt,)))
    ident = uuid.UUID(int=7)
    events = [Event("e", {"text": word}, id=ident), Event("e", {"text": word}, id=ident)]
    cases.append(((events,), ([Event("e", json.loads(json.dumps({"text": word})), id=ident)] * 2,)))
    for shared, unshared in cases:
        assert args_digest(shared, {}) == args_digest(unshared, {}), shared
        assert args_digest((), {"x": shared}) == args_digest((), {"x": unshared}), shared
    assert flink_args_digest(([word, word],), {}) != flink_args_digest(([word, _fresh(word)],), {})
    assert args_digest(([word, _fresh(word)],), {}) == flink_args_digest(([word, _fresh(word)],), {})
    # The reference vectors of docs/sources.md, keyword order included, are unchanged.
    assert [args_digest(*v) for v in (((), {}), ((1, 2), {}), ((), {"a": 1, "b": 2}), ((), {"b": 2, "a": 1}))] == [
        "f744dd20f806e514",
        "4f178445086a4b93",
        "915fcb468add33e3",
        "46326d3bb5b2bb51",
    ]


def test_a_tool_loop_swept_at_every_point_of_every_round_agrees_with_an_independent_count(
    stores: NewStore,
) -> None:
    """PLG-23, REC-3, PLG-1, FLT-6, IDN-10: the three-round tool loop over several keys is crashed at every point of
    every round; recovery's arguments, rebuilt from the store, hit their records, and each scenario's verdict
    agrees with the count of executions kept outside the runtime: a call run again is reported as run again
    (DE-6, never REC-3, since none ran after its record was persisted), nothing else is."""
    CALLS.clear()
    baseline, trace = learn(ToolLoop, INPUTS, stores)
    # Crash-free, each call ran once, under the id the runtime gave it.
    assert CALLS == Counter(str(e.call_id) for e in baseline.journal) == Counter(dict.fromkeys(CALLS, 1))
    points = points_to_crash(trace)
    assert {p.execution for p in points if p.action == "think"} == set(range(1, ROUNDS + 2))
    for point in points:
        scenario = Scenario((selector_for(point),))
        CALLS.clear()
        result, injector = run_scenario(ToolLoop, INPUTS, stores, scenario)
        outcome = check(scenario, baseline, result, injector)
        assert injector.fired == [point]
        assert (result.outputs, dict(result.memory)) == (baseline.outputs, dict(baseline.memory))
        again = sorted(k for k, n in CALLS.items() if n > 1)
        crash = injector.trace.index(point, 0)
        recorded = {
            str(CallId(*(*p[1:5], p[6])))
            for p in injector.trace[: crash + 1]
            if p.phase is Phase.AFTER_RECORD and p.key is not None
        }
        assert not set(again) & recorded, point.describe()  # no recorded call really ran again
        assert outcome.violations == [] and outcome.re_executed == [], point.describe()
        assert outcome.repeated == again, point.describe()


def _report(stores: NewStore) -> str:
    outcomes = sweep(ToolLoop, INPUTS, stores)
    verdict = Verdict(outcomes, effects_declared=False)
    lines = [
        f"{o.where} | {o.violations} | {o.re_executed} | {o.repeated} | {o.duplicates} | {o.start}" for o in outcomes
    ]
    return "\n".join([*lines, *verdict.caveats(), verdict.summary()])


def test_sweeps_of_several_keys_in_flight_are_the_same_run_after_run() -> None:
    """PLG-22: ten sweeps of the multi-key, multi-round agent give byte-identical reports."""
    reports = {_report(InMemoryStore) for _ in range(10)}
    assert len(reports) == 1
    [report] = reports
    assert "execution=4" in report
    assert report.endswith("fault points, 0 with violations: NOT VERIFIED (see the notes above)")
