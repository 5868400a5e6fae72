"""Failing stores (spec FAIL-*): every built-in store wrapped in a FaultyStore that fails, delays, tears or
loses writes on a schedule. Every failure reaches the user as one StoreFailedError naming the store, the
operation and the cause; the run stops at once; after recovery the outputs are exactly the crash-free ones
and no durable call whose record was acknowledged runs again."""

from __future__ import annotations

import contextlib
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from reference_runtime import Agent, DurableCall, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.errors import CorruptRecordError, StoreError, StoreFailedError
from reference_runtime.identity import args_digest
from reference_runtime.records import ActionRef, ActionState, CallResult, StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.faulty import FaultyStore, StoreFault
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.redis import RedisStore
from reference_runtime.stores.sqlite import SqliteStore

EFFECTS: Counter[tuple[str, int]] = Counter()


def effect(key: str, i: int) -> int:
    EFFECTS[(key, i)] += 1
    return i * 10


class Calls(Agent):
    """Two single durable calls and a batch of three (a multi-record write) per input."""

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        key, n = ctx.key, event.attributes["input"]
        first = ctx.durable_execute(effect, key, n)
        second = ctx.durable_execute(effect, key, n + 1)
        batch = await ctx.durable_execute_all_async([DurableCall(effect, (key, n + k)) for k in range(2, 5)])
        ctx.send_event(OutputEvent([first, second, *(o.unwrap() for o in batch)]))


INPUTS = [(f"k{i}", 100 * i) for i in range(4)] + [(f"k{i}", 100 * i + 50) for i in range(4)]


def _kafka(tansu: str) -> ActionStateStore:
    from reference_runtime.stores.kafka import KafkaStore

    return KafkaStore(tansu, f"durable-{uuid.uuid4().hex[:16]}")


@pytest.fixture(params=["memory", "sqlite", "fakeredis", "redis", "kafka"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], ActionStateStore]]:
    """A factory of the same built-in store, so a test can start over with an empty one."""
    made: list[ActionStateStore] = []
    kind = request.param

    def new() -> ActionStateStore:
        n = len(made)
        if kind == "memory":
            store: ActionStateStore = InMemoryStore()
        elif kind == "sqlite":
            store = SqliteStore(tmp_path / f"s{n}.db")
        elif kind == "fakeredis":
            store = RedisStore(fakeredis.FakeRedis(), namespace=f"t{n}")
        elif kind == "redis":
            store = RedisStore.from_url(request.getfixturevalue("real_redis"), namespace=uuid.uuid4().hex)
        else:
            store = _kafka(request.getfixturevalue("tansu"))
        made.append(store)
        return store

    yield new
    for s in made:
        with contextlib.suppress(Exception):  # a store may be half-closed after an injected fault
            s.close()


class Acknowledging(FaultyStore):
    """Remembers the args digests of terminal call records whose write was acknowledged."""

    def __init__(self, inner: ActionStateStore, faults: list[StoreFault]) -> None:
        super().__init__(inner, faults)
        self.acknowledged: set[str] = set()

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        super().put_call_results(ref, index, results)  # raises when a fault fails the write
        self.acknowledged.update(r.args_digest for r in results if r.is_terminal)


def crash_free(store: ActionStateStore) -> dict[str, list[Any]]:
    EFFECTS.clear()
    outputs = Runner(Calls, store, checkpoint_every=2, prune=True).run(INPUTS).outputs
    assert set(EFFECTS.values()) == {1}
    EFFECTS.clear()
    return outputs


@pytest.mark.parametrize(
    ("fault", "fails"),
    [
        (StoreFault("put_call_results", at=7), True),
        (StoreFault("put_call_results", at=7, kind="fail_after"), True),
        (StoreFault("put_call_results", at=3, kind="tear"), True),  # the first batch's PENDING records
        (StoreFault("put", at=5), True),
        (StoreFault("get", at=4), True),
        (StoreFault("prune_state", at=2), True),
        (StoreFault("get_recovery_marker", at=2), True),
        (StoreFault("put_call_results", at=4, kind="delay", seconds=0.01), False),
        (StoreFault("put_call_results", at=6, kind="lose"), False),
    ],
    ids=["fail", "fail-after", "tear", "fail-put", "fail-get", "fail-prune", "fail-marker", "delay", "lose"],
)
def test_faults_reach_the_user_once_and_recovery_neither_loses_nor_duplicates(
    make_store: Callable[[], ActionStateStore], fault: StoreFault, fails: bool
) -> None:
    """FAIL-1/FAIL-5: one clear error; recovery from the last checkpoint gives exactly the crash-free
    outputs; an acknowledged call record is never executed again."""
    expected = crash_free(make_store())
    store = Acknowledging(make_store(), [fault])
    # Pruning on: a prune is one of the operations that fail (every store prunes when asked, RUN-18).
    runner = Runner(Calls, store, checkpoint_every=2, prune=True)
    acknowledged: set[str] = set()
    if fails:
        with pytest.raises(StoreFailedError) as info:
            runner.run(INPUTS)
        error = info.value
        assert error.operation == fault.operation and "injected" in str(error.cause)
        assert error.store.startswith("faulty(") and f"during {fault.operation}" in str(error)
        # Fail fast: nothing touched the store after the failing call.
        assert [op for _, op, _ in store.fired] == [fault.operation]
        calls_at_failure = dict(store.calls)
        acknowledged = set(store.acknowledged)
        store.armed = False
        runner.fail_over()
        result = runner.run()
        assert store.calls["*"] > calls_at_failure["*"]
    else:
        result = runner.run(INPUTS)
    assert result.outputs == expected
    # A call whose terminal record was acknowledged before the failure is replayed, never run again; only
    # calls in flight at the failure (effect done, record not acknowledged) may run twice.
    repeated = {args_digest(k, {}) for k, n in EFFECTS.items() if n > 1}
    assert not repeated & acknowledged
    assert all(n >= 1 for n in EFFECTS.values()) and len(EFFECTS) == 5 * len(INPUTS)


