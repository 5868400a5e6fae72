"""The store conformance suite: subclass :class:`StoreConformance` and provide ``durable_store_factory``.

Each check cites the spec clauses it proves with :func:`conformance.marks.clause` and the capability it
needs with :func:`conformance.marks.capability`; the report groups results by capability. A failed check
names its clauses and shows what it expected and what the store gave back.
"""

from __future__ import annotations

import functools
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from reference_runtime.events import Event, InputEvent, OutputEvent, ToolResponseEvent
from reference_runtime.records import ActionState, CallResult, MemoryUpdate
from reference_runtime.stores.base import ActionStateStore

from .attribution import explain
from .crash import KillConformance
from .deadline import CHECK_TIMEOUT, guarded_check
from .factory import StoreFactory
from .marks import capability, clause
from .session import session_seed
from .states import (  # re-exported: checks written elsewhere use them from here
    ACTION,
    AWKWARD_KEYS,
    OTHER,
    calls_of,
    fidelity_values,
    present,
    ref,
    same_state,
    tagged,
    typed,
)
from .store_limits import StoreLimitsConformance
from .store_regressions import PayloadConformance, RestartSequenceConformance

#: Seconds the kit waits for a store call made on another thread, or for threads to meet (spec KIT-8).
WAIT = 30.0


