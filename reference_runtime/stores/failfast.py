"""The runner's view of its store: the first failure latches (spec FAIL-1).

Once an operation raised :class:`~reference_runtime.errors.StoreError`, every later operation raises the
same :class:`~reference_runtime.errors.StoreFailedError` at once, without touching the store: a dead server
costs one timeout, not one per key left in the segment, and the user sees one error naming the store, the
operation and the cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from ..errors import Location, StoreError, StoreFailedError, location
from ..records import ActionState, CallResult, StateRef
from .base import ActionStateStore, RecoveryMarker
from .forwarding import ForwardingStore


class FailFastStore(ForwardingStore):
    """Forwards to ``inner`` until an operation fails; from then on raises that failure."""

    def __init__(self, inner: ActionStateStore) -> None:
        super().__init__(inner)
        self.failure: StoreFailedError | None = None

    def _fail(self, operation: str, location: Location | None, exc: StoreError) -> NoReturn:
        if not isinstance(exc, StoreFailedError):
            name = str(getattr(self.inner, "url", None) or type(self.inner).__name__)
            self.failure = StoreFailedError(name, operation, exc, location)
            raise self.failure from exc
        self.failure = exc
        raise exc

    # Each method spells the gate out: this is on the path of every durable call (benchmark P4), and the
    # location is built only when something failed.
    def put(self, ref: StateRef, state: ActionState) -> None:
        if self.failure is not None:
            raise self.failure
        try:
            self.inner.put(ref, state)
        except StoreError as exc:
            self._fail("put", location(ref), exc)

    def get(self, ref: StateRef) -> ActionState | None:
        if self.failure is not None:
            raise self.failure
        try:
            return self.inner.get(ref)
        except StoreError as exc:
            self._fail("get", location(ref), exc)

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        if self.failure is not None:
            raise self.failure
        try:
            self.inner.put_call_results(ref, index, results)
        except StoreError as exc:
            self._fail("put_call_results", location(ref, index), exc)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        if self.failure is not None:
            raise self.failure
        try:
            self.inner.truncate_call_results(ref, index)
        except StoreError as exc:
            self._fail("truncate_call_results", location(ref, index), exc)

    def prune_state(self, key: str, seq: int) -> None:
        if self.failure is not None:
            raise self.failure
        try:
            self.inner.prune_state(key, seq)
        except StoreError as exc:
            self._fail("prune_state", Location(key, seq), exc)

    def get_recovery_marker(self) -> RecoveryMarker:
        if self.failure is not None:
            raise self.failure
        try:
            return self.inner.get_recovery_marker()
        except StoreError as exc:
            self._fail("get_recovery_marker", None, exc)

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        if self.failure is not None:
            raise self.failure
        try:
            self.inner.rebuild_state(markers)
        except StoreError as exc:
            self._fail("rebuild_state", None, exc)
