"""In-memory store: the fastest store, for tests. It outlives a simulated crash of the runner (the
store object is kept), but not the process. Records are kept encoded so nothing aliases user objects."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import StoreDataLostError, StoreError, location
from ..limits import safe_repr
from ..records import ActionState, CallResult, StateRef
from .base import RecoveryMarker
from .keyindex import KeyIndex
from .native import decode_state, encode_call_result, encode_state
from .scheme import StoreUrl, bad_url


@dataclass
class _Entry:
    key: str
    seq: int
    action: str
    header: bytes
    # Call results are immutable values: kept as they are, no encoding or copy needed.
    calls: list[CallResult] = field(default_factory=list)


_EPOCHS = itertools.count(1)


class InMemoryStore:
    """An :class:`~reference_runtime.stores.base.ActionStateStore` in a dict."""

    url = "memory:"
    #: Its data ends with the process: no later process can need it, so the runner prunes it (RUN-18).
    outlives_process = False

    def __init__(self, *, count_bytes: bool = False) -> None:
        #: Measure what a delta-writing store would persist (benchmark P3); off by default, it costs.
        self.count_bytes = count_bytes
        self._entries: dict[str, _Entry] = {}
        # Business key -> its state keys: a miss or a prune looks at one key's states, not every state.
        self._by_key = KeyIndex()
        self._lock = threading.Lock()
        self._writes = 0
        #: Names this store's data: a recovery marker of other data does not carry it (FAIL-6). The data
        #: lives in this process only, so a number unique in it is enough.
        self._epoch = next(_EPOCHS)
        self.bytes_written = 0

    def _count(self, *chunks: bytes) -> None:
        self._writes += 1
        if self.count_bytes:
            self.bytes_written += sum(len(c) for c in chunks)

    def put(self, ref: StateRef, state: ActionState) -> None:
        header = encode_state(state, ref=ref)
        calls = list(state.call_results)
        with self._lock:
            self._entries[ref.state_key] = _Entry(ref.key, ref.seq, ref.action.name, header, calls)
            self._by_key.add(ref.key, ref.state_key)
            self._count(header, *(map(encode_call_result, calls) if self.count_bytes else ()))

    def get(self, ref: StateRef) -> ActionState | None:
        with self._lock:
            entry = self._entries.get(ref.state_key)
            if entry is None:
                self._drop(ref.key, lambda seq: seq > ref.seq)
                return None
            header, calls = entry.header, list(entry.calls)
        state = decode_state(header, location(ref))
        state.call_results = calls
        return state

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        # The lock taken and released by hand, not by ``with``: the statement looks up and calls the lock's
        # ``__enter__`` and ``__exit__``, 2 % of a durable call (benchmark P1a).
        lock = self._lock
        lock.acquire()
        try:
            entry = self._entries.get(ref.state_key)
            if entry is None:
                raise StoreError(f"no action state to add call results to [{location(ref, index)}]")
            calls = entry.calls
            if index == len(calls) and len(results) == 1:
                calls.append(results[0])  # the common case: one new record at the end
            elif index > len(calls):
                raise StoreError(f"call index {index} leaves a gap after {len(calls)} records")
            else:
                calls[index : index + len(results)] = results
            self._writes += 1
            if self.count_bytes:
                self.bytes_written += sum(len(encode_call_result(r)) for r in results)
        finally:
            lock.release()

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        with self._lock:
            entry = self._entries.get(ref.state_key)
            if entry is not None:
                del entry.calls[index:]
                self._count()

    def prune_state(self, key: str, seq: int) -> None:
        with self._lock:
            self._drop(key, lambda s: s <= seq)

    def _drop(self, key: str, doomed: Callable[[int], bool]) -> None:
        """Delete the states of ``key`` whose sequence number is ``doomed`` (caller holds the lock)."""
        for sk in self._by_key.matching(key, lambda sk: self._entries[sk].seq, doomed):
            del self._entries[sk]
            self._by_key.discard(key, sk)

    def get_recovery_marker(self) -> RecoveryMarker:
        with self._lock:
            return {"writes": self._writes, "epoch": self._epoch}

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        # Everything put since any marker is still in the dict, if the markers were taken on it (FAIL-6).
        for marker in markers:
            epoch = marker.get("epoch", self._epoch) if isinstance(marker, dict) else None
            if epoch != self._epoch or marker.get("writes", 0) > self._writes:
                raise StoreDataLostError(
                    f"memory store: recovery marker {safe_repr(marker)} was taken on data this store does not hold "
                    "(another store object's); recovering from it would run completed durable calls again"
                )

    def close(self) -> None:
        return None

    def __len__(self) -> int:
        return len(self._entries)


def parse_memory_url(url: str) -> StoreUrl:
    """``memory:`` (the URL takes nothing after the colon)."""
    if url.partition(":")[2]:
        raise bad_url(url, "memory: takes nothing after the colon; expected memory:")
    return StoreUrl(url, "memory")