def on_threads(calls: Sequence[Callable[[], Any]], cid: str) -> list[Any]:
    """Run each of ``calls`` on a thread of its own, all at once, and return their results in order. Every
    wait is bounded: a call still running after :data:`WAIT` seconds fails ``cid`` (its daemon thread is left
    behind, blocked in the backend), and a call that raised fails ``cid`` naming what it raised."""
    results: list[Any] = [None] * len(calls)
    errors: list[tuple[int, BaseException]] = []

    def run(n: int) -> None:
        try:
            results[n] = calls[n]()
        except BaseException as exc:
            errors.append((n, exc))

    threads = [threading.Thread(target=run, args=(n,), daemon=True, name=f"conformance-{n}") for n in range(len(calls))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + WAIT
    for n, t in enumerate(threads):
        t.join(max(0.0, deadline - time.monotonic()))
        assert not t.is_alive(), (
            f"{cid}: a store call on thread {n} did not return within {WAIT:g} s (the backend blocks)"
        )
    if errors:
        n, exc = min(errors, key=lambda e: isinstance(e[1], threading.BrokenBarrierError))
        raise AssertionError(f"{cid}: the store raised on thread {n}: {explain(exc)}") from exc
    return results


class _StoreChecks:
    """Every store-protocol check. Not collected itself (no ``Test`` prefix); a subclass named
    ``Test…`` is. The backend comes from the ``durable_store_factory`` fixture."""

    #: Seconds each check may take, setup and teardown included, before it fails as hung (spec KIT-8). A
    #: subclass may allow more, e.g. for a remote store on a slow network.
    check_timeout: float = CHECK_TIMEOUT

    @pytest.fixture(autouse=True)
    def _time_limit(self, request: pytest.FixtureRequest) -> Iterator[None]:
        with guarded_check(request.node, self.check_timeout):
            yield

    @pytest.fixture(autouse=True)
    def _backend_property(self, request: pytest.FixtureRequest, durable_store_factory: StoreFactory) -> None:
        request.node.user_properties.append(("backend", durable_store_factory.name))
        declared = ",".join(sorted(durable_store_factory.capabilities))
        request.node.user_properties.append(("declared_capabilities", declared))

    @pytest.fixture
    def store(self, durable_store_factory: StoreFactory) -> Iterator[ActionStateStore]:
        s = durable_store_factory.new()
        yield s
        s.close()

    def _restart(self, factory: StoreFactory, store: ActionStateStore) -> ActionStateStore:
        if "restart" not in factory.capabilities:
            pytest.skip("backend does not declare the 'restart' capability")
        if factory.reopen is None:
            pytest.fail("backend declares 'restart' but its factory has no reopen (CONF-1)")
        return factory.reopen(store)

    @clause("CONF-1")
    @capability("core")
    def test_declared_capabilities_are_detected(self, durable_store_factory: StoreFactory) -> None:
        """CONF-1: every declared capability is detected."""
        missing = durable_store_factory.capabilities - durable_store_factory.detected()
        assert not missing, f"CONF-1: declared but not detected: {sorted(missing)}"

    # -- STORE-1: fidelity ----------------------------------------------------------------------------------
    @clause("STORE-1")
    @capability("core")
    def test_put_get_round_trip(self, store: ActionStateStore) -> None:
        """STORE-1: get returns what put stored: every field, every call-result status (legacy ``None``
        included), lineage of events."""
        task = Event("custom", {"q": [1, "x"]}, upstream_event_id="up-1", upstream_action_name="before")
        state = ActionState(
            task_event=task,
            sensory_memory_updates=[MemoryUpdate("s", 1)],
            short_term_memory_updates=[MemoryUpdate("a.b", {"k": [1.5, None]}), MemoryUpdate("o", None, True)],
            output_events=[InputEvent("out-1"), Event("second", {"n": 2})],
            call_results=[
                CallResult.succeeded("f", "d1", b"\x00r"),
                CallResult.failed("g", "d2", b"e"),
                CallResult.pending("h", "d3"),
                CallResult("legacy", "d4", b"old", None, None),
                CallResult.succeeded("n", "d5", None),
                CallResult.succeeded("e", "d6", b""),
            ],
        )
        store.put(ref("k", 0), state)
        same_state("STORE-1", "get after put", state, store.get(ref("k", 0)))

    @clause("STORE-1")
    @capability("core")
    def test_values_round_trip_at_full_fidelity(self, store: ActionStateStore) -> None:
        """STORE-1: memory values, event attributes and payloads of every type memory may hold come back
        with their type and exact value (bool is not int, -0.0, big ints, bytes, unicode, nesting)."""
        values = fidelity_values()
        state = ActionState(
            task_event=InputEvent(values),
            short_term_memory_updates=[MemoryUpdate(f"v.{name}", v) for name, v in values.items()],
            sensory_memory_updates=[MemoryUpdate("пути.键", values["nested"]), MemoryUpdate("x", None, True)],
            output_events=[Event("ünï", dict(values))],
            call_results=[
                CallResult.succeeded("módulo.función", "ab", bytes(range(256))),
                CallResult.failed("mod.f🔑", "cd", "ошибка".encode()),
            ],
        )
        store.put(ref("k", 0), state)
        same_state("STORE-1", "get after put of unusual values", state, store.get(ref("k", 0)))

    @clause("STORE-1")
    @capability("core")
    def test_large_state_round_trips(self, store: ActionStateStore) -> None:
        """STORE-1: a large state (a 512 KiB payload, a string past 64 Ki characters, hundreds of records and
        updates) comes back whole. It stays under 1 MB encoded, a common record-size limit (Kafka's)."""
        rng = random.Random(7)
        blob = rng.randbytes(1 << 19)
        state = ActionState(
            task_event=InputEvent("x" * 70_000),
            short_term_memory_updates=[MemoryUpdate(f"m.k{i}", {"i": i, "s": "é" * (i % 40)}) for i in range(200)]
            + [MemoryUpdate("long", "y" * 70_000)],
            call_results=[CallResult.succeeded("f", f"d{i}", rng.randbytes(i % 97)) for i in range(250)]
            + [CallResult.succeeded("big", "blob", blob)],
        )
        store.put(ref("k", 0), state)
        same_state("STORE-1", "get after put of a large state", state, store.get(ref("k", 0)))

    @clause("STORE-1")
    @clause("STORE-8")
    @capability("core")
    def test_a_state_put_twice_is_replaced_whole(self, store: ActionStateStore) -> None:
        """STORE-1, STORE-8: a second put of the same state key replaces the first entirely: fewer call
        results, other memory updates and events, and the completed flag both ways."""
        r = ref("k", 0)
        store.put(r, tagged("first", calls=5))
        second = tagged("second", calls=2)
        store.put(r, second)
        same_state("STORE-1", "second put with fewer call results", second, store.get(r))
        store.put_call_results(r, 2, [CallResult.succeeded("f2", "second", b"new")])
        got = calls_of("STORE-1", "a delta after the second put", store.get(r))
        assert [c[1] for c in got] == ["second"] * 3, (
            f"STORE-1: records of the first put resurfaced: expected digests ['second']*3, got {[c[1] for c in got]}"
        )
        done = tagged("done", calls=0)
        done.completed = True
        store.put(r, done)
        same_state("STORE-8", "completed state put over one with call results", done, store.get(r))
        again = tagged("again", calls=1)
        store.put(r, again)
        same_state("STORE-1", "state put after a completed one", again, store.get(r))

    @clause("STORE-15")
    @capability("core")
    def test_store_keeps_its_own_copy(self, store: ActionStateStore) -> None:
        """STORE-15: mutating a state (its lists, memory values, event attributes) after put, or mutating a
        state get returned, changes nothing stored."""
        r = ref("k", 0)
        value = {"list": [1, 2]}
        state = ActionState(
            task_event=InputEvent({"a": [1]}),
            short_term_memory_updates=[MemoryUpdate("v", value)],
            call_results=[CallResult.succeeded("f", "d", b"1")],
        )
        store.put(r, state)
        expected = ActionState(
            task_event=InputEvent({"a": [1]}),
            short_term_memory_updates=[MemoryUpdate("v", {"list": [1, 2]})],
            call_results=[CallResult.succeeded("f", "d", b"1")],
        )
        expected.task_event.id = state.task_event.id  # type: ignore[union-attr]
        value["list"].append(3)
        state.call_results.append(CallResult.succeeded("g", "d", b"2"))
        state.short_term_memory_updates.append(MemoryUpdate("w", 1))
        state.task_event.attributes["input"]["a"].append(2)  # type: ignore[union-attr]
        same_state("STORE-15", "after the caller mutated the state it put", expected, store.get(r))
        got = store.get(r)
        assert got is not None
        got.call_results.append(CallResult.succeeded("h", "d", b"3"))
        got.short_term_memory_updates[0].value["list"].append(4)
        got.task_event.attributes["input"]["a"].append(5)  # type: ignore[union-attr]
        same_state("STORE-15", "after the caller mutated a state get returned", expected, store.get(r))
        results = [CallResult.succeeded("g", "d", b"2")]
        store.put_call_results(r, 1, results)
        results.append(CallResult.succeeded("x", "d", b"x"))
        assert len(calls_of("STORE-15", "after mutating a delta's list", store.get(r))) == 2, (
            "STORE-15: the store kept the caller's list of call results: expected 2 records"
        )

    # -- STORE-2..4: addressing and boundaries ----------------------------------------------------------------
    @clause("STORE-2")
    @capability("core")
    def test_keys_and_actions_are_isolated(self, store: ActionStateStore) -> None:
        """STORE-2: states of other keys and actions are untouched by writes and prunes."""
        store.put(ref("a", 0), ActionState(call_results=[CallResult.succeeded("f", "1", b"a")]))
        store.put(ref("a", 0, OTHER), ActionState(call_results=[CallResult.succeeded("f", "1", b"o")]))
        store.put(ref("b", 0), ActionState(call_results=[CallResult.succeeded("f", "1", b"b")]))
        store.put_call_results(ref("a", 0), 1, [CallResult.succeeded("g", "2", b"a2")])
        store.truncate_call_results(ref("a", 0, OTHER), 1)
        store.prune_state("b", 0)
        got_other = [c[2] for c in calls_of("STORE-2", "the other action", store.get(ref("a", 0, OTHER)))]
        got_a = [c[2] for c in calls_of("STORE-2", "key a", store.get(ref("a", 0)))]
        assert got_other == [b"o"], f"STORE-2: the other action's records: expected [b'o'], got {got_other}"
        assert got_a == [b"a", b"a2"], f"STORE-2: key a's records: expected [b'a', b'a2'], got {got_a}"

    @clause("STORE-2")
    @clause("STORE-4")
    @capability("core")
    def test_awkward_business_keys_stay_apart(self, store: ActionStateStore) -> None:
        """STORE-2, STORE-4: business keys that are prefixes of one another, hold separators, wildcards or
        non-ASCII characters are distinct: each reads its own state, and a prune of one touches no other."""
        for key in AWKWARD_KEYS:
            store.put(ref(key, 0), tagged(f"t:{key}"))
        for key in AWKWARD_KEYS:
            same_state("STORE-2", f"business key {key!r}", tagged(f"t:{key}"), store.get(ref(key, 0)))
        pruned: set[str] = set()
        for victim in ("a", "键🔑", ""):
            store.prune_state(victim, 0)
            pruned.add(victim)
            for key in AWKWARD_KEYS:
                present("STORE-4", store, ref(key, 0), key not in pruned, f"after prune_state({victim!r}, 0)")

    @clause("STORE-3")
    @capability("core")
    def test_miss_hides_later_sequence_numbers(self, store: ActionStateStore) -> None:
        """STORE-3: a miss at seq n hides seq > n of that key only — numerically (seq 10 is after seq 9),
        not for keys that merely start with the same characters; a later put is visible again."""
        for seq in (0, 2, 3, 9, 10, 11, 25):
            store.put(ref("k", seq), tagged(f"k{seq}"))
        for key in ("j", "k1", "kk", "k_2"):
            store.put(ref(key, 9), tagged(key))
        present("STORE-3", store, ref("k", 1), False, "was never put")
        present("STORE-3", store, ref("k", 0), True, "is below the miss at seq 1")
        for seq in (2, 3, 9, 10, 11, 25):
            present("STORE-3", store, ref("k", seq), False, "is above a miss at seq 1")
        for key in ("j", "k1", "kk", "k_2"):
            present("STORE-3", store, ref(key, 9), True, "belongs to another key than the miss at ('k', 1)")
        store.put(ref("k", 2), tagged("k2-new"))
        same_state("STORE-3", "a state put after the miss", tagged("k2-new"), store.get(ref("k", 2)))

    @clause("STORE-3")
    @capability("core")
    def test_miss_past_nine_compares_numerically(self, store: ActionStateStore) -> None:
        """STORE-3: a miss at seq 9 hides seq 10 and 100; a miss at seq 10 keeps seq 2..9."""
        for seq in (2, 9, 10, 100):
            store.put(ref("n", seq), tagged(f"n{seq}"))
        present("STORE-3", store, ref("n", 11), False, "was never put")
        for seq in (2, 9, 10):
            present("STORE-3", store, ref("n", seq), True, "is below a miss at seq 11")
        present("STORE-3", store, ref("n", 100), False, "is above a miss at seq 11")
        present("STORE-3", store, ref("n", 3), False, "was never put")
        for seq in (9, 10):
            present("STORE-3", store, ref("n", seq), False, "is above a miss at seq 3")
        present("STORE-3", store, ref("n", 2), True, "is below a miss at seq 3")

    @clause("STORE-4")
    @capability("core")
    def test_prune_boundaries(self, store: ActionStateStore) -> None:
        """STORE-4: prune(key, n) removes seq ≤ n of that key, keeps seq > n and other keys — numerically,
        past seq 9 too."""
        for seq in (0, 1, 2, 3, 9, 10, 11, 20):
            store.put(ref("k", seq), tagged(f"k{seq}"))
        store.put(ref("j", 0), tagged("j"))
        store.put(ref("k1", 0), tagged("k1"))
        store.prune_state("k", 10)
        present("STORE-4", store, ref("k", 11), True, "is above prune_state('k', 10)")
        present("STORE-4", store, ref("k", 20), True, "is above prune_state('k', 10)")
        present("STORE-4", store, ref("j", 0), True, "belongs to another key than the prune")
        present("STORE-4", store, ref("k1", 0), True, "belongs to key 'k1', not 'k'")
        store.prune_state("k", 11)
        present("STORE-4", store, ref("k", 20), True, "is above prune_state('k', 11)")
        # Absent ones last, as each miss hides the later sequence numbers (STORE-3); seq 9 first, the one a
        # text comparison ("9" > "11") keeps.
        for seq in (9, 3, 2, 11, 10, 1, 0):
            present("STORE-4", store, ref("k", seq), False, "is at or below prune_state('k', 11)")

    # -- STORE-5: deltas --------------------------------------------------------------------------------------
    @clause("STORE-5")
    @capability("core")
    def test_call_results_finalize_in_place_append_and_truncate(self, store: ActionStateStore) -> None:
        """STORE-5: deltas: a PENDING slot finalized in place, appends, truncation."""
        r = ref("k", 0)
        store.put(r, ActionState(task_event=r.event))
        store.put_call_results(r, 0, [CallResult.pending("f", "d")])
        store.put_call_results(r, 0, [CallResult.succeeded("f", "d", b"1")])
        store.put_call_results(r, 1, [CallResult.pending("g", "d"), CallResult.pending("h", "d")])
        store.put_call_results(r, 2, [CallResult.failed("h", "d", b"boom")])
        got = [(c[0], c[3]) for c in calls_of("STORE-5", "after deltas", store.get(r))]
        assert got == [("f", "SUCCEEDED"), ("g", "PENDING"), ("h", "FAILED")], (
            f"STORE-5: expected [('f', 'SUCCEEDED'), ('g', 'PENDING'), ('h', 'FAILED')], got {got}"
        )
        store.truncate_call_results(r, 1)
        got_ids = [c[0] for c in calls_of("STORE-5", "after truncate at 1", store.get(r))]
        assert got_ids == ["f"], f"STORE-5: after truncate_call_results(1) expected ['f'], got {got_ids}"

    @clause("STORE-5")
    @capability("core")
    def test_many_deltas_keep_their_order(self, store: ActionStateStore) -> None:
        """STORE-5: past index 9 slots stay in index order; a batch of PENDING slots finalized out of order
        lands each at its own index; a multi-record delta replaces a middle range; truncation to 0 and past
        the end."""
        r = ref("k", 0)
        store.put(r, ActionState(task_event=r.event, call_results=[CallResult.succeeded("f", "0", b"0")]))
        for i in range(1, 12):
            store.put_call_results(r, i, [CallResult.succeeded("f", str(i), str(i).encode())])
        store.put_call_results(r, 12, [CallResult.pending("b", str(12 + i)) for i in range(4)])
        for i in (14, 12, 15, 13):
            store.put_call_results(r, i, [CallResult.succeeded("b", str(i), b"b%d" % i)])
        store.put_call_results(r, 3, [CallResult.failed("m", "3", b"x"), CallResult.failed("m", "4", b"y")])
        got = calls_of("STORE-5", "after 16 deltas", store.get(r))
        want = [(("m" if i in (3, 4) else "b" if i >= 12 else "f"), str(i)) for i in range(16)]
        assert [(c[0], c[1]) for c in got] == want, (
            f"STORE-5: slots out of place: expected {want}, got {[(c[0], c[1]) for c in got]}"
        )
        assert [c[3] for c in got[12:]] == ["SUCCEEDED"] * 4
        store.truncate_call_results(r, 20)
        assert len(calls_of("STORE-5", "truncate past the end", store.get(r))) == 16
        store.truncate_call_results(r, 10)
        assert [c[1] for c in calls_of("STORE-5", "truncate at 10", store.get(r))] == [str(i) for i in range(10)]
        store.put_call_results(r, 10, [CallResult.succeeded("z", "10", b"z")])
        got_ids = [c[1] for c in calls_of("STORE-5", "append after truncation", store.get(r))]
        assert got_ids == [str(i) for i in range(11)], (
            f"STORE-5: truncated records resurfaced: expected 11 records 0..10, got {got_ids}"
        )
        store.truncate_call_results(r, 0)
        assert calls_of("STORE-5", "truncate at 0", store.get(r)) == []

    @clause("STORE-8")
    @capability("core")
    def test_completed_state_replays_without_call_results(self, store: ActionStateStore) -> None:
        """STORE-8: a completed state put over one with call results keeps memory updates and outputs,
        and no call results."""
        r = ref("k", 0)
        store.put(r, ActionState(task_event=r.event, call_results=[CallResult.succeeded("f", "d", b"1")]))
        done = ActionState(
            task_event=r.event,
            short_term_memory_updates=[MemoryUpdate("x", 1)],
            output_events=[InputEvent("out")],
            call_results=[],
        )
        done.mark_completed()
        store.put(r, done)
        same_state("STORE-8", "completed state", done, store.get(r))

    @clause("STORE-16")
    @capability("core")
    def test_writes_are_visible_across_threads(self, store: ActionStateStore) -> None:
        """STORE-16: the store is used from several threads one at a time (the runner's, the async pool's):
        a write that returned on one thread is read back on any other."""

        def on_thread(fn: Any) -> Any:
            (outcome,) = on_threads([fn], "STORE-16")
            return outcome

        r = ref("t", 0)
        on_thread(lambda: store.put(r, tagged("t", calls=1)))
        same_state("STORE-16", "a put made on another thread", tagged("t", calls=1), store.get(r))
        on_thread(lambda: store.put_call_results(r, 1, [CallResult.succeeded("f1", "t", b"t")]))
        got = on_thread(lambda: store.get(r))
        same_state("STORE-16", "read on a third thread", tagged("t", calls=2), got)
        store.truncate_call_results(r, 0)
        got = on_thread(lambda: store.get(r))
        assert got is not None and got.call_results == [], (
            f"STORE-16: a truncation made on the main thread: expected no records on another thread, "
            f"got {None if got is None else got.call_results}"
        )

    # -- restart ----------------------------------------------------------------------------------------------
    @clause("STORE-6")
    @capability("restart")
    def test_rebuild_after_restart(self, durable_store_factory: StoreFactory, store: ActionStateStore) -> None:
        """STORE-6: states put after the markers are readable after a restart and rebuild, with their deltas,
        truncations and prunes. States put before the marker are not required (a store may replay from
        the marker, as Kafka does)."""
        store.put(ref("old", 0), tagged("old"))
        marker = store.get_recovery_marker()
        store.put(ref("k", 1), tagged("k1", calls=1))
        store.put_call_results(ref("k", 1), 1, [CallResult.succeeded("f1", "k1", b"k1")])
        store.put(ref("k", 12), tagged("k12", calls=3))
        store.truncate_call_results(ref("k", 12), 1)
        store.put(ref("gone", 0), tagged("gone"))
        store.prune_state("gone", 0)
        again = self._restart(durable_store_factory, store)
        again.rebuild_state([marker])
        same_state("STORE-6", "state put after the marker, with a delta", tagged("k1", calls=2), again.get(ref("k", 1)))
        same_state("STORE-6", "state put after the marker, truncated", tagged("k12", calls=1), again.get(ref("k", 12)))
        present("STORE-6", again, ref("gone", 0), False, "was pruned before the restart")
        again.close()

    @clause("STORE-6")
    @capability("restart")
    def test_markers_taken_several_times(self, durable_store_factory: StoreFactory, store: ActionStateStore) -> None:
        """STORE-6: taking a marker changes nothing; rebuilding from the markers of a checkpoint (the
        minimum wins, in any order) restores every state put after the earliest one; a second restart
        without new markers restores them again."""
        store.put(ref("early", 0), tagged("early"))
        first = store.get_recovery_marker()
        store.put(ref("a", 0), tagged("a"))
        again_first = store.get_recovery_marker()
        store.put(ref("b", 0), tagged("b"))
        second = store.get_recovery_marker()
        store.put(ref("c", 0), tagged("c"))
        s2 = self._restart(durable_store_factory, store)
        s2.rebuild_state([second, first, again_first])
        for key in ("a", "b", "c"):
            same_state("STORE-6", f"state {key!r} after rebuild from several markers", tagged(key), s2.get(ref(key, 0)))
        s3 = self._restart(durable_store_factory, s2)
        s3.rebuild_state([first])
        for key in ("a", "b", "c"):
            same_state("STORE-6", f"state {key!r} after a second restart", tagged(key), s3.get(ref(key, 0)))
        s3.close()

    @clause("STORE-7")
    @capability("restart")
    def test_truncation_survives_restart(self, durable_store_factory: StoreFactory, store: ActionStateStore) -> None:
        """STORE-7: a truncation or finalize that returned is durable across a restart."""
        r = ref("k", 0)
        marker = store.get_recovery_marker()
        store.put(r, ActionState(call_results=[CallResult.succeeded("f", "d", b"1"), CallResult.pending("g", "d")]))
        store.put_call_results(r, 1, [CallResult.succeeded("g", "d", b"2")])
        store.put_call_results(r, 2, [CallResult.pending("h", "d")])
        s2 = self._restart(durable_store_factory, store)
        s2.rebuild_state([marker])
        got = [(c[0], c[3]) for c in calls_of("STORE-7", "after a restart", s2.get(r))]
        assert got == [("f", "SUCCEEDED"), ("g", "SUCCEEDED"), ("h", "PENDING")], (
            f"STORE-7: expected the finalized records [f SUCCEEDED, g SUCCEEDED, h PENDING], got {got}"
        )
        s2.truncate_call_results(r, 1)
        again = self._restart(durable_store_factory, s2)
        again.rebuild_state([marker])
        got_ids = [c[0] for c in calls_of("STORE-7", "after truncate and restart", again.get(r))]
        assert got_ids == ["f"], (
            f"STORE-7: a truncation that returned was lost by a restart: expected ['f'], got {got_ids}"
        )
        again.close()

    @clause("STORE-5")
    @capability("concurrent_writers")
    def test_concurrent_writers_on_distinct_keys(
        self, durable_store_factory: StoreFactory, store: ActionStateStore
    ) -> None:
        """STORE-5: deltas from several threads on distinct keys, started together and switching threads
        often, all land."""
        if "concurrent_writers" not in durable_store_factory.capabilities:
            pytest.skip("backend does not declare 'concurrent_writers'")
        barrier = threading.Barrier(4, timeout=WAIT)

        def writer(key: str) -> None:
            r = ref(key, 0)
            try:
                store.put(r, ActionState())
            except BaseException:
                barrier.abort()  # the others must not wait for a writer that is gone
                raise
            barrier.wait()
            for i in range(40):
                store.put_call_results(r, i, [CallResult.succeeded("f", str(i), b"x")])
                store.put(ref(key, i + 1), tagged(f"{key}/{i}"))

        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # interleave the writers as much as the interpreter allows
        try:
            on_threads([functools.partial(writer, f"k{n}") for n in range(4)], "STORE-5")
        finally:
            sys.setswitchinterval(interval)

        for n in range(4):
            got = [c[1] for c in calls_of("STORE-5", f"key k{n}", store.get(ref(f"k{n}", 0)))]
            assert got == [str(i) for i in range(40)], f"STORE-5: key k{n} lost concurrent deltas: got {got}"
            for i in (1, 20, 40):
                same_state("STORE-5", f"concurrent put k{n}/{i}", tagged(f"k{n}/{i - 1}"), store.get(ref(f"k{n}", i)))


class ModelConformance:
    """Mixin: the model-based check (random operation sequences and restarts against a dict model)."""

    @clause("STORE-1")
    @clause("STORE-3")
    @clause("STORE-4")
    @clause("STORE-5")
    @capability("core")
    def test_store_matches_reference_model(
        self, request: pytest.FixtureRequest, durable_store_factory: StoreFactory
    ) -> None:
        """STORE-1/3/4/5: random sequences of put/get/delta/truncate/prune/restart agree with a model.
        The session seed (``--durable-conformance-seed``, printed in the report) makes the sequences repeatable."""
        from hypothesis import seed
        from hypothesis.stateful import run_state_machine_as_test

        from .model import make_machine

        machine = make_machine(durable_store_factory)
        run_seed = session_seed(request.config)
        if run_seed is not None:
            machine = seed(run_seed)(machine)
        run_state_machine_as_test(machine, settings=machine.TestCase.settings)


class CheckedEvent(Event):
    """A user event class with a property and an instance field, for the EVT-1 check."""

    TYPE = "conformance-checked"

    def __init__(self, value: int) -> None:
        super().__init__(self.TYPE, {"value": value})
        self.note = f"v{value}"

    @property
    def value(self) -> int:
        return int(self.attributes["value"])


class TypedEventConformance:
    """Mixin: stored events come back as the classes they were stored as."""

    @clause("EVT-1")
    @capability("core")
    def test_output_events_keep_their_class_and_fields(self, store: ActionStateStore) -> None:
        """EVT-1: a completed state's events come back with their class, id, attributes and fields, so a
        recovery that skips the action hands the next actions what the crash-free run handed them."""
        r = ref("k", 0)
        sent: list[Event] = [
            CheckedEvent(7),
            ToolResponseEvent("req", {"t": 1}, success={"t": True}),
            OutputEvent({"o": [1]}),
            Event("plain", {"p": 1}),
        ]
        done = ActionState(task_event=r.event, output_events=sent)
        done.mark_completed()
        store.put(r, done)
        got = store.get(r)
        assert got is not None
        assert [type(e) for e in got.output_events] == [type(e) for e in sent]
        assert got.output_events == sent
        assert type(got.task_event) is InputEvent
        checked = got.output_events[0]
        assert isinstance(checked, CheckedEvent) and (checked.value, checked.note) == (7, "v7")
        response = got.output_events[1]
        assert isinstance(response, ToolResponseEvent) and response.responses == {"t": 1}


# Bases in this order so pytest runs the direct checks first, then the kill and the model-based check
# (it collects inherited checks in reverse MRO order).
class StoreConformance(
    ModelConformance,
    KillConformance,
    RestartSequenceConformance,
    PayloadConformance,
    TypedEventConformance,
    StoreLimitsConformance,
    _StoreChecks,
):
    """The aggregate suite a backend author subclasses (as ``class TestMyStore(StoreConformance)``)."""


__all__ = [
    "ACTION",
    "AWKWARD_KEYS",
    "OTHER",
    "ModelConformance",
    "StoreConformance",
    "calls_of",
    "capability",
    "clause",
    "fidelity_values",
    "present",
    "ref",
    "same_state",
    "tagged",
    "typed",
]
