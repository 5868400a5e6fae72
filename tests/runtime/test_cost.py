"""Checkpoints, failover and results share what did not change (spec COST-1..COST-3, COST-5, COST-6).

Cost is measured in benchmarks/ (P7, P8); these tests pin down that the cheap structures give exactly
what a full copy would: a snapshot never sees a later write, a restore puts back exactly the snapshot.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_runtime import (
    Agent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
)
from reference_runtime.errors import Location
from reference_runtime.memory import FlatMemory, MemoryView
from reference_runtime.snapshots import Layered, Prefix
from reference_runtime.stores.memory import InMemoryStore

PATHS = ["a", "b", "a.x", "a.y", "b.z", "c.d.e"]

op = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(PATHS), st.integers(0, 9)),
    st.tuples(st.just("obj"), st.sampled_from(PATHS), st.booleans()),
    st.tuples(st.just("freeze"), st.none(), st.none()),
    st.tuples(st.just("restore"), st.none(), st.none()),
    st.tuples(st.just("crash"), st.sampled_from(PATHS), st.integers(0, 9)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(op, max_size=40))
def test_snapshots_and_restore_match_full_copies(ops: list[tuple[str, Any, Any]]) -> None:
    """COST-1: a frozen snapshot equals a deep copy taken at the same moment, whatever is written
    afterwards; restoring the latest snapshot gives back exactly that copy; a thrown-away write (a
    crashed action's overlay) changes nothing."""
    memory = FlatMemory()
    snapshots: list[tuple[Any, dict[str, Any]]] = []
    for kind, path, arg in ops:
        if kind in ("set", "obj", "crash"):
            view = MemoryView(memory)
            try:
                if kind == "obj":
                    view.new_object(path, overwrite=arg)
                else:
                    view.set(path, arg)
            except ValueError:
                continue  # refused by MEM rules; nothing was written
            if kind != "crash":
                view.commit()
        elif kind == "freeze":
            snapshots.append((memory.freeze(), copy.deepcopy(memory.to_dict())))
        elif snapshots:
            latest, expected = snapshots[-1]
            memory.restore(latest)
            assert memory.to_dict() == expected
        for snap, expected in snapshots:
            assert snap.to_dict() == expected
            assert {p: snap[p].children for p in snap if snap[p].is_object} == {
                p: i.children for p, i in _flat(expected).items()
            }


def _flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    class _Obj:
        def __init__(self, children: list[str]) -> None:
            self.children = children

    out: dict[str, Any] = {prefix: _Obj(list(tree))}
    for name, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}.{name}" if prefix else name))
    return out


def test_adding_a_field_shares_the_parents_child_list() -> None:
    """COST-2: a new field does not copy its parent's list of children; earlier versions still see
    only their own children."""
    memory = FlatMemory()
    view = MemoryView(memory)
    for i in range(3):
        view.set(f"f{i}", i)
    view.commit()
    before = memory.freeze()
    root_before = memory.items[""]
    view = MemoryView(memory)
    view.set("f3", 3)
    view.commit()
    assert memory.items[""]._kids is root_before._kids
    assert before[""].children == ["f0", "f1", "f2"] and memory.items[""].children == ["f0", "f1", "f2", "f3"]


def test_layered_mapping_keeps_few_layers_and_old_versions() -> None:
    """COST-1: a checkpoint's mapping pushes only what changed; older versions are unchanged and the
    number of layers stays logarithmic."""
    versions = [Layered[str, int]()]
    for i in range(1000):
        versions.append(versions[-1].push({f"k{i % 100}": i}))
    assert versions[1] == {"k0": 0}
    assert versions[150]["k49"] == 149 and versions[150]["k0"] == 100
    assert dict(versions[-1]) == {f"k{j}": 900 + j for j in range(100)}
    assert len(versions[-1]._layers) <= 12


def test_prefix_views_ignore_later_appends() -> None:
    """COST-1: results and checkpoints see the log as it was."""
    log = [1, 2]
    view = Prefix(log)
    log.append(3)
    assert view == [1, 2] and list(view) == [1, 2] and len(view) == 2 and view[-1] == 2 and view[0:5] == [1, 2]


def bump(n: int) -> int:
    return n + 1


class Counter(Agent):
    @action(InputEvent)
    @staticmethod
    def count(event: Event, ctx: RunnerContext) -> None:
        mem = ctx.short_term_memory
        n = ctx.durable_execute(bump, mem.get("n") or 0)
        mem.set("n", n)
        mem.set(f"log.i{n}", event.attributes["input"])


