"""The runner's view of its store: the first failure latches (spec FAIL-1).

Once an operation raised :class:`~reference_runtime.errors.StoreError`, every later operation raises the
same :class:`~reference_runtime.errors.StoreFailedError` at once, without touching the store: a dead server
costs one timeout, not one per key left in the segment, and the user sees one error naming the store, the
operation and the cause.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import Location, StoreError, StoreFailedError
from ..records import ActionState, CallResult, StateRef
from .base import ActionStateStore, RecoveryMarker
from .forwarding import ForwardingStore

T = TypeVar("T")


def _loc(ref: StateRef, index: int | None = None) -> Location:
    return Location(ref.key, ref.seq, ref.action.name, index)


class FailFastStore(ForwardingStore):
    """Forwards to ``inner`` until an operation fails; from then on raises that failure."""

    def __init__(self, inner: ActionStateStore) -> None:
        super().__init__(inner)
        self.failure: StoreFailedError | None = None

    def _run(self, operation: str, location: Location | None, call: Callable[..., T], *args: Any) -> T:
        if self.failure is not None:
            raise self.failure
        try:
            return call(*args)
        except StoreFailedError as exc:
            self.failure = exc
            raise
        except StoreError as exc:
            name = str(getattr(self.inner, "url", None) or type(self.inner).__name__)
            self.failure = StoreFailedError(name, operation, exc, location)
            raise self.failure from exc

    def put(self, ref: StateRef, state: ActionState) -> None:
        self._run("put", _loc(ref), self.inner.put, ref, state)

    def get(self, ref: StateRef) -> ActionState | None:
        return self._run("get", _loc(ref), self.inner.get, ref)

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        self._run("put_call_results", _loc(ref, index), self.inner.put_call_results, ref, index, results)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self._run("truncate_call_results", _loc(ref, index), self.inner.truncate_call_results, ref, index)

    def prune_state(self, key: str, seq: int) -> None:
        self._run("prune_state", Location(key, seq), self.inner.prune_state, key, seq)

    def get_recovery_marker(self) -> RecoveryMarker:
        return self._run("get_recovery_marker", None, self.inner.get_recovery_marker)

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        self._run("rebuild_state", None, self.inner.rebuild_state, markers)