def test_a_dead_store_costs_one_failure_not_one_per_key() -> None:
    """FAIL-1: a store that fails every call from the 3rd get on is called once after it died, although
    eight more keys were waiting in the segment."""
    store = FaultyStore(InMemoryStore(), [StoreFault("get", at=3, repeat=True)])
    keys = [(f"k{i}", i) for i in range(10)]
    with pytest.raises(StoreFailedError, match="during get"):
        Runner(Calls, store).run(keys)
    assert len(store.fired) == 1


def test_a_dead_store_stops_a_synchronous_segment_at_once() -> None:
    """FAIL-1: the synchronous driver used to run every other key of the segment after a store failure."""

    class Sync(Agent):
        @action(InputEvent)
        @staticmethod
        def work(event: Event, ctx: RunnerContext) -> None:
            ctx.send_event(OutputEvent(ctx.durable_execute(effect, ctx.key, 1)))

    store = FaultyStore(InMemoryStore(), [StoreFault("put_call_results", at=2, repeat=True)])
    with pytest.raises(StoreFailedError, match="during put_call_results"):
        Runner(Sync, store).run([(f"k{i}", i) for i in range(10)])
    assert len(store.fired) == 1
    assert store.calls["put_call_results"] == 2


def test_fault_schedule_is_validated() -> None:
    """FAIL-5: an unknown operation or kind is refused when the fault is made."""
    with pytest.raises(ValueError, match="operation"):
        StoreFault("write")
    with pytest.raises(ValueError, match="kind"):
        StoreFault("put", kind="explode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="writes only"):
        StoreFault("get", kind="lose")


# -- SQLite -------------------------------------------------------------------------------------------
REF = StateRef("k", 0, ActionRef("work", "m", "A.work", ("_input_event",)), InputEvent(1), "sk")


def test_sqlite_gap_in_call_records_is_corrupt_record_error(tmp_path: Path) -> None:
    """STORE-9/FAIL-3: a gap in the call records is CorruptRecordError with its location, not StoreError."""
    store = SqliteStore(tmp_path / "s.db")
    store.put(REF, ActionState(task_event=REF.event, call_results=[CallResult.succeeded("f", "d", b"x")] * 3))
    store._conn.execute("DELETE FROM call_results WHERE idx = 1")
    with pytest.raises(CorruptRecordError, match="gap before index 2") as info:
        store.get(REF)
    assert info.value.call_index == 1 and info.value.key == "k"
    store.close()


def test_sqlite_full_disk_reports_the_real_cause(tmp_path: Path) -> None:
    """FAIL-3: a full disk used to surface as "cannot rollback - no transaction is active"."""
    store = SqliteStore(tmp_path / "s.db")
    store.put(REF, ActionState(task_event=REF.event))
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count={pages}")  # the database cannot grow: a full disk
    big = [CallResult.succeeded("f", "d", bytes(4096))] * 64
    with pytest.raises(StoreError) as info:
        store.put_call_results(REF, 0, big)
    message = str(info.value)
    assert "full" in message and "rollback" not in message
    store.close()


def test_sqlite_locked_file_fails_within_its_timeout(tmp_path: Path) -> None:
    """FAIL-2: a file locked by another connection fails after ``timeout`` with a StoreError naming it."""
    import sqlite3

    path = tmp_path / "s.db"
    store = SqliteStore(path, timeout=0.2)
    store.put(REF, ActionState(task_event=REF.event))
    blocker = sqlite3.connect(str(path), isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreFailedError, match=r"sqlite:.*s\.db failed during (get|put).*locked"):
            Runner(Calls, store).run([("k", 1), ("j", 2)])
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        store.close()
