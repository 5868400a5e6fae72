"""The ``ActionStateStore`` protocol every store implements (spec STORE-*), and the capabilities a store
can claim (spec CONF-1)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from ..records import ActionState, CallResult, StateRef


class Capability(StrEnum):
    """What a store can claim beyond the baseline. The members are strings, so ``"restart" in caps`` and
    ``capabilities={"core", "restart"}`` keep working."""

    #: Every store's baseline: the store protocol (STORE-1..STORE-9, STORE-15, STORE-16).
    CORE = "core"
    #: A new store object over the same data sees every state put before (a process restart).
    RESTART = "restart"
    #: Several store objects may write the same data at once.
    CONCURRENT_WRITERS = "concurrent_writers"
    #: The data outlives a SIGKILLed process, and ``reopen`` works in a forked child and on a closed store.
    MID_WRITE_KILL = "mid_write_kill"


#: A recovery marker is plain JSON data (a checkpoint stores it and hands it back to ``rebuild_state``).
RecoveryMarker = Any


@runtime_checkable
class ActionStateStore(Protocol):
    """Durable storage of action states, addressed by :class:`StateRef`.

    Call records are written as deltas (``put_call_results`` / ``truncate_call_results``) so the cost of
    a durable call does not grow with the number of calls already recorded.
    """

    def put(self, ref: StateRef, state: ActionState) -> None:
        """Persist ``state`` whole, replacing what is filed under ``ref.state_key``."""

    def get(self, ref: StateRef) -> ActionState | None:
        """The state for ``ref``, or None. A miss hides every state of ``ref.key`` with a larger seq
        (STORE-4): they belong to an execution that diverged from this one."""

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        """Write ``results`` into slots ``index…`` of the existing state in one atomic persist; a slot
        past the end appends. ``index`` must not exceed the current number of call results."""

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        """Drop call results at ``index`` and after, durably."""

    def prune_state(self, key: str, seq: int) -> None:
        """Drop every state of business key ``key`` with sequence number ``<= seq``."""

    def get_recovery_marker(self) -> RecoveryMarker:
        """A JSON-able position; ``rebuild_state`` from it restores every state put after it."""

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        """Called once after a restart with the markers of the checkpoint being restored."""

    def close(self) -> None:
        """Release connections and files; the persisted data stays."""


#: Types whose instances are all stores: ``issubclass`` of the protocol (its members are methods only, so that
#: decides ``isinstance`` whatever the instance holds).
_STORE_TYPES: set[type] = set()


def is_store(obj: object) -> bool:
    """``isinstance(obj, ActionStateStore)``, answered from a set for a type seen before: on Python 3.11 the
    protocol check walks the protocol's members on every call, 11 µs, and a sweep makes a runner per
    scenario (benchmarks P4, P9b)."""
    t = type(obj)
    if t in _STORE_TYPES:
        return True
    if obj.__class__ is t and issubclass(t, ActionStateStore):
        _STORE_TYPES.add(t)
        return True
    return isinstance(obj, ActionStateStore)