def test_failover_restores_only_touched_keys_and_matches_a_fresh_run() -> None:
    """COST-3: with a checkpoint per input over many keys, a crash restores the keys that ran since the
    checkpoint; the result equals a crash-free run's."""
    inputs = [(f"k{i % 30}", i) for i in range(120)]
    clean = Runner(Counter, InMemoryStore(), checkpoint_every=1).run(inputs)
    crashed_runner = Runner(
        Counter,
        InMemoryStore(),
        checkpoint_every=7,
        injector=FaultInjector([CrashAt(Phase.BEFORE_COMPLETE, seq=2, key="k5")]),
    )
    crashed = crashed_runner.run(inputs)
    assert crashed.failovers == 1
    assert crashed.outputs == clean.outputs
    assert dict(crashed.memory) == dict(clean.memory)
    assert crashed.memory["k5"]["n"] == 4
    assert dict(crashed_runner.checkpoints[0].next_seq) == {f"k{i}": 1 for i in range(7)}


def _fill(store: Any, keys: int) -> None:
    Runner(Counter, store).run([(f"other-{i}", i) for i in range(keys)])


def test_sqlite_statements_search_indexes_and_never_scan(tmp_path: Any) -> None:
    """COST-3: every statement the SQLite store runs during calls, misses, gets and prunes is an index
    search; a scan would make its cost grow with earlier calls or other keys."""
    from reference_runtime.stores.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "s.db", synchronous="OFF")
    _fill(store, 20)
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    runner = Runner(
        Counter, store, checkpoint_every=1, injector=FaultInjector([CrashAt(Phase.BEFORE_COMPLETE, key="k")])
    )
    runner.run([("k", 1), ("k", 2)])
    store._conn.set_trace_callback(None)
    plans = {}
    for sql in {s for s in statements if s.split()[0] in ("SELECT", "INSERT", "DELETE", "UPDATE")}:
        rows = store._conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
        plans[sql] = [r[-1] for r in rows]
    assert plans, "no statement was traced"
    scans = {
        sql: plan for sql, plan in plans.items() if any(p.startswith("SCAN") and p != "SCAN CONSTANT ROW" for p in plan)
    }
    assert not scans, scans


class _NoScan(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise AssertionError("the memory store scanned every state")

    values = keys = __iter__ = items


def test_memory_store_misses_and_prunes_look_at_one_key() -> None:
    """COST-3: a miss and a prune in the memory store visit only the business key's own states."""
    store = InMemoryStore()
    _fill(store, 50)
    store._entries = _NoScan(store._entries)
    result = Runner(Counter, store, checkpoint_every=1).run([("k", 1), ("k", 2)])
    assert result.outputs == {} and result.memory["k"]["n"] == 2


_VM: dict[str, Any] = {}


def _counted(i: int) -> int:
    if i == _VM["start"] + 20:
        _VM["conn"].set_progress_handler(None, 0)  # the 20 calls' writes are done; not the completion
    if i == _VM["start"]:
        _VM["steps"] = 0

        def step() -> int:
            _VM["steps"] += 1
            return 0

        _VM["conn"].set_progress_handler(step, 1)
    return i


class ManyCalls(Agent):
    @action(InputEvent)
    @staticmethod
    def calls(event: Event, ctx: RunnerContext) -> None:
        for i in range(event.attributes["input"]):
            ctx.durable_execute(_counted, i)


def _vm_steps_per_call(tmp_path: Any, earlier: int) -> float:
    from reference_runtime.stores.sqlite import SqliteStore

    store = SqliteStore(tmp_path / f"vm-{earlier}.db", synchronous="OFF")
    _VM.update(start=earlier, conn=store._conn)
    Runner(ManyCalls, store).run([("k", earlier + 21)])
    return float(_VM["steps"]) / 20


def test_sqlite_call_cost_is_flat_in_earlier_calls(tmp_path: Any) -> None:
    """COST-3: SQLite virtual-machine steps per durable call (a deterministic measure of the work each
    call does) are the same after 20 and after 3 000 earlier calls of the action."""
    few, many = _vm_steps_per_call(tmp_path, 20), _vm_steps_per_call(tmp_path, 3000)
    assert many <= few * 1.2, (few, many)


_TRACE: dict[str, Any] = {}


def _traced(i: int) -> int:
    """Notes where each durable call starts in the store's statement trace."""
    _TRACE["starts"].append(len(_TRACE["statements"]))
    return i


class TracedCalls(Agent):
    @action(InputEvent)
    @staticmethod
    def calls(event: Event, ctx: RunnerContext) -> None:
        for i in range(event.attributes["input"]):
            ctx.durable_execute(_traced, i)


def test_sqlite_call_record_is_one_statement(tmp_path: Any) -> None:
    """COST-5: between two durable calls the SQLite store runs exactly one statement, the guarded insert
    of the call's record (its own transaction: no BEGIN, no COMMIT, no read before it), whose reads are
    primary-key searches and which builds no temporary table; a record refused by the guard still raises
    (tests/stores/test_sqlite_call_guard.py)."""
    from reference_runtime.stores.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "one.db", synchronous="OFF")
    _TRACE.update(starts=[], statements=[])
    store._conn.set_trace_callback(_TRACE["statements"].append)
    Runner(TracedCalls, store).run([("k", 30)])
    store._conn.set_trace_callback(None)
    statements, starts = _TRACE["statements"], _TRACE["starts"]
    between = [statements[a:b] for a, b in itertools.pairwise(starts)]
    assert len(between) == 29
    assert all(len(s) == 1 and s[0].startswith("INSERT OR REPLACE INTO call_results VALUES") for s in between), between
    plan = [r[-1] for r in store._conn.execute("EXPLAIN QUERY PLAN " + between[0][0]).fetchall()]
    assert plan and all(not p.startswith("SCAN") or p == "SCAN CONSTANT ROW" for p in plan), plan
    # No temporary table: an INSERT ... SELECT reading the table it writes would be copied through one.
    opcodes = [r[1] for r in store._conn.execute("EXPLAIN " + between[0][0]).fetchall()]
    assert "Insert" in opcodes and "OpenEphemeral" not in opcodes, opcodes


