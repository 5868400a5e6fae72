"""The Kafka store in Flink Agents' own topic format: ``kafka://HOST:PORT/TOPIC?format=flink-agents`` or
``FlinkAgentsKafkaStore(bootstrap, topic)`` (spec WIRE-1..WIRE-8).

Point it at the action-state topic of a Flink Agents job and it reads what the job wrote; what it writes, a
Flink Agents job reads. Record layout: :mod:`.kafka_flink_format`. Client I/O (producer ``acks=all`` with a
flush per write, the group-less replay consumer, topic creation, recovery markers, failure handling) is the
native store's, :mod:`.kafka`.

Engine version (WIRE-10..WIRE-12)
    A topic belongs to one engine version (``0.3``: 0.3.x and main; ``0.2``: 0.2.x), known before anything is
    written: named by ``version`` (``?format=flink-agents&version=0.2``), else detected when the store opens
    from the live records the topic holds (a new or empty topic is ``0.3``). The store writes exactly that
    version's records, and for ``0.2`` hands the runner 0.2.0's state keys (``key_scheme``). A topic holding
    records its version's engine cannot read (another version's, or two versions') is refused on the first
    write with one :class:`~reference_runtime.errors.TopicFormatError` naming both, unless the store was
    opened with ``migrate=True`` (``&migrate=true``) and a ``version``: then every live state the engine of
    that version cannot read is rewritten in its format, under the same key, before the store is used.

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

from ..errors import CorruptRecordError, Location, StoreError, StoreUrlError, TopicFormatError, location
from ..key_schemes import Legacy020KeyScheme
from ..records import ActionState, CallResult, StateRef
from ..serde.actionstate import StateText
from ..serde.legacy_event import LegacyFormatError
from .base import RecoveryMarker
from .kafka import KafkaStore
from .kafka_flink_format import (
    FLINK_AGENTS,
    V020,
    V030,
    VERSIONS,
    EngineCheck,
    TopicOwner,
    decode_value,
    encode_value,
    engine_check,
    engine_verdict,
    locate,
    location_headers,
    partition_for,
    set_call_results,
    state_text,
    topic_owner,
    truncate_call_results,
)
from .kafka_url import parse_kafka_url
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
    #: The value in the parts a call-result write changes, kept after the first such write so the next one
    #: neither parses the record again nor re-encodes what did not change.
    text: StateText | None = None
    #: The location headers this store wrote the record with (None for a record read back), which every
    #: later write of the state repeats: made once, not on every durable call (benchmark P10).
    headers: list[tuple[str, bytes]] | None = None


class RecordDecoder:
    """``decode()`` of one stored state for ``durable inspect``, with ``engine``: what the engine owning the
    topic makes of the record (:func:`~.kafka_flink_format.engine_verdict`)."""

    def __init__(self, stored: StoredState, action: str | None, engine: dict[str, Any]) -> None:
        self._stored = stored
        self._action = action
        self.engine = engine

    def __call__(self) -> tuple[ActionState, str]:
        s = self._stored
        state, era = decode_value(s.value, Location(s.key, s.seq, self._action))
        return state, f"flink-agents ({era})"


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
        version: str | None = None,
        migrate: bool = False,
    ) -> None:
        if version is not None and version not in VERSIONS:
            raise StoreUrlError(
                f"unknown Flink Agents version {version!r} for kafka://{bootstrap}/{topic}; "
                f"known: {', '.join(VERSIONS)}"
            )
        if migrate and version is None:
            raise StoreUrlError(
                f"kafka://{bootstrap}/{topic}: migrate needs the version to migrate to (version=0.2 or 0.3)"
            )
        super().__init__(
            bootstrap, topic, partitions=partitions, timeout=timeout, format=FLINK_AGENTS, read_only=read_only
        )
        self._states: dict[str, StoredState] = {}
        self._index = KeyIndex()
        #: The version named by the caller, if any; :attr:`version` is the one the store writes.
        self.declared_version = version
        self.owner = TopicOwner(version or V030, "declared" if version else "default")
        self._refusal: TopicFormatError | None = None
        if version is not None:
            self.url += f"&version={version}"
        if not read_only:
            self._settle_owner(migrate)

    @classmethod
    def from_url(cls, url: str, *, timeout: float | None = None, read_only: bool = False) -> FlinkAgentsKafkaStore:
        """Open ``kafka://HOST:PORT/TOPIC?format=flink-agents[&version=V][&migrate=true]`` (WIRE-1, WIRE-12)."""
        parsed = parse_kafka_url(url)
        return cls(
            parsed.bootstrap,
            parsed.path,
            partitions=parsed.partitions or 4,
            timeout=timeout or parsed.timeout or 10.0,
            read_only=read_only,
            version=parsed.options.get("version"),
            migrate=parsed.options.get("migrate") == "true",
        )

    def reopen(self) -> FlinkAgentsKafkaStore:
        again = type(self)(
            self.bootstrap, self.topic, partitions=self._npart, timeout=self.timeout, version=self.declared_version
        )
        again.rebuild_state([])
        return again

    # -- the engine version that owns the topic (WIRE-12) -------------------------------------------------

    @property
    def version(self) -> str:
        """The engine version whose records this store writes."""
        return self.owner.version or self.declared_version or V030

    @property
    def key_scheme(self) -> str:
        """The state-key scheme of the topic's engine, which a runner given this store uses by default."""
        return Legacy020KeyScheme.name if self.version == V020 else "java"

    def _live_values(self) -> dict[str, bytes]:
        """The last value of every state key the topic holds (tombstoned keys left out), by a full replay."""
        found: dict[str, bytes | None] = {}

        def apply(msg: Any) -> None:
            raw_key, value = msg.key(), msg.value()
            found[bytes(raw_key or b"").decode("utf-8", "replace")] = None if value is None else bytes(value)

        ends = self._replay(apply)
        self._ends.update(ends)
        return {sk: v for sk, v in found.items() if v is not None}

    def _settle_owner(self, migrate: bool) -> None:
        checks = [(sk, engine_check(v)) for sk, v in self._live_values().items()]
        owner = topic_owner(checks, self.declared_version)
        self.owner = owner
        if owner.version is not None and not self._foreign(owner, dict(checks)):
            return
        if migrate:
            self._migrate(dict(checks))
            return
        self._refusal = TopicFormatError(self._mismatch_message(owner, dict(checks)))

    def _foreign(self, owner: TopicOwner, checks: dict[str, EngineCheck]) -> list[tuple[str, str]]:
        """The live states the owner's engine cannot read and this store did not write itself. In a topic whose
        version was not declared, a record the 0.3 engine refuses only for this store's own ``objectCreation``
        flag (PR #1030) is the store's own writing and is read back whole; `durable inspect` still flags it
        (INS-8). In a topic declared engine-owned, nothing of the kind is written (see :meth:`_encode`)."""
        return [
            (sk, why)
            for sk, why in owner.unreadable
            if not (self.declared_version is None and owner.version == V030 and checks[sk].pr1030_only)
        ]

    def _mismatch_message(self, owner: TopicOwner, checks: dict[str, EngineCheck]) -> str:
        held = ", ".join(f"{n} state(s) only the {v} engine reads" for v, n in owner.only if n) or "states"
        if owner.version is None:
            return (
                f"Kafka store {self.url}: the topic mixes Flink Agents formats ({held}); no engine reads it whole, "
                "so nothing is written. See it with `durable inspect`; to make it one version's, reopen with "
                "&version=V&migrate=true (V = 0.2 or 0.3, the version of the engine that runs on it)"
            )
        foreign = self._foreign(owner, checks)
        sk, why = foreign[0]
        readers = sorted(checks[sk].readers)
        other = f"the {readers[0]} format" if readers else "a format no engine reads"
        return (
            f"Kafka store {self.url}: the topic holds {len(foreign)} state(s) in {other} that the "
            f"Flink Agents {owner.version} engine this store writes for cannot read (e.g. {sk}: {why}); writing "
            f"{owner.version} records beside them is refused. Open it with version="
            f"{readers[0] if readers else '0.3'} to write what its engine reads, or with "
            f"version={owner.version}&migrate=true to rewrite those states in the {owner.version} format"
        )

    def _migrate(self, checks: dict[str, EngineCheck]) -> None:
        """Rewrite every live state the target version cannot read in its format, or nothing (WIRE-12)."""
        target = self.version
        self.rebuild_state([])
        rewrites: list[tuple[str, StoredState, bytes]] = []
        for sk, check in checks.items():
            stored = self._states.get(sk)
            if target in check.readers or stored is None:
                continue
            where = Location(stored.key, stored.seq, stored.action)
            try:
                state, _era = decode_value(stored.value, where)
                rewrites.append((sk, stored, encode_value(state, target)))
            except (CorruptRecordError, LegacyFormatError) as exc:
                raise TopicFormatError(
                    f"Kafka store {self.url}: cannot migrate state {sk} to the Flink Agents {target} format, so "
                    f"nothing was rewritten: {exc}",
                    where,
                ) from None
        with self._lock:
            self._send([(sk, value, stored.partition, None) for sk, stored, value in rewrites])
            for sk, stored, value in rewrites:
                self._states[sk] = replace(stored, value=value, text=None)
        self.owner = TopicOwner(target, "declared")

    def _encode(self, state: ActionState, ref: StateRef, index: int | None = None) -> bytes:
        if self._refusal is not None:
            raise self._refusal
        if self.declared_version == V030 and any(
            u.object_creation for u in (*state.short_term_memory_updates, *state.sensory_memory_updates)
        ):
            # A topic declared engine-owned gets only what its engine reads (WIRE-15): 0.3.x refuses the
            # objectCreation flag, and without it replays new_object as set(path, None) (#1029).
            raise TopicFormatError(
                f"Kafka store {self.url}: this state has a new_object memory update, which no Flink Agents 0.3 "
                "engine reads correctly: 0.3.1 refuses the objectCreation flag that records it (PR #1030), and "
                "without the flag it replays new_object as set(path, None), corrupting memory (#1029). Set the "
                "fields with set() instead of new_object(), or leave version= out of the URL for a topic that no "
                "real engine reads",
                location(ref, index),
            )
        try:
            return encode_value(state, self.version)
        except LegacyFormatError as exc:
            raise TopicFormatError(
                f"Kafka store {self.url}: this state cannot be written in the Flink Agents 0.2 format its topic "
                f"is in: {exc}",
                location(ref, index),
            ) from None

    def _check_key(self, ref: StateRef) -> None:
        """A 0.2 topic is read by state keys 0.2.0 builds; a state filed under another key is never found."""
        if self.version != V020:
            return
        try:
            expected = Legacy020KeyScheme().state_key(ref.key, ref.seq, ref.action, ref.event, ref.occurrence)
        except LegacyFormatError as exc:
            raise TopicFormatError(f"Kafka store {self.url}: {exc}", location(ref)) from None
        if ref.state_key != expected:
            raise TopicFormatError(
                f"Kafka store {self.url}: state key {ref.state_key!r} is not the key a Flink Agents 0.2 job files "
                f"this state under ({expected!r}), so its engine would never find it; run with "
                f"Runner(key_scheme={Legacy020KeyScheme.name!r}), the default for this store",
                location(ref),
            )

    # -- writes ----------------------------------------------------------------------------------------

    def _write(
        self, ref: StateRef, value: bytes, text: StateText | None = None, *, was: StoredState | None = None
    ) -> None:
        """Write the state's record; ``was``: the state as stored before, which this write replaces (a
        call-result write), so its headers are reused and its key is already indexed."""
        part = partition_for(ref.key, self._npart)
        headers = was.headers if was is not None and was.headers is not None else location_headers(ref)
        self._send([(ref.state_key, value, part, headers)])
        self._states[ref.state_key] = StoredState(ref.key, ref.seq, ref.action.name, value, part, text, headers)
        if was is None:
            self._index.add(ref.key, ref.state_key)

    def _rewrite(self, stored: StoredState, ref: StateRef, index: int, calls: Callable[[ActionState], bool]) -> None:
        """Change the call results of a stored 0.2 state (``calls`` edits them in place and says whether
        anything changed) and write it back whole."""
        state, _era = decode_value(stored.value, location(ref, index))
        if calls(state):
            self._write(ref, self._encode(state, ref, index), was=stored)

    def _text(self, stored: StoredState, ref: StateRef, index: int) -> StateText:
        """The stored value in parts (kept unchanged: a write makes new parts, cached once acknowledged)."""
        return stored.text if stored.text is not None else state_text(stored.value, location(ref, index))

    def put(self, ref: StateRef, state: ActionState) -> None:
        value = self._encode(state, ref)
        self._check_key(ref)
        with self._lock:
            self._write(ref, value)

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with self._lock:
            stored = self._states.get(ref.state_key)
            if stored is None:
                raise StoreError(f"no action state to add call results to [{location(ref, index)}]")
            if self._refusal is not None:
                raise self._refusal
            if self.version == V020:

                def put_calls(state: ActionState) -> bool:
                    if index < 0 or index > len(state.call_results):
                        raise StoreError(
                            f"call index {index} leaves a gap after {len(state.call_results)} records "
                            f"[{location(ref, index)}]"
                        )
                    state.call_results[index : index + len(results)] = list(results)
                    return bool(results)

                self._rewrite(stored, ref, index, put_calls)
                return
            try:
                text = set_call_results(self._text(stored, ref, index), index, results)
            except StoreError as exc:
                # The location is made for the error only: every durable call passes here (benchmark P10).
                raise StoreError(f"{exc} [{location(ref, index)}]") from None
            if results:
                self._write(ref, text.value(), text, was=stored)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        with self._lock:
            stored = self._states.get(ref.state_key)
            if stored is None:
                return
            if self._refusal is not None:
                raise self._refusal
            if self.version == V020:

                def cut(state: ActionState) -> bool:
                    if index >= len(state.call_results):
                        return False
                    del state.call_results[max(0, index) :]
                    return True

                self._rewrite(stored, ref, index, cut)
                return
            text = truncate_call_results(self._text(stored, ref, index), index)
            if text is not None:
                self._write(ref, text.value(), text, was=stored)

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
        Flink Agents job wrote names its action only by the UUID at the end of its key. Each ``decode`` also
        carries ``engine``: whether the engine version owning the topic reads that record (INS-8)."""
        stored = self.stored()
        checks = {sk: engine_check(s.value) for sk, s in stored.items()}
        owner = topic_owner(checks.items(), self.declared_version)
        out: list[InspectedState] = []
        for sk, s in stored.items():
            action = s.action or (f"uuid {sk.rsplit('_', 1)[-1]}" if s.key is not None else None)
            out.append((sk, s.key, s.seq, action, RecordDecoder(s, action, engine_verdict(owner, checks[sk]))))
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
