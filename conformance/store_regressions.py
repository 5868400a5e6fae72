"""Fixed store checks for sequences and payloads that broken stores written outside this repository got
wrong (issue 29), so each is tried on every certification, not only when the state machine of
:mod:`conformance.model` happens to draw it.

* :class:`RestartSequenceConformance` (capability ``restart``): a prune after a marker, a read before a
  marker, a miss, a prune and put again — each followed by a restart (STORE-3, STORE-4, STORE-6); an event
  whose class is gone after a restart (EVT-2).
* :class:`PayloadConformance` (capability ``core``): a second put of a state with memory updates and output
  events, real pickled exception payloads (not UTF-8), hundreds of call records, memory values near the
  half megabyte STORE-1 promises, business keys holding the Java state-key separator (STORE-1, STORE-2,
  STORE-3, STORE-4, STORE-5).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from reference_runtime.errors import EventClassError
from reference_runtime.events import Event, InputEvent, OutputEvent
from reference_runtime.records import ActionState, CallResult, MemoryUpdate
from reference_runtime.stores.base import ActionStateStore

from .factory import StoreFactory
from .marks import capability, clause
from .payloads import MANY_CALLS, exception_payload, many_calls, near_limit_values
from .states import OTHER, java_ref, present, ref, same_state, tagged


def restarted(factory: StoreFactory, store: ActionStateStore, markers: list[object]) -> ActionStateStore:
    """``store`` closed and reopened (a process restart), rebuilt from ``markers``."""
    if "restart" not in factory.capabilities:
        pytest.skip("backend does not declare the 'restart' capability")
    if factory.reopen is None:
        pytest.fail("backend declares 'restart' but its factory has no reopen (CONF-1)")
    again = factory.reopen(store)
    again.rebuild_state(markers)
    return again


def rich(tag: str, calls: int = 2) -> ActionState:
    """A state with every part set: task event, both memories, output events and call records."""
    return ActionState(
        task_event=InputEvent({"tag": tag}),
        sensory_memory_updates=[MemoryUpdate("seen", tag)],
        short_term_memory_updates=[MemoryUpdate("o", None, True), MemoryUpdate("o.tag", tag)],
        output_events=[OutputEvent(f"out {tag}"), Event("note", {"tag": tag})],
        call_results=[CallResult.succeeded(f"f{i}", tag, tag.encode()) for i in range(calls)],
    )


class Vanishing(Event):
    """A user event class that a restarted process no longer has (EVT-2): the check removes it from this
    module after storing an instance."""


class RestartSequenceConformance:
    """Mixin: interleavings of markers, prunes, misses and puts with a restart (capability ``restart``)."""

    @pytest.fixture
    def a_store(self, durable_store_factory: StoreFactory) -> Iterator[list[ActionStateStore]]:
        """The store a check restarts: a one-item list the check replaces the store in, closed after it."""
        held = [durable_store_factory.new()]
        yield held
        held[0].close()

    @clause("STORE-6")
    @clause("STORE-4")
    @capability("restart")
    def test_prune_after_a_marker_holds_after_restart(
        self, durable_store_factory: StoreFactory, a_store: list[ActionStateStore]
    ) -> None:
        """STORE-6, STORE-4: a state put before a marker and pruned after it stays pruned after a restart
        that rebuilds from that marker, however the store replays; states put after the marker are back."""
        s = a_store[0]
        s.put(ref("p", 0), tagged("p0"))
        marker = s.get_recovery_marker()
        s.prune_state("p", 0)
        s.put(ref("p", 1), tagged("p1"))
        s.put(ref("q", 0), tagged("q0"))
        s.prune_state("q", 0)
        s = a_store[0] = restarted(durable_store_factory, s, [marker])
        same_state("STORE-6", "a state put after the marker", tagged("p1"), s.get(ref("p", 1)))
        present("STORE-4", s, ref("q", 0), False, "was put after the marker and pruned, then the store restarted")
        present("STORE-4", s, ref("p", 0), False, "was put before the marker and pruned after it, then restarted")

    @clause("STORE-6")
    @capability("restart")
    def test_read_then_marker_then_write_survives_restart(
        self, durable_store_factory: StoreFactory, a_store: list[ActionStateStore]
    ) -> None:
        """STORE-6: reads before a marker do not move it: after reads, a marker, then writes (a new state, a
        delta, a second put), a restart rebuilding from the marker has every write."""
        s = a_store[0]
        s.put(ref("r", 0), tagged("r0"))
        for _ in range(3):
            s.get(ref("r", 0))
        s.get(ref("r", 5))  # a miss
        marker = s.get_recovery_marker()
        s.put(ref("w", 0), tagged("w0", calls=1))
        s.put_call_results(ref("w", 0), 1, [CallResult.succeeded("f1", "w0", b"w0")])
        s.put(ref("r", 0), tagged("r0-again"))
        s = a_store[0] = restarted(durable_store_factory, s, [marker])
        same_state("STORE-6", "a state put after the marker, with its delta", tagged("w0", calls=2), s.get(ref("w", 0)))
        same_state("STORE-6", "a state put again after the marker", tagged("r0-again"), s.get(ref("r", 0)))

    @clause("STORE-3")
    @clause("STORE-6")
    @capability("restart")
    def test_a_miss_still_hides_after_restart(
        self, durable_store_factory: StoreFactory, a_store: list[ActionStateStore]
    ) -> None:
        """STORE-3, STORE-6: states a miss hid stay hidden after a restart that rebuilds from a marker taken
        before they were put; the states below the miss stay readable."""
        s = a_store[0]
        marker = s.get_recovery_marker()
        for seq in (0, 2, 5):
            s.put(ref("m", seq), tagged(f"m{seq}"))
        s.put(ref("m", 7, OTHER), tagged("m7-other"))
        present("STORE-3", s, ref("m", 1), False, "was never put")
        s = a_store[0] = restarted(durable_store_factory, s, [marker])
        same_state("STORE-3", "the state below the miss, after a restart", tagged("m0"), s.get(ref("m", 0)))
        for seq, action in ((2, None), (5, None), (7, OTHER)):
            r = ref("m", seq) if action is None else ref("m", seq, action)
            present("STORE-3", s, r, False, "was hidden by the miss at seq 1 before the restart")

    @clause("STORE-4")
    @clause("STORE-6")
    @capability("restart")
    def test_pruned_then_put_again_survives_restart(
        self, durable_store_factory: StoreFactory, a_store: list[ActionStateStore]
    ) -> None:
        """STORE-4, STORE-6: a state pruned and then put again under the same state key (the next run of a
        key after a checkpoint) is the new one after a restart: the prune's deletion never lands on it."""
        s = a_store[0]
        marker = s.get_recovery_marker()
        s.put(ref("n", 0), tagged("first", calls=3))
        s.prune_state("n", 0)
        s.put(ref("n", 0), tagged("second", calls=1))
        s.put_call_results(ref("n", 0), 1, [CallResult.succeeded("f1", "second", b"second")])
        s = a_store[0] = restarted(durable_store_factory, s, [marker])
        same_state("STORE-4", "a state put again after its prune", tagged("second", calls=2), s.get(ref("n", 0)))

    @clause("EVT-2")
    @capability("restart")
    def test_an_event_whose_class_is_gone_fails_with_its_location(
        self, durable_store_factory: StoreFactory, a_store: list[ActionStateStore]
    ) -> None:
        """EVT-2: after a restart in which an event's class no longer exists, reading its state raises an
        EventClassError naming the class, key, sequence number and action — or, for a store that kept the
        object itself, gives back an instance of the class. Never a plain event with the class lost."""
        s = a_store[0]
        marker = s.get_recovery_marker()
        done = ActionState(task_event=InputEvent("e"), output_events=[Vanishing("vanishing", {"n": 1})])
        done.mark_completed()
        s.put(ref("e", 3), done)
        s = a_store[0] = restarted(durable_store_factory, s, [marker])
        module, cls = sys.modules[__name__], Vanishing
        delattr(module, "Vanishing")
        try:
            got = s.get(ref("e", 3))
        except EventClassError as exc:
            text = str(exc)
            assert "Vanishing" in text and (exc.key, exc.seq, exc.action) == ("e", 3, "work"), (
                f"EVT-2: expected an EventClassError naming the class and ('e', 3, 'work'), got {text!r} at "
                f"{(exc.key, exc.seq, exc.action)}"
            )
            return
        finally:
            module.__dict__["Vanishing"] = cls
        events = [] if got is None else got.output_events
        kinds = [type(e).__qualname__ for e in events]
        assert kinds == ["Vanishing"], (
            f"EVT-2: an event whose class is gone: expected EventClassError (or the stored object itself), "
            f"got events of classes {kinds}"
        )


