"""A Hypothesis state machine that drives a store and a plain-dict model side by side (zarr style)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from reference_runtime.records import ActionState, CallResult
from reference_runtime.stores.base import ActionStateStore

from .factory import StoreFactory
from .states import ref

#: Keys that are prefixes of one another and non-ASCII; sequence numbers on both sides of 9.
KEYS = st.sampled_from(["a", "ab", "é"])
SEQS = st.sampled_from([0, 1, 2, 9, 10, 11])
RESULT = st.builds(
    lambda f, ok: CallResult.succeeded(f, "d", b"r") if ok else CallResult.pending(f, "d"),
    st.sampled_from(["f", "g", "h"]),
    st.booleans(),
)


def make_machine(factory: StoreFactory) -> type[RuleBasedStateMachine]:
    """A state machine class bound to ``factory``; ``TestCase`` of the result runs it under pytest."""

    class StoreVsModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.store: ActionStateStore = factory.new()
            self.model: dict[tuple[str, int], list[CallResult]] = {}
            self.marker: Any = self.store.get_recovery_marker()

        @rule(key=KEYS, seq=SEQS, results=st.lists(RESULT, max_size=3))
        def put(self, key: str, seq: int, results: list[CallResult]) -> None:
            self.store.put(ref(key, seq), ActionState(call_results=list(results)))
            self.model[(key, seq)] = list(results)

        @rule(key=KEYS, seq=SEQS)
        def get(self, key: str, seq: int) -> None:
            got = self.store.get(ref(key, seq))
            expected = self.model.get((key, seq))
            if expected is None:
                assert got is None, f"STORE-3: ({key!r}, {seq}) expected a miss, got a state"
                for k in [k for k in self.model if k[0] == key and k[1] > seq]:
                    del self.model[k]
            else:
                assert got is not None, f"STORE-1: ({key!r}, {seq}) expected a state, got None"
                assert got.call_results == expected, (
                    f"STORE-5: call results of ({key!r}, {seq}): expected {expected}, got {got.call_results}"
                )

        @rule(key=KEYS, seq=SEQS, data=st.data())
        def put_call_results(self, key: str, seq: int, data: st.DataObject) -> None:
            current = self.model.get((key, seq))
            if current is None:
                return
            index = data.draw(st.integers(0, len(current)))
            results = data.draw(st.lists(RESULT, min_size=1, max_size=2))
            self.store.put_call_results(ref(key, seq), index, results)
            current[index : index + len(results)] = results

        @rule(key=KEYS, seq=SEQS, index=st.integers(0, 3))
        def truncate(self, key: str, seq: int, index: int) -> None:
            if (key, seq) in self.model:
                self.store.truncate_call_results(ref(key, seq), index)
                del self.model[(key, seq)][index:]

        @rule(key=KEYS, seq=SEQS)
        def prune(self, key: str, seq: int) -> None:
            self.store.prune_state(key, seq)
            for k in [k for k in self.model if k[0] == key and k[1] <= seq]:
                del self.model[k]

        @precondition(lambda self: factory.reopen is not None and "restart" in factory.capabilities)
        @rule()
        def restart(self) -> None:
            assert factory.reopen is not None
            self.store = factory.reopen(self.store)
            self.store.rebuild_state([self.marker])

        @invariant()
        def model_states_are_readable(self) -> None:
            # Reads through the miss path would change the model, so only present states are checked.
            for (key, seq), expected in sorted(self.model.items()):
                got = self.store.get(ref(key, seq))
                assert got is not None, f"STORE-1: state ({key!r}, {seq}) is lost: expected a state, got None"
                assert got.call_results == expected, (
                    f"STORE-5: call results of ({key!r}, {seq}): expected {expected}, got {got.call_results}"
                )

        def teardown(self) -> None:
            self.store.close()

    # No example database: the session seed alone decides the sequences, so a report is reproducible from
    # its seed (CONF-6) and a failure is not replayed into an unrelated run. A slow (remote) backend makes
    # the steps slow, which says nothing about the generated data: too_slow is not a finding.
    # The active Hypothesis profile is the parent, so a user's ``--hypothesis-profile`` applies.
    # The explain phase replays the failing sequence many times over to annotate it; on a store that fails
    # it can cost ten times the search, and the shrunk sequence already says what went wrong.
    parent = settings.default
    phases = [p for p in (parent.phases if parent is not None else tuple(Phase)) if p is not Phase.explain]
    StoreVsModel.TestCase.settings = settings(
        parent,
        max_examples=30,
        stateful_step_count=15,
        deadline=None,
        database=None,
        phases=phases,
        suppress_health_check=[HealthCheck.too_slow],
    )
    return StoreVsModel
