"""The Kafka store in Flink Agents' own topic format: ``kafka://HOST:PORT/TOPIC?format=flink-agents`` or
``FlinkAgentsKafkaStore(bootstrap, topic)`` (spec WIRE-1..WIRE-8).

Point it at the action-state topic of a Flink Agents job and it reads what the job wrote; what it writes, a
Flink Agents job reads. Record layout: :mod:`.kafka_flink_format`. Client I/O (producer ``acks=all`` with a
flush per write, the group-less replay consumer, topic creation, recovery markers, failure handling) is the
native store's, :mod:`.kafka`.

Writes
    Every ``put`` and every call-result delta writes the whole state as one record, as Flink Agents does: the
    format has no delta records, so a durable call costs a rewrite of its state (benchmark P3 measures it;
    the native format writes one record per call instead, STORE-5). A truncation that drops nothing writes
    nothing.

Deletes (KSTORE-5, STORE-3)
    ``prune_state`` and the miss rule of ``get`` write a tombstone per state. Flink Agents main never deletes
    on prune (#691) and its reader maps a tombstone to "no state", so the topic stays readable by it.

Recovery (KSTORE-4, WIRE-6)
    The recovery marker is the end offset per partition (``{"offsets": {"<partition>": offset}}``).
    ``rebuild_state(markers)`` replays each partition named in the markers from the minimum marker offset to
    its end, adding every record to the states this object holds (a tombstone removes one), exactly as
    Flink Agents does. *Deviation:* with no markers (a job that never completed a checkpoint) Flink Agents
    skips the rebuild, so every call the first attempt recorded runs again; this store replays the whole
    log instead (REC-3). ``reopen()`` is a restart without markers.

Reading
    Values are decoded when a state is read, so one unreadable record makes only its own state's ``get``
    raise :class:`~reference_runtime.errors.CorruptRecordError` (naming key, seq and action, deleting
    nothing; STORE-9). A record whose location cannot be told (no headers, key not in the Java scheme) is
    kept, readable by its exact state key, and never pruned: Flink Agents does the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import CorruptRecordError, Location, StoreError
from ..records import ActionState, CallResult, StateRef
from ..serde.actionstate import JavaActionState
from .base import RecoveryMarker
from .kafka import KafkaStore
from .kafka_flink_format import (
    FLINK_AGENTS,
    decode_value,
    encode_value,
    java_model,
    locate,
    location_headers,
    partition_for,
    set_call_results,
    truncate_call_results,
)
from .kafka_replay import location
from .keyindex import KeyIndex
from .scheme import InspectedState


@dataclass
class StoredState:
    """One live state: where it belongs and its record value as stored."""

    key: str | None
    seq: int | None
    action: str | None
    value: bytes
    partition: int
    #: The parsed value, kept after the first delta so the next one does not parse the record again.
    java: JavaActionState | None = None


class FlinkAgentsKafkaStore(KafkaStore):
    """A :class:`KafkaStore` whose topic is in Flink Agents' format (``kafka://…?format=flink-agents``)."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        partitions: int = 4,
        timeout: float = 10.0,
        format: str = FLINK_AGENTS,
        read_only: bool = False,
    ) -> None:
        super().__init__(
            bootstrap, topic, partitions=partitions, timeout=timeout, format=FLINK_AGENTS, read_only=read_only
        )
        self._states: dict[str, StoredState] = {}
        self._index = KeyIndex()

    # -- writes ----------------------------------------------------------------------------------------

    def _write(self, ref: StateRef, value: bytes, java: JavaActionState | None = None) -> None:
        part = partition_for(ref.key, self._npart)
        self._send([(ref.state_key, value, part, location_headers(ref))])
        self._states[ref.state_key] = StoredState(ref.key, ref.seq, ref.action.name, value, part, java=java)
        self._index.add(ref.key, ref.state_key)

    def _model(self, stored: StoredState, ref: StateRef, index: int) -> JavaActionState:
        """A private copy of the stored state's Java model to change (the cached one stays as stored until
        the write that replaces it is acknowledged)."""
        java = stored.java if stored.java is not None else java_model(stored.value, location(ref, index))
        return replace(java, call_results=None if java.call_results is None else list(java.call_results))

    def put(self, ref: StateRef, state: ActionState) -> None:
        value = encode_value(state)
        with self._lock:
            self._write(ref, value)

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with self._lock:
            stored = self._states.get(ref.state_key)
            if stored is None:
                raise StoreError(f"no action state to add call results to [{location(ref, index)}]")
            java = self._model(stored, ref, index)
            value = set_call_results(java, index, results, location(ref, index))
            if results:
                self._write(ref, value, java)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        with self._lock:
            stored = self._states.get(ref.state_key)
            if stored is None:
                return
            java = self._model(stored, ref, index)
            value = truncate_call_results(java, index)
            if value is not None:
                self._write(ref, value, java)

    def _tombstone(self, state_keys: Sequence[str]) -> None:
        if not state_keys:
            return
        self._send([(sk, None, self._states[sk].partition, None) for sk in state_keys])
        for sk in state_keys:
            self._index.discard(self._states.pop(sk).key, sk)

    def prune_state(self, key: str, seq: int) -> None:
        with self._lock:
            self._tombstone(self._of_key(key, lambda found: found <= seq))

    def _of_key(self, key: str, wanted: Callable[[int], bool]) -> list[str]:
        def seq_of(sk: str) -> int | None:
            stored = self._states.get(sk)
            return stored.seq if stored is not None and stored.key == key else None

        return self._index.matching(key, seq_of, wanted)

    # -- reads -----------------------------------------------------------------------------------------

    def get(self, ref: StateRef) -> ActionState | None:
        with self._lock:
            stored = self._states.get(ref.state_key)
            if stored is None:
                self._tombstone(self._of_key(ref.key, lambda seq: seq > ref.seq))
                return None
            value = stored.value
        state, _era = decode_value(value, location(ref))
        return state

    def stored(self) -> dict[str, StoredState]:
        """Every live state this object holds, by state key (a snapshot; for ``durable inspect``)."""
        with self._lock:
            return dict(self._states)

    def inspect_states(self) -> list[InspectedState]:
        """Every live state as ``(state key, key, seq, action, decode)`` for ``durable inspect``. A record a
        Flink Agents job wrote names its action only by the UUID at the end of its key."""

        def decoder(stored: StoredState, action: str | None) -> Callable[[], tuple[ActionState, str]]:
            def decode() -> tuple[ActionState, str]:
                state, era = decode_value(stored.value, Location(stored.key, stored.seq, action))
                return state, f"flink-agents ({era})"

            return decode

        out: list[InspectedState] = []
        for sk, stored in self.stored().items():
            action = stored.action or (f"uuid {sk.rsplit('_', 1)[-1]}" if stored.key is not None else None)
            out.append((sk, stored.key, stored.seq, action, decoder(stored, action)))
        return out

    # -- recovery --------------------------------------------------------------------------------------

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        with self._lock:
            marked = self._marker_offsets(markers)
            found: dict[str, StoredState | None] = {}

            def apply(msg: Any) -> None:
                raw_key = msg.key()
                try:
                    state_key = raw_key.decode("utf-8")
                except (AttributeError, UnicodeDecodeError):
                    raise CorruptRecordError(
                        f"Kafka store {self.url}: record key {raw_key!r} at partition "
                        f"{msg.partition()} offset {msg.offset()} is not UTF-8 text"
                    ) from None
                value = msg.value()
                if value is None:
                    found[state_key] = None
                    return
                key, seq, action = locate(state_key, msg.headers())
                found[state_key] = StoredState(key, seq, action, bytes(value), msg.partition())

            ends = self._replay(apply, marked if markers else None)
            lost = {p: off for p, off in marked.items() if off > ends.get(p, 0)}
            if lost:
                raise StoreError(
                    f"Kafka store {self.url}: recovery marker offsets {lost} are past the end of "
                    f"the log {ends}; the topic lost records (deleted or recreated?)"
                )
            for state_key, stored in found.items():
                old = self._states.pop(state_key, None)
                if old is not None:
                    self._index.discard(old.key, state_key)
                if stored is not None:
                    self._states[state_key] = stored
                    self._index.add(stored.key, state_key)
            self._ends.update(ends)

    def __len__(self) -> int:
        return len(self._states)