class PayloadConformance:
    """Mixin: payloads and keys that real runs send and naive stores lose (capability ``core``)."""

    @clause("STORE-1")
    @capability("core")
    def test_second_put_replaces_memory_and_outputs(self, store: ActionStateStore) -> None:
        """STORE-1: a second put of a state that has memory updates and output events replaces them whole:
        with fewer, with none, and with others again."""
        r = ref("k", 0)
        store.put(r, rich("first", calls=3))
        bare = ActionState(task_event=InputEvent({"tag": "bare"}), call_results=[CallResult.pending("f0", "bare")])
        store.put(r, bare)
        same_state("STORE-1", "a bare state put over a full one", bare, store.get(r))
        store.put(r, rich("third", calls=0))
        fewer = rich("fourth", calls=1)
        fewer.output_events = fewer.output_events[:1]
        fewer.short_term_memory_updates = []
        store.put(r, fewer)
        same_state(
            "STORE-1", "a state with fewer outputs and no short-term updates put over a full one", fewer, store.get(r)
        )

    @clause("STORE-1")
    @clause("STORE-5")
    @capability("core")
    def test_exception_payloads_are_bytes_not_text(self, store: ActionStateStore) -> None:
        """STORE-1, STORE-5: a FAILED record's exception payload is a pickle, not UTF-8 text: written by put
        and by a delta, it comes back byte for byte."""
        r = ref("x", 0)
        state = ActionState(
            task_event=r.event,
            call_results=[CallResult.failed("f", "d0", exception_payload("boom é"))],
        )
        store.put(r, state)
        store.put_call_results(r, 1, [CallResult.failed("g", "d1", exception_payload("ошибка"))])
        state.call_results.append(CallResult.failed("g", "d1", exception_payload("ошибка")))
        same_state("STORE-1", "records holding pickled exceptions", state, store.get(r))

    @clause("STORE-1")
    @clause("STORE-5")
    @capability("core")
    def test_hundreds_of_call_records(self, store: ActionStateStore) -> None:
        """STORE-1, STORE-5: a state with 700 call records comes back whole and in order; deltas append past
        it, finalize a slot past 255 in place and truncate inside it."""
        r = ref("many", 0)
        calls = many_calls("m")
        store.put(r, ActionState(task_event=r.event, call_results=calls))
        same_state(
            "STORE-1", f"a state with {MANY_CALLS} call records", ActionState(r.event, call_results=calls), store.get(r)
        )
        added = [CallResult.pending("p", str(i)) for i in range(3)]
        store.put_call_results(r, MANY_CALLS, added)
        store.put_call_results(r, 300, [CallResult.succeeded("fin", "300", b"300")])
        store.truncate_call_results(r, MANY_CALLS + 2)
        want = [*calls, *added][: MANY_CALLS + 2]
        want[300] = CallResult.succeeded("fin", "300", b"300")
        same_state("STORE-5", "after deltas past record 255", ActionState(r.event, call_results=want), store.get(r))

    @clause("STORE-1")
    @capability("core")
    def test_memory_values_near_the_size_limit(self, store: ActionStateStore) -> None:
        """STORE-1: a memory value of nearly half a megabyte — bytes, non-ASCII text, a list of both — comes
        back exact, in a state of its own each (what one record holds in a store with a 1 MB limit)."""
        for seq, (name, value) in enumerate(sorted(near_limit_values().items())):
            r = ref("big", seq)
            state = ActionState(task_event=r.event, short_term_memory_updates=[MemoryUpdate(f"big.{name}", value)])
            store.put(r, state)
            same_state("STORE-1", f"a memory value near the size limit ({name})", state, store.get(r))

    @clause("STORE-2")
    @clause("STORE-3")
    @clause("STORE-4")
    @capability("core")
    def test_business_keys_holding_the_state_key_separator(self, store: ActionStateStore) -> None:
        """STORE-2, STORE-3, STORE-4: with the runtime's own state keys (``{key}_{seq}_…``), business keys
        holding ``_`` stay apart: ``('a', 1)`` and ``('a_1', 0)`` start alike, yet a prune or a miss of
        one key never touches another."""
        keys = [("a", 1), ("a_1", 0), ("a_1_0", 0), ("a", 0), ("a_1", 2)]
        for key, seq in keys:
            store.put(java_ref(key, seq), tagged(f"{key}/{seq}"))
        for key, seq in keys:
            same_state(
                "STORE-2", f"business key {key!r} seq {seq}", tagged(f"{key}/{seq}"), store.get(java_ref(key, seq))
            )
        store.prune_state("a", 1)
        present("STORE-4", store, java_ref("a_1", 0), True, "belongs to key 'a_1', not to the pruned key 'a'")
        present("STORE-4", store, java_ref("a_1_0", 0), True, "belongs to key 'a_1_0', not to the pruned key 'a'")
        present("STORE-3", store, java_ref("a_1", 1), False, "was never put")
        present("STORE-3", store, java_ref("a_1", 2), False, "is above a miss at ('a_1', 1)")
        present("STORE-3", store, java_ref("a_1_0", 0), True, "belongs to key 'a_1_0', not to the missed key 'a_1'")
        present("STORE-4", store, java_ref("a", 1), False, "was pruned by prune_state('a', 1)")
