"""A Hypothesis state machine that drives a store and a reference model side by side (zarr style).

The vocabulary is every store operation a runtime makes, in any interleaving: ``put`` (a second one of a
state key included), ``get`` (hits and misses), deltas, truncation, ``prune_state``, taking a recovery
marker, and a restart (close, reopen, ``rebuild_state`` with markers). The model predicts every read:

* a state put after the earliest marker of the last rebuild is *certain*: a read must give it exactly,
  type for type (STORE-1, STORE-5, STORE-6, STORE-8);
* a state last put before that marker is *uncertain* (STORE-6 lets a store replay from its markers, as
  Kafka does): a read may give it exactly or miss; what it gives decides the model until the next restart;
* a miss hides the key's later sequence numbers for good (STORE-3), a prune removes the ones at or below
  (STORE-4), restarts included.

Restarts use markers no older than those of the previous restart, as a runner restoring its latest
checkpoint does; a marker taken before a restart stays usable after it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from reference_runtime.records import ActionRef, ActionState, StateRef
from reference_runtime.stores.base import ActionStateStore, RecoveryMarker

from .factory import StoreFactory
from .payloads import MODEL_KEYS, action_states, call_results
from .states import ACTION, OTHER, java_ref, same_state

KEYS = st.sampled_from(MODEL_KEYS)
#: Sequence numbers on both sides of 9, so a comparison as text shows ("10" < "9").
SEQS = st.sampled_from([0, 1, 9, 10])
ACTIONS = st.sampled_from([ACTION, OTHER])

Slot = tuple[str, int, str]


@dataclass
class Expected:
    """What the model knows of one state."""

    state: ActionState
    #: The model time of the state's last whole ``put``.
    put_at: int
    #: False when it was last put before the earliest marker of the last rebuild and no read has shown
    #: whether the store kept it.
    certain: bool = True


def make_machine(factory: StoreFactory) -> type[RuleBasedStateMachine]:
    """A state machine class bound to ``factory``; ``TestCase`` of the result runs it under pytest."""
    restartable = factory.reopen is not None and "restart" in factory.capabilities

    class StoreVsModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.store: ActionStateStore = factory.new()
            self.model: dict[Slot, Expected] = {}
            self.actions = {ACTION.name: ACTION, OTHER.name: OTHER}
            self.time = 0
            self.markers: list[tuple[int, RecoveryMarker]] = [(0, self.store.get_recovery_marker())]
            #: Model time of the earliest marker of the last rebuild: older markers are not used again.
            self.floor = 0
            self.restarts = 0

        # -- helpers ----------------------------------------------------------------------------------
        def ref(self, key: str, seq: int, action: ActionRef) -> StateRef:
            return java_ref(key, seq, action)

        def where(self, key: str, seq: int, action: str) -> str:
            return f"({key!r}, seq {seq}, {action}) after {self.restarts} restart(s)"

        def tick(self) -> int:
            self.time += 1
            return self.time - 1

        def hide_after(self, key: str, seq: int) -> None:
            for slot in [s for s in self.model if s[0] == key and s[1] > seq]:
                del self.model[slot]

        # -- the vocabulary ---------------------------------------------------------------------------
        #: Places states were put: reads, deltas, truncations and prunes aim at them (and at any place).
        places = Bundle("places")

        @rule(target=places, key=KEYS, seq=SEQS, action=ACTIONS, state=action_states())
        def put(self, key: str, seq: int, action: ActionRef, state: ActionState) -> Slot:
            self.store.put(self.ref(key, seq, action), state)
            self.model[(key, seq, action.name)] = Expected(copy.deepcopy(state), self.tick())
            return (key, seq, action.name)

        @rule(place=places, state=action_states())
        def put_again(self, place: Slot, state: ActionState) -> None:
            """A second put of a state key (STORE-1: it replaces the first whole)."""
            self.put(place[0], place[1], self.actions[place[2]], state)

        @rule(place=places)
        def get_put(self, place: Slot) -> None:
            self.read(*place)

        @rule(place=places, below=st.sampled_from([1, 2, 8]), action=ACTIONS)
        def get_below(self, place: Slot, below: int, action: ActionRef) -> None:
            """A read under a put state: a miss there hides it (STORE-3)."""
            if place[1] >= below:
                self.read(place[0], place[1] - below, action.name)

        @rule(key=KEYS, seq=SEQS, action=ACTIONS)
        def get(self, key: str, seq: int, action: ActionRef) -> None:
            self.read(key, seq, action.name)

        def read(self, key: str, seq: int, action: str) -> None:
            got = self.store.get(self.ref(key, seq, self.actions[action]))
            slot = (key, seq, action)
            expected = self.model.get(slot)
            where = self.where(key, seq, action)
            if expected is None:
                assert got is None, f"STORE-3: {where}: expected a miss (None), got a state"
            elif got is None:
                assert not expected.certain, f"STORE-1: {where}: a stored state is lost: expected it, got None"
                del self.model[slot]  # a state put before the markers that the store did not keep (STORE-6)
            else:
                same_state("STORE-1", f"get {where}", expected.state, got)
                expected.certain = True
            if got is None:
                self.hide_after(key, seq)
                self.tick()

        @rule(place=places, data=st.data())
        def put_call_results(self, place: Slot, data: st.DataObject) -> None:
            expected = self.model.get(place)
            if expected is None or not expected.certain or expected.state.completed:
                return  # a runtime writes deltas only to the state it is running
            calls = expected.state.call_results
            index = data.draw(st.integers(0, len(calls)), label="index")
            results = data.draw(call_results(f"d{self.time}-", 2, min_size=1), label="results")
            self.store.put_call_results(self.ref(place[0], place[1], self.actions[place[2]]), index, results)
            calls[index : index + len(results)] = results
            self.tick()

        @rule(place=places, index=st.integers(0, 4))
        def truncate(self, place: Slot, index: int) -> None:
            expected = self.model.get(place)
            if expected is None or not expected.certain:
                return
            self.store.truncate_call_results(self.ref(place[0], place[1], self.actions[place[2]]), index)
            del expected.state.call_results[index:]
            self.tick()

        @rule(place=places, below=st.booleans())
        def prune_put(self, place: Slot, below: bool) -> None:
            self.prune(place[0], place[1] - 1 if below else place[1])

        @rule(key=KEYS, seq=SEQS)
        def prune(self, key: str, seq: int) -> None:
            self.store.prune_state(key, seq)
            for slot in [s for s in self.model if s[0] == key and s[1] <= seq]:
                del self.model[slot]
            self.tick()

        @rule()
        def take_marker(self) -> None:
            self.markers.append((self.time, self.store.get_recovery_marker()))

        @precondition(lambda self: restartable)
        @rule(data=st.data())
        def restart(self, data: st.DataObject) -> None:
            usable = [m for m in self.markers if m[0] >= self.floor]
            chosen = data.draw(st.lists(st.sampled_from(usable), min_size=1, max_size=3), label="markers")
            assert factory.reopen is not None
            self.store = factory.reopen(self.store)
            self.store.rebuild_state([marker for _, marker in chosen])
            self.floor = min(t for t, _ in chosen)
            self.restarts += 1
            for expected in self.model.values():
                if expected.put_at < self.floor:
                    expected.certain = False

        @invariant()
        def certain_states_read_back(self) -> None:
            # Only states the model is sure of: reading an uncertain one may miss, which changes the model.
            for (key, seq, action), expected in sorted(self.model.items()):
                if expected.certain:
                    got = self.store.get(self.ref(key, seq, self.actions[action]))
                    same_state("STORE-1", f"{self.where(key, seq, action)}, re-read", expected.state, got)

        def teardown(self) -> None:
            self.store.close()

    # No example database: the session seed alone decides the sequences, so a report is reproducible from
    # its seed (CONF-6) and a failure is not replayed into an unrelated run. A slow (remote) backend makes
    # the steps slow, which says nothing about the generated data: too_slow is not a finding, nor is a large
    # drawn state (large_base_example, data_too_large).
    # The active Hypothesis profile is the parent, so a user's ``--hypothesis-profile`` applies.
    # The explain phase replays the failing sequence many times over to annotate it; on a store that fails
    # it can cost ten times the search, and the shrunk sequence already says what went wrong.
    parent = settings.default
    phases = [p for p in (parent.phases if parent is not None else tuple(Phase)) if p is not Phase.explain]
    StoreVsModel.TestCase.settings = settings(
        parent,
        max_examples=30,
        stateful_step_count=20,
        deadline=None,
        database=None,
        phases=phases,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example, HealthCheck.data_too_large],
    )
    return StoreVsModel


__all__ = ["KEYS", "SEQS", "Expected", "make_machine"]
