"""The store conformance suite: subclass :class:`StoreConformance` and override ``durable_store_factory``.

Each check cites the spec clause it proves with ``@pytest.mark.clause`` and the capability it needs with
``@pytest.mark.capability``; the report groups results by capability.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from reference_runtime.events import Event, InputEvent, OutputEvent, ToolResponseEvent
from reference_runtime.records import ActionRef, ActionState, CallResult, MemoryUpdate, StateRef
from reference_runtime.stores.base import ActionStateStore

from .factory import StoreFactory

clause = pytest.mark.clause
capability = pytest.mark.capability

ACTION = ActionRef("work", "conformance", "Agent.work", ("_input_event",))
OTHER = ActionRef("other", "conformance", "Agent.other", ("_input_event",))


def ref(key: str, seq: int, action: ActionRef = ACTION) -> StateRef:
    return StateRef(key, seq, action, InputEvent(f"{key}/{seq}"), f"{key}|{seq}|{action.name}")


class _StoreChecks:
    """Every store-protocol check. Not collected itself (no ``Test`` prefix); a subclass named
    ``Test…`` is."""

    @pytest.fixture(scope="session")
    def durable_store_factory(self) -> StoreFactory:
        raise pytest.UsageError("override the session-scoped fixture `durable_store_factory` in your suite")

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
        assert not missing, f"declared but not detected: {sorted(missing)}"

    @clause("STORE-1")
    @capability("core")
    def test_put_get_round_trip(self, store: ActionStateStore) -> None:
        """STORE-1: get returns what put stored."""
        state = ActionState(
            task_event=InputEvent({"q": [1, "x"]}),
            sensory_memory_updates=[MemoryUpdate("s", 1)],
            short_term_memory_updates=[MemoryUpdate("a.b", {"k": [1.5, None]}), MemoryUpdate("o", None, True)],
            call_results=[CallResult.succeeded("f", "d1", b"\x00r"), CallResult.failed("g", "d2", b"e"),
                          CallResult.pending("h", "d3")],
        )
        store.put(ref("k", 0), state)
        got = store.get(ref("k", 0))
        assert got is not None
        assert got.task_event == state.task_event
        assert got.sensory_memory_updates == state.sensory_memory_updates
        assert got.short_term_memory_updates == state.short_term_memory_updates
        assert got.call_results == state.call_results
        assert got.completed is False

    @clause("STORE-2")
    @capability("core")
    def test_keys_and_actions_are_isolated(self, store: ActionStateStore) -> None:
        """STORE-2: states of other keys and actions are untouched by writes and prunes."""
        store.put(ref("a", 0), ActionState(call_results=[CallResult.succeeded("f", "1", b"a")]))
        store.put(ref("a", 0, OTHER), ActionState(call_results=[CallResult.succeeded("f", "1", b"o")]))
        store.put(ref("b", 0), ActionState(call_results=[CallResult.succeeded("f", "1", b"b")]))
        store.put_call_results(ref("a", 0), 1, [CallResult.succeeded("g", "2", b"a2")])
        store.prune_state("b", 0)
        got_other = store.get(ref("a", 0, OTHER))
        got_a = store.get(ref("a", 0))
        assert got_other is not None and [c.result_payload for c in got_other.call_results] == [b"o"]
        assert got_a is not None and [c.result_payload for c in got_a.call_results] == [b"a", b"a2"]

    @clause("STORE-3")
    @capability("core")
    def test_miss_hides_later_sequence_numbers(self, store: ActionStateStore) -> None:
        """STORE-3: a miss at seq n hides seq > n of that key only."""
        for seq in (0, 2, 3):
            store.put(ref("k", seq), ActionState())
        store.put(ref("j", 9), ActionState())
        assert store.get(ref("k", 1)) is None
        assert store.get(ref("k", 0)) is not None
        assert store.get(ref("k", 2)) is None
        assert store.get(ref("k", 3)) is None
        assert store.get(ref("j", 9)) is not None

    @clause("STORE-4")
    @capability("core")
    def test_prune_boundaries(self, store: ActionStateStore) -> None:
        """STORE-4: prune(key, n) removes seq ≤ n of that key, keeps seq > n and other keys."""
        for seq in range(4):
            store.put(ref("k", seq), ActionState())
        store.put(ref("j", 0), ActionState())
        store.prune_state("k", 1)
        assert store.get(ref("k", 2)) is not None
        assert store.get(ref("k", 3)) is not None
        assert store.get(ref("j", 0)) is not None
        assert store.get(ref("k", 0)) is None
        assert store.get(ref("k", 1)) is None

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
        got = store.get(r)
        assert got is not None
        assert [(c.function_id, c.effective_status.value) for c in got.call_results] == [
            ("f", "SUCCEEDED"), ("g", "PENDING"), ("h", "FAILED")]
        store.truncate_call_results(r, 1)
        got = store.get(r)
        assert got is not None and [c.function_id for c in got.call_results] == ["f"]

    @clause("STORE-8")
    @capability("core")
    def test_completed_state_replays_without_call_results(self, store: ActionStateStore) -> None:
        """STORE-8: a completed state keeps memory updates and outputs, and no call results."""
        r = ref("k", 0)
        store.put(r, ActionState(task_event=r.event, call_results=[CallResult.succeeded("f", "d", b"1")]))
        done = ActionState(task_event=r.event, short_term_memory_updates=[MemoryUpdate("x", 1)],
                           output_events=[InputEvent("out")], call_results=[])
        done.mark_completed()
        store.put(r, done)
        got = store.get(r)
        assert got is not None and got.completed and got.call_results == []
        assert got.short_term_memory_updates == [MemoryUpdate("x", 1)]
        assert [e.attributes for e in got.output_events] == [{"input": "out"}]

    @clause("STORE-6")
    @capability("restart")
    def test_rebuild_after_restart(self, durable_store_factory: StoreFactory, store: ActionStateStore) -> None:
        """STORE-6: states put after the markers are readable after a restart and rebuild."""
        store.put(ref("k", 0), ActionState())
        marker = store.get_recovery_marker()
        store.put(ref("k", 1), ActionState(call_results=[CallResult.succeeded("f", "d", b"x")]))
        store.put_call_results(ref("k", 1), 1, [CallResult.pending("g", "d")])
        again = self._restart(durable_store_factory, store)
        again.rebuild_state([marker])
        got = again.get(ref("k", 1))
        assert again.get(ref("k", 0)) is not None
        assert got is not None and [c.function_id for c in got.call_results] == ["f", "g"]

    @clause("STORE-7")
    @capability("restart")
    def test_truncation_survives_restart(self, durable_store_factory: StoreFactory,
                                         store: ActionStateStore) -> None:
        """STORE-7: a truncation or finalize that returned is durable across a restart."""
        r = ref("k", 0)
        marker = store.get_recovery_marker()
        store.put(r, ActionState(call_results=[CallResult.succeeded("f", "d", b"1"), CallResult.pending("g", "d")]))
        store.put_call_results(r, 1, [CallResult.succeeded("g", "d", b"2")])
        store.truncate_call_results(r, 1)
        again = self._restart(durable_store_factory, store)
        again.rebuild_state([marker])
        got = again.get(r)
        assert got is not None and [c.function_id for c in got.call_results] == ["f"]

    @clause("STORE-5")
    @capability("concurrent_writers")
    def test_concurrent_writers_on_distinct_keys(self, durable_store_factory: StoreFactory,
                                                 store: ActionStateStore) -> None:
        """STORE-5: deltas from several threads on distinct keys all land."""
        if "concurrent_writers" not in durable_store_factory.capabilities:
            pytest.skip("backend does not declare 'concurrent_writers'")
        errors: list[BaseException] = []

        def writer(key: str) -> None:
            try:
                r = ref(key, 0)
                store.put(r, ActionState())
                for i in range(20):
                    store.put_call_results(r, i, [CallResult.succeeded("f", str(i), b"x")])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(f"k{n}",)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for n in range(4):
            got = store.get(ref(f"k{n}", 0))
            assert got is not None and [c.args_digest for c in got.call_results] == [str(i) for i in range(20)]


class ModelConformance:
    """Mixin: the model-based check (random operation sequences and restarts against a dict model)."""

    @clause("STORE-1")
    @clause("STORE-3")
    @clause("STORE-4")
    @clause("STORE-5")
    @capability("core")
    def test_store_matches_reference_model(self, request: pytest.FixtureRequest,
                                           durable_store_factory: StoreFactory) -> None:
        """STORE-1/3/4/5: random sequences of put/get/delta/truncate/prune/restart agree with a model.
        The session seed (``--durable-conformance-seed``, printed in the report) makes the sequences repeatable."""
        from hypothesis import seed
        from hypothesis.stateful import run_state_machine_as_test

        from .model import make_machine
        from .plugin import session_seed

        machine = make_machine(durable_store_factory)
        run_seed = session_seed(request.config)
        if run_seed is not None:
            machine = seed(run_seed)(machine)
        run_state_machine_as_test(machine, settings=machine.TestCase.settings)  # type: ignore[no-untyped-call]


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
        sent: list[Event] = [CheckedEvent(7), ToolResponseEvent("req", {"t": 1}, success={"t": True}),
                             OutputEvent({"o": [1]}), Event("plain", {"p": 1})]
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


class StoreConformance(_StoreChecks, ModelConformance, TypedEventConformance):
    """The aggregate suite a backend author subclasses (as ``class TestMyStore(StoreConformance)``)."""
