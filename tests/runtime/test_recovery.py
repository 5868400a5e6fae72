"""Crash at every fault point, recover, and compare with the crash-free run (spec REC-*, FLT-*)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reference_runtime import Agent, CrashAt, FaultInjector, FaultPoint, Phase, Runner
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.sqlite import SqliteStore

from . import agents

INPUTS = [("alice", 1), ("bob", 2), ("alice", 3)]
AGENTS = {
    "ThreeCalls": agents.ThreeCalls,
    "AsyncCalls": agents.AsyncCalls,
    "Chained": agents.Chained,
    "WithReconciler": agents.WithReconciler,
    "Failing": agents.Failing,
}


def make_runner(
    agent: type[Agent], store_kind: str, tmp_path: Path, checkpoint_every: int | None, injector: FaultInjector
) -> Runner:
    reopen: Callable[[], ActionStateStore] | None = None
    if store_kind == "sqlite":
        db = tmp_path / f"store-{uuid.uuid4().hex}.db"  # a fresh file: states of earlier runs stay (RUN-18)

        def reopen() -> ActionStateStore:
            return SqliteStore(db)

        store: ActionStateStore = reopen()
    else:
        store = InMemoryStore()
    return Runner(agent, store, injector=injector, checkpoint_every=checkpoint_every, reopen_store=reopen)


def crash_free(agent: type[Agent], store_kind: str, tmp_path: Path, cp: int | None) -> tuple[Any, list[FaultPoint]]:
    agents.reset()
    agent_reconciled = agents.RECONCILED
    agent_reconciled.clear()
    injector = FaultInjector()
    result = make_runner(agent, store_kind, tmp_path, cp, injector).run(INPUTS)
    return result, list(injector.trace)


@pytest.mark.parametrize("checkpoint_every", [None, 1], ids=["no-checkpoints", "checkpoint-each"])
@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("agent", AGENTS.values(), ids=AGENTS.keys())
def test_crash_at_every_fault_point_recovers_to_the_crash_free_result(
    agent: type[Agent], store_kind: str, checkpoint_every: int | None, tmp_path: Path
) -> None:
    """REC-1, REC-2, REC-3, REC-5, REC-6: for every point reached, a crash there and a recovery give the
    crash-free outputs and memory; no call whose record was persisted runs again; a call crashed after its
    effect runs at most once more (never, with a reconciler); no output is emitted twice."""
    baseline, trace = crash_free(agent, store_kind, tmp_path, checkpoint_every)
    clean_effects = dict(agents.EFFECTS)
    assert trace, "the agent reached no fault point"
    assert {p.phase for p in trace} >= {
        Phase.BEFORE_CALL,
        Phase.AFTER_EFFECT,
        Phase.AFTER_RECORD,
        Phase.BEFORE_COMPLETE,
        Phase.AFTER_COMPLETE,
        Phase.CHECKPOINT,
    }
    for point in trace:
        agents.reset()
        agents.RECONCILED.clear()
        injector = FaultInjector([CrashAt.point(point)])
        result = make_runner(agent, store_kind, tmp_path, checkpoint_every, injector).run(INPUTS)
        where = point.describe()
        assert injector.fired == [point], where
        assert result.outputs == baseline.outputs, where
        assert result.memory == baseline.memory, where
        assert len({(e.key, e.seq, e.action, id(e)) for e in result.emitted}) == len(baseline.emitted), where
        crash_at = injector.trace.index(point)
        recorded = {
            f"{p.key}/{p.seq}/{p.action}/{p.call_index}"
            for p in injector.trace[:crash_at]
            if p.phase is Phase.AFTER_RECORD
        }
        for call_id, count in agents.EFFECTS.items():
            extra = count - clean_effects[call_id]
            if call_id in recorded or agent is agents.WithReconciler:
                assert extra == 0, f"{call_id} re-executed after a crash at {where}"
            else:
                assert extra <= 1, f"{call_id} re-executed {extra} times after a crash at {where}"
        if agent is agents.WithReconciler and point.phase is Phase.AFTER_EFFECT:
            assert len(agents.RECONCILED) == 1, where


def test_completed_actions_are_skipped_and_their_outputs_not_duplicated() -> None:
    """REC-4: a crash after completion re-emits stored outputs once and runs no action code."""
    agents.reset()
    store = InMemoryStore()
    injector = FaultInjector([CrashAt(Phase.AFTER_COMPLETE, key="alice", seq=0)])
    result = Runner(agents.ThreeCalls, store, injector=injector).run([("alice", 1)])
    assert result.outputs == {"alice": [60]}
    assert [e.source for e in result.journal] == ["executed"] * 3
    assert sum(agents.EFFECTS.values()) == 3
    assert len(result.emitted) == 1


def test_two_crashes_including_one_during_recovery() -> None:
    """REC-7: a crash while recovering is recovered from like any other."""
    agents.reset()
    plan = [CrashAt(Phase.AFTER_RECORD, call_index=1), CrashAt(Phase.AFTER_RECORD, call_index=2)]
    injector = FaultInjector(plan)
    result = Runner(agents.ThreeCalls, injector=injector).run([("k", 1)])
    assert result.failovers == 2
    assert result.outputs == {"k": [60]}
    assert all(count == 1 for count in agents.EFFECTS.values())


def test_crash_inside_async_pool_work_recovers() -> None:
    """REC-2: the async path re-enters and replays after a crash between effect and record."""
    agents.reset()
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT, key="bob", call_index=2)])
    result = Runner(agents.AsyncCalls, injector=injector).run(INPUTS)
    assert result.outputs == {"alice": [60, 120], "bob": [90]}
    assert agents.EFFECTS["bob/0/work/2"] == 2  # its effect happened but was not recorded
    assert agents.EFFECTS["bob/0/work/0"] == agents.EFFECTS["bob/0/work/1"] == 1
