"""Deliberately broken stores: each must fail the conformance clause that catches its bug."""

from __future__ import annotations

from collections.abc import Sequence

from reference_runtime.records import CallResult, StateRef
from reference_runtime.stores.memory import InMemoryStore


class IgnoresPrune(InMemoryStore):
    def prune_state(self, key: str, seq: int) -> None:
        return None


class MissDoesNotHide(InMemoryStore):
    def get(self, ref: StateRef):  # type: ignore[no-untyped-def]
        entry = self._entries.get(ref.state_key)
        return None if entry is None else super().get(ref)


class AppendsInsteadOfFinalize(InMemoryStore):
    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        state = self.get(ref)
        super().put_call_results(ref, len(state.call_results) if state else index, results)


class TruncateIgnored(InMemoryStore):
    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        return None
