"""A store that passes every call to another one: the base for stores that observe a store's writes
(the plugin's recording store, the conformance kit's observed store)."""

from __future__ import annotations

from collections.abc import Sequence

from ..records import ActionState, CallResult, StateRef
from .base import ActionStateStore, RecoveryMarker


class ForwardingStore:
    """Delegates to ``inner``. Subclasses override the writes, call ``super()`` and then look."""

    def __init__(self, inner: ActionStateStore) -> None:
        self.inner = inner

    def put(self, ref: StateRef, state: ActionState) -> None:
        self.inner.put(ref, state)

    def get(self, ref: StateRef) -> ActionState | None:
        return self.inner.get(ref)

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        self.inner.put_call_results(ref, index, results)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self.inner.truncate_call_results(ref, index)

    def prune_state(self, key: str, seq: int) -> None:
        self.inner.prune_state(key, seq)

    def get_recovery_marker(self) -> RecoveryMarker:
        return self.inner.get_recovery_marker()

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        self.inner.rebuild_state(markers)

    def close(self) -> None:
        self.inner.close()