def _wal_bytes(path: Any) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_sqlite_full_reuses_a_small_wal_and_normal_keeps_the_default(tmp_path: Any) -> None:
    """COST-6: at FULL the store checkpoints every 100 pages, so 400 calls leave a WAL of about 100 frames
    (reused from its start after each checkpoint); at NORMAL SQLite's 1 000-page default holds and the same
    calls grow the WAL past that."""
    from reference_runtime.stores.sqlite import FULL_WAL_AUTOCHECKPOINT, SqliteStore

    frame = 4096 + 24
    sizes = {}
    for mode in ("FULL", "NORMAL"):
        store = SqliteStore(tmp_path / f"{mode}.db", synchronous=mode)
        (pages,) = store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()
        assert pages == (FULL_WAL_AUTOCHECKPOINT if mode == "FULL" else 1000)
        Runner(TracedCalls, store).run([("k", 400)])
        sizes[mode] = _wal_bytes(store.path)
        store.close()
    # A commit may add a few frames past the threshold before the checkpoint that follows it.
    assert sizes["FULL"] <= (FULL_WAL_AUTOCHECKPOINT + 16) * frame + 32, sizes
    assert sizes["NORMAL"] > 2 * (FULL_WAL_AUTOCHECKPOINT + 16) * frame, sizes


def test_sqlite_unknown_synchronous_is_refused(tmp_path: Any) -> None:
    """COST-6: a misspelt ``synchronous`` is one ValueError naming the accepted values; no file is made."""
    from reference_runtime.stores.sqlite import SqliteStore

    with pytest.raises(ValueError, match=r"synchronous='FUL'.*OFF, NORMAL, FULL, EXTRA"):
        SqliteStore(tmp_path / "x.db", synchronous="FUL")
    assert not (tmp_path / "x.db").exists()
    assert SqliteStore(tmp_path / "y.db", synchronous="full") is not None


def test_failover_limit_counts_the_failovers_of_one_run() -> None:
    """RUN-7/REC-1: ``max_failovers`` bounds one ``run`` call; a long-lived runner that failed over in
    earlier runs is not refused later."""
    runner = Runner(Counter, InMemoryStore(), checkpoint_every=1)
    for i in range(3):
        runner.injector = FaultInjector([CrashAt(Phase.AFTER_COMPLETE)])
        runner.run([("k", i)], max_failovers=1)
    assert runner.failovers == 3


def test_the_p1a_floor_makes_what_a_durable_call_makes() -> None:
    """Benchmark P1a prints a floor beside the durable call: ``least_call``, the work every call must do with
    nothing checked. It is a floor only if it does that work: the same outputs, journal (call ids, function
    ids, digests), records written to the store, and ``current_call()`` inside the function."""
    from benchmarks import p1_overhead as p1
    from reference_runtime.durable import current_call
    from reference_runtime.records import CallResult, StateRef

    keys: list[str] = []

    def step(i: int) -> int:
        keys.append(current_call().idempotency_key)
        return i * 3

    class Calls(Agent):
        @action(InputEvent)
        @staticmethod
        def run(event: Event, ctx: RunnerContext) -> None:
            ctx.send_event(OutputEvent([ctx.durable_execute(step, i) for i in range(event.attributes["input"])]))

    class Kept(InMemoryStore):
        """Keeps every record written (the runner prunes a finished action's state)."""

        def __init__(self) -> None:
            super().__init__()
            self.written: list[tuple[int, tuple[Any, ...]]] = []

        def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
            self.written += [(index + i, tuple(r)) for i, r in enumerate(results)]
            super().put_call_results(ref, index, results)

    made = {}
    real = RunnerContext.durable_execute
    for mode in ("real", "floor"):
        keys.clear()
        store = Kept()
        if mode == "floor":
            RunnerContext.durable_execute = p1.least_call  # type: ignore[method-assign,assignment]
        try:
            result = Runner(Calls, store).run([("k", 5)])
        finally:
            RunnerContext.durable_execute = real  # type: ignore[method-assign]
        made[mode] = (result.outputs, [tuple(e) for e in result.journal], store.written, list(keys))
    assert made["floor"] == made["real"]
    assert len(made["real"][2]) == 5 and made["real"][0] == {"k": [[0, 3, 6, 9, 12]]}


class _Producer:
    """A producer that keeps what it is given and reports delivery on the next ``poll``: no broker."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes]] = []
        self._reports: list[Any] = []

    def produce(self, topic: str, *, key: bytes, value: bytes, partition: int, on_delivery: Any) -> None:
        self.records.append((key, value))
        self._reports.append(on_delivery)

    def poll(self, timeout: float) -> int:
        reports, self._reports = self._reports, []
        for report in reports:
            report(None, None)
        return len(reports)


def test_the_p10_format_floors_write_what_the_kafka_stores_write() -> None:
    """Benchmark P10 prints each Kafka format's floor: a store that does only what the format needs on every
    write. They are floors only if they write the format's record: the native call record under its ``C|``
    key, and for the flink-agents format the whole state with every call result so far under its state key
    (WIRE-2), byte for byte what the whole model re-serialised gives."""
    from benchmarks import p10_redis as p10
    from reference_runtime.records import ActionState, CallResult, StateRef
    from reference_runtime.stores.kafka_flink_format import decode_value, encode_value
    from reference_runtime.stores.kafka_native_format import c_key
    from reference_runtime.stores.native import decode_call_result

    class Kept(InMemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.results: list[CallResult] = []
            self.state_key = ""
            self.opened: ActionState | None = None

        def put(self, ref: StateRef, state: ActionState) -> None:
            if self.opened is None:
                self.opened = copy.deepcopy(state)  # the state the action's execution opened with
            super().put(ref, state)

        def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
            self.results += results
            self.state_key = ref.state_key
            super().put_call_results(ref, index, results)

    calls = 5
    kept = Kept()
    Runner(p10.Loop, kept).run([("k", calls)])
    native, flink = _Producer(), _Producer()
    Runner(p10.Loop, p10.FloorStore(native, "t", keyed=True)).run([("k", calls)])
    Runner(p10.Loop, p10.FlinkFormatFloorStore(flink, "t")).run([("k", calls)])
    assert len(native.records) == len(flink.records) == calls
    for index, (key, value) in enumerate(native.records):
        assert decode_call_result(value, Location("k", 0, "loop", index)) == kept.results[index]
        assert key.decode() == c_key(kept.state_key, index)
    assert kept.opened is not None
    for index, (key, value) in enumerate(flink.records):
        # The whole state the action opened with, every call result so far in it, as the format writes it.
        assert value == encode_value(dataclasses.replace(kept.opened, call_results=kept.results[: index + 1]))
        assert decode_value(value)[0].call_results == kept.results[: index + 1]
        assert key.decode() == kept.state_key


class _Duck:
    """A store by shape only: every member of the protocol, no base class."""

    def put(self, ref: Any, state: Any) -> None: ...
    def get(self, ref: Any) -> Any: ...
    def put_call_results(self, ref: Any, index: int, results: Any) -> None: ...
    def truncate_call_results(self, ref: Any, index: int) -> None: ...
    def prune_state(self, key: str, seq: int) -> None: ...
    def get_recovery_marker(self) -> Any: ...
    def rebuild_state(self, markers: Any) -> None: ...
    def close(self) -> None: ...


class _NoClose(_Duck):
    close = None  # type: ignore[assignment]


class _Attached:
    """Its members set on the instance, none on the class."""

    def __init__(self) -> None:
        for name in ("put", "get", "put_call_results", "truncate_call_results", "prune_state"):
            setattr(self, name, lambda *a: None)
        for name in ("get_recovery_marker", "rebuild_state", "close"):
            setattr(self, name, lambda *a: None)


@pytest.mark.parametrize("make", [InMemoryStore, _Duck, _NoClose, _Attached, object, lambda: "memory:"])
def test_the_store_check_answers_as_isinstance_of_the_protocol(make: Any) -> None:
    """COST-1 (a runner per sweep scenario): ``is_store`` remembers the types whose every instance is a store
    and answers as ``isinstance(obj, ActionStateStore)`` for every kind of object, the first time and after."""
    from reference_runtime.stores.base import ActionStateStore, is_store

    for _ in range(2):
        obj = make()
        assert is_store(obj) is isinstance(obj, ActionStateStore)
