"""Kafka store: action states in a compacted Kafka topic, in the manner of Flink Agents' ``KafkaActionStateStore``.

URL: ``kafka://HOST:PORT/TOPIC`` (optional query ``?partitions=N&timeout=SECONDS&format=native|flink-agents``).
``format=flink-agents`` (or ``KafkaStore(…, format="flink-agents")``) speaks Flink Agents' own topic format
instead of the native one described here: see :mod:`.kafka_flink`. Needs ``confluent-kafka``
(``pip install pytest-durable[kafka]``); it is imported only when a store is opened.

Read path
    An in-process cache ``state_key -> (key, seq, action, header bytes, [call-result bytes])`` answers every
    ``get``. Kafka is the write-ahead log the cache is rebuilt from after a restart (``rebuild_state``).

Record layout (KSTORE-3)
    Every record is keyed by its state key (behind a one-letter record kind) and goes to partition
    ``murmurHash(String.hashCode(business key up to its first "_")) % partitions`` as Flink Agents picks it
    (:func:`~.kafka_flink_format.partition_for`), given explicitly, so all records of a business key sit in one
    partition in write order. Flink Agents writes the whole ``ActionState`` per record; here call results are
    written as deltas, one record per call result (STORE-5, benchmark P3), never as a whole-state rewrite:

    ``S|{state_key}``
        The state header, written by ``put``. The value is a frame: one line of JSON
        ``{"v": 1, "key": …, "seq": …, "action": …, "sizes": [header, call 0, call 1, …]}``, a newline, then
        the native header (:func:`~reference_runtime.stores.native.encode_state`) and the native call results
        of the put, back to back. ``put`` persists a state whole, so the call results it carries ride in the
        same record: one record is one atomic append (STORE-7), and an ``S`` record resets the state's call
        slots to exactly the ones it carries. Kafka record headers ``key``/``seq``/``action`` repeat the
        location so a record whose frame is unreadable can still be named and pruned.
    ``C|{state_key}|{index:08d}``
        One call result (native :func:`~reference_runtime.stores.native.encode_call_result` bytes), written by
        ``put_call_results``: ``k`` results are ``k`` records, produced together and flushed once.
    ``T|{state_key}``
        A truncation: the ASCII decimal length the call results were cut to. The store writes
        ``min(index, current length)``, which makes the latest ``T`` record alone enough after compaction.
    Tombstones (value None)
        ``prune_state`` and the miss rule of ``get`` (STORE-3) delete a state by writing a tombstone for its
        ``S`` key first (from then on the state is gone, even if the process dies), then for its ``T`` key and
        every ``C`` key it ever used (KSTORE-5). ``rebuild_state`` finishes a deletion a crash interrupted by
        tombstoning delta keys left without a live ``S`` record.

    Replay applies records in offset order per partition: ``S`` resets a state, ``C`` sets one slot of a live
    state (a ``C`` before the latest ``S`` is superseded by it), ``T`` drops slots from its length on. Only the
    latest record per Kafka key matters to that result, so it is the same before and after log compaction.
    Slots that do not form a gap-free prefix and unreadable frames, headers or call results are corruption:
    that state's ``get`` raises :class:`~reference_runtime.errors.CorruptRecordError` naming key, seq, action
    (and call index) and deletes nothing (STORE-9); other states stay readable. A record whose Kafka key is
    none of the above cannot be attributed to a state: ``rebuild_state`` raises ``CorruptRecordError`` naming
    it (partition and offset) and keeps the previous cache.

Writes (KSTORE-3)
    Each store write produces its records and calls ``producer.flush(timeout)`` before returning; a record
    that is not acknowledged in time, or whose delivery fails, raises :class:`StoreError`. The cache changes
    only after the write is acknowledged. After a ``StoreError`` the log may hold part of a multi-result delta
    (records of one write go to one partition in one produce batch, so in practice they land together); the
    runner treats the error as a task failure and recovers through ``rebuild_state``, which reads the log.

Recovery (KSTORE-4, STORE-6)
    ``get_recovery_marker()`` flushes and returns ``{"offsets": {"<partition>": end offset}}``: the broker's
    end offset per partition (ListOffsets), raised to the end this object has itself seen acknowledged.
    ``rebuild_state(markers)`` clears the cache and replays every partition from its log start to its end
    with a group-less ``assign()`` consumer (``enable.auto.commit=false``, ``auto.offset.reset=earliest``;
    nothing is committed, no consumer group is joined); a partition is done at its end-of-partition event,
    whose offset is the fetch's high watermark. The log start is at or before the minimum marker offset
    KSTORE-4 asks to replay from; starting there is needed because a delta after a marker can update a header
    written before it, and compaction keeps that replay as short as the live state. A marker offset past the
    end of its partition means the topic lost records (deleted or recreated): :class:`StoreError`, never a
    silent loss. A new :class:`KafkaStore` over the same topic sees everything after ``rebuild_state([])``:
    that is how a restart works.

    Tansu 0.6 (the broker the tests run) answers ListOffsets(latest) with the base offset of the partition's
    last record batch + 1, which is below the true end when that batch holds several records. The store
    therefore never bounds a replay by ListOffsets (only by the end-of-partition event) and takes the maximum
    with offsets it saw delivered; a marker from a fresh object can be low, which only means "replay more".

Topic
    Created if missing with ``cleanup.policy=compact`` and ``partitions`` partitions; if the broker refuses
    the config the topic is created without it and ``compacted`` is False (the store is still correct, the
    log just grows). Tansu accepts the config. An existing topic keeps its partition count.

Failures (KSTORE-6, KSTORE-7)
    A malformed URL raises :class:`StoreUrlError` naming it. An unreachable broker raises :class:`StoreError`
    naming the URL and the cause within ``timeout`` seconds (a refused TCP connection fails at once; metadata
    requests are bounded by ``timeout``). Writes fail after ``timeout`` without an acknowledgement, and a
    replay that makes no progress for ``timeout`` seconds fails too; the store never hangs.

One store object per topic writes at a time (as one Flink subtask owns its partitions); the object itself is
thread-safe.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CorruptRecordError, Location, StoreError, StoreUrlError
from ..records import ActionState, CallResult, StateRef
from .base import RecoveryMarker
from .kafka_flink_format import FLINK_AGENTS, FORMATS, NATIVE, partition_for
from .kafka_native_format import c_key, decode_frame, encode_frame, parse_index, parse_record_key, s_key, t_key
from .kafka_url import TOPIC, parse_kafka_url
from .keyindex import KeyIndex
from .native import decode_call_result, decode_state, encode_call_result, encode_state

#: ``(state key, business key, seq, action, decode)``; see :meth:`KafkaStore.inspect_states`.
InspectedState = tuple[str, "str | None", "int | None", "str | None", Callable[[], tuple[ActionState, str]]]
_LOG = logging.getLogger(__name__)


def _loc(ref: StateRef, index: int | None = None) -> Location:
    return Location(ref.key, ref.seq, ref.action.name, index)


def _refuse_corrupt(entry: _Entry, ref: StateRef) -> None:
    """A state whose records failed to decode on replay is refused on every access, never half-used."""
    if entry.problem is not None:
        reason, at = entry.problem
        raise CorruptRecordError(reason, _loc(ref, at))


@dataclass
class _Entry:
    """A live state in the cache (mirrors what replaying the log yields)."""

    key: str | None
    seq: int | None
    action: str | None
    header: bytes
    calls: list[bytes] = field(default_factory=list)
    #: Deferred corruption found while replaying: (reason, call index); ``get`` raises it.
    problem: tuple[str, int | None] | None = None

    def seq_of(self, key: str) -> int | None:
        """This state's seq if it belongs to business key ``key`` (unreadable states may not know theirs)."""
        return self.seq if self.key == key else None


@dataclass
class _Replayed:
    key: str | None
    seq: int | None
    action: str | None
    header: bytes
    slots: dict[int, bytes]
    problem: tuple[str, int | None] | None = None


def delete_topics(bootstrap: str, topics: Sequence[str], timeout: float = 10.0, *, admin: Any = None) -> None:
    """Delete ``topics`` on the broker (what the test fixtures made); raise :class:`StoreError` naming the
    first topic that could not be deleted."""
    if not topics:
        return
    try:
        if admin is None:
            from confluent_kafka import admin as kafka_admin

            config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _LOG}
            admin = kafka_admin.AdminClient(config)
        futures = admin.delete_topics(list(topics), request_timeout=timeout)
        for topic in topics:
            try:
                futures[topic].result(timeout)
            except Exception as exc:  # the admin client raises KafkaException or a future's own errors
                raise StoreError(f"cannot delete topic {topic!r} of Kafka store kafka://{bootstrap}: {exc}") from exc
    except ImportError as exc:
        raise StoreError(f"cannot delete Kafka topics on {bootstrap}: confluent-kafka is not installed") from exc


def _probe(bootstrap: str, timeout: float) -> str | None:
    """Try a TCP connection to each bootstrap server; None if one answers, else why none did."""
    reasons = []
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return None
        except (OSError, ValueError) as exc:
            reasons.append(f"{server.strip()}: {exc}")
    return "; ".join(reasons)


class KafkaStore:
    """An :class:`~reference_runtime.stores.base.ActionStateStore` backed by a compacted Kafka topic."""

    def __new__(
        cls,
        bootstrap: str,
        topic: str,
        *,
        partitions: int = 4,
        timeout: float = 10.0,
        format: str = NATIVE,
        read_only: bool = False,
    ) -> KafkaStore:
        if cls is KafkaStore and format == FLINK_AGENTS:
            from .kafka_flink import FlinkAgentsKafkaStore

            return super().__new__(FlinkAgentsKafkaStore)
        return super().__new__(cls)

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        partitions: int = 4,
        timeout: float = 10.0,
        format: str = NATIVE,
        read_only: bool = False,
    ) -> None:
        if format not in FORMATS:
            raise StoreUrlError(
                f"unknown Kafka store format {format!r} for kafka://{bootstrap}/{topic}; known: {', '.join(FORMATS)}"
            )
        if not TOPIC.match(topic):
            raise StoreUrlError(f"bad Kafka topic name {topic!r} for kafka://{bootstrap}/{topic}")
        if partitions < 1:
            raise StoreError(f"a Kafka store needs at least one partition, got {partitions}")
        self.bootstrap = bootstrap
        self.topic = topic
        self.timeout = float(timeout)
        self.format = format
        #: ``durable inspect`` opens stores read-only: no topic is created and every write raises.
        self.read_only = read_only
        self.url = f"kafka://{bootstrap}/{topic}" + (f"?format={format}" if format != NATIVE else "")
        self.compacted = True
        self.bytes_written = 0
        #: Records produced by this object (every put / delta / truncation / tombstone is one or more).
        self.records_written = 0
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._by_key = KeyIndex()
        #: state key -> every non-tombstoned Kafka key of that state in the log -> partition.
        self._log_keys: dict[str, dict[str, int]] = {}
        self._last_error: str | None = None
        #: End offset per partition known from this object's own deliveries and replays.
        self._ends: dict[int, int] = {}
        self._closed = False
        try:
            import confluent_kafka
            from confluent_kafka import admin as kafka_admin
        except ImportError as exc:
            raise StoreError(
                f"cannot open Kafka store {self.url}: confluent-kafka is not installed "
                "(pip install pytest-durable[kafka])"
            ) from exc
        self._ck: Any = confluent_kafka
        cause = _probe(bootstrap, min(self.timeout, 5.0))
        if cause is not None:
            raise StoreError(f"cannot reach Kafka store {self.url}: {cause}")
        common: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "socket.timeout.ms": max(1000, int(self.timeout * 1000)),
            "logger": _LOG,
            "error_cb": self._on_error,
        }
        self._admin: Any = kafka_admin.AdminClient(dict(common))
        self._npart = self._ensure_topic(kafka_admin, partitions)
        self._producer: Any = confluent_kafka.Producer(
            {
                **common,
                "acks": "all",
                "linger.ms": 5,
                "max.in.flight.requests.per.connection": 1,
                "message.timeout.ms": max(1000, int(self.timeout * 1000)),
            }
        )
        self._consumer: Any = confluent_kafka.Consumer(
            {
                **common,
                # group.id is mandatory for a librdkafka consumer; it is never joined (assign only) or committed.
                "group.id": f"durable-replay-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
                "fetch.wait.max.ms": 10,
            }
        )

    @classmethod
    def from_url(cls, url: str, *, timeout: float | None = None, read_only: bool = False) -> KafkaStore:
        """Open ``kafka://HOST:PORT/TOPIC`` (KSTORE-6)."""
        parsed = parse_kafka_url(url)
        options: dict[str, Any] = {"timeout": timeout or parsed.timeout or 10.0}
        if parsed.partitions is not None:
            options["partitions"] = parsed.partitions
        if parsed.format is not None:
            options["format"] = parsed.format
        return cls(parsed.bootstrap, parsed.path, read_only=read_only, **options)

    def reopen(self) -> KafkaStore:
        """A new store object over the same broker and topic, rebuilt from the log (a process restart).

        The old object stays open; close it yourself once it is no longer needed.
        """
        again = KafkaStore(self.bootstrap, self.topic, partitions=self._npart, timeout=self.timeout, format=self.format)
        again.rebuild_state([])
        return again

    # -- connection ------------------------------------------------------------------------------------

    def _on_error(self, err: Any) -> None:
        self._last_error = str(err)

    def _fail(self, what: str, exc: BaseException | str) -> StoreError:
        return StoreError(f"Kafka store {self.url}: {what}: {exc}")

    def _ensure_topic(self, kafka_admin: Any, partitions: int) -> int:
        try:
            metadata = self._admin.list_topics(timeout=self.timeout)
        except Exception as exc:  # KafkaException: broker down, timed out
            raise StoreError(
                f"cannot reach Kafka store {self.url}: {exc} (last client error: {self._last_error})"
            ) from exc
        if self.topic not in metadata.topics:
            if self.read_only:
                raise StoreError(f"Kafka store {self.url}: topic {self.topic!r} does not exist")
            self._create_topic(kafka_admin, partitions)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                topic_md = self._admin.list_topics(topic=self.topic, timeout=self.timeout).topics.get(self.topic)
            except Exception as exc:
                raise StoreError(f"cannot read metadata of Kafka store {self.url}: {exc}") from exc
            if topic_md is not None and topic_md.error is None and topic_md.partitions:
                return len(topic_md.partitions)
            if time.monotonic() > deadline:
                error = topic_md.error if topic_md is not None else "topic missing"
                raise StoreError(f"Kafka store {self.url}: topic {self.topic!r} is not available: {error}")
            time.sleep(0.05)

    def _create_topic(self, kafka_admin: Any, partitions: int) -> None:
        for config in ({"cleanup.policy": "compact"}, None):
            new = kafka_admin.NewTopic(self.topic, num_partitions=partitions, replication_factor=1, config=config or {})
            try:
                self._admin.create_topics([new], request_timeout=self.timeout)[self.topic].result(self.timeout)
                self.compacted = config is not None
                return
            except Exception as exc:
                err: Any = exc.args[0] if exc.args else None
                code = err.code() if hasattr(err, "code") else None
                if code == self._ck.KafkaError.TOPIC_ALREADY_EXISTS:
                    return  # created concurrently (another process or worker)
                if config is not None and code in (
                    self._ck.KafkaError.INVALID_CONFIG,
                    self._ck.KafkaError.POLICY_VIOLATION,
                ):
                    _LOG.warning(
                        "Kafka store %s: broker refused cleanup.policy=compact (%s); the topic is created without it",
                        self.url,
                        exc,
                    )
                    continue
                raise StoreError(f"cannot create topic for Kafka store {self.url}: {exc}") from exc

    # -- writes ----------------------------------------------------------------------------------------

    def _partition(self, key: str) -> int:
        return partition_for(key, self._npart)

    def _send(self, records: Sequence[tuple[str, bytes | None, int, list[tuple[str, bytes]] | None]]) -> None:
        """Produce ``(kafka key, value, partition, headers)`` records and flush; raise unless all landed."""
        if self._closed or self.read_only:
            raise StoreError(f"Kafka store {self.url} is {'closed' if self._closed else 'opened read-only'}")
        failures: list[str] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(f"{msg.key()!r}: {err}")
            else:
                self._ends[msg.partition()] = max(self._ends.get(msg.partition(), 0), msg.offset() + 1)

        try:
            for kkey, value, partition, headers in records:
                self._producer.produce(
                    self.topic,
                    key=kkey.encode("utf-8"),
                    value=value,
                    partition=partition,
                    headers=headers,
                    on_delivery=delivered,
                )
            remaining = self._producer.flush(self.timeout)
        except (BufferError, self._ck.KafkaException) as exc:
            raise self._fail("write failed", exc) from exc
        if remaining:
            self._producer.purge(in_queue=True, in_flight=False)
            self._producer.flush(0)
            raise self._fail(
                "write not acknowledged",
                f"{remaining} record(s) pending after {self.timeout}s (last client error: {self._last_error})",
            )
        if failures:
            raise self._fail("write failed", "; ".join(failures))
        self.records_written += len(records)
        self.bytes_written += sum(len(v) for _, v, _, _ in records if v is not None)

    def _note(self, state_key: str, kafka_key: str, partition: int) -> None:
        self._log_keys.setdefault(state_key, {})[kafka_key] = partition

    def put(self, ref: StateRef, state: ActionState) -> None:
        header = encode_state(state)
        calls = [encode_call_result(r) for r in state.call_results]
        frame = encode_frame(ref.key, ref.seq, ref.action.name, header, calls)
        part = self._partition(ref.key)
        headers = [
            ("key", ref.key.encode("utf-8")),
            ("seq", str(ref.seq).encode()),
            ("action", ref.action.name.encode("utf-8")),
        ]
        with self._lock:
            self._send([(s_key(ref.state_key), frame, part, headers)])
            self._entries[ref.state_key] = _Entry(ref.key, ref.seq, ref.action.name, header, calls)
            self._by_key.add(ref.key, ref.state_key)
            self._note(ref.state_key, s_key(ref.state_key), part)

    def _live(self, ref: StateRef, index: int) -> _Entry:
        entry = self._entries.get(ref.state_key)
        if entry is None:
            raise StoreError(f"no action state to add call results to [{_loc(ref, index)}]")
        _refuse_corrupt(entry, ref)
        return entry

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        encoded = [encode_call_result(r) for r in results]
        part = self._partition(ref.key)
        with self._lock:
            entry = self._live(ref, index)
            if index < 0 or index > len(entry.calls):
                raise StoreError(
                    f"call index {index} leaves a gap after {len(entry.calls)} records [{_loc(ref, index)}]"
                )
            if not encoded:
                return
            self._send([(c_key(ref.state_key, index + i), body, part, None) for i, body in enumerate(encoded)])
            entry.calls[index : index + len(encoded)] = encoded
            for i in range(len(encoded)):
                self._note(ref.state_key, c_key(ref.state_key, index + i), part)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        part = self._partition(ref.key)
        with self._lock:
            entry = self._entries.get(ref.state_key)
            if entry is None:
                return
            _refuse_corrupt(entry, ref)
            length = max(0, min(index, len(entry.calls)))
            self._send([(t_key(ref.state_key), str(length).encode("ascii"), part, None)])
            del entry.calls[length:]
            self._note(ref.state_key, t_key(ref.state_key), part)

    def _delete(self, state_keys: Sequence[str]) -> None:
        """Tombstone each state: its ``S`` key first (the state is gone from then on), then its deltas."""
        if not state_keys:
            return
        heads: list[tuple[str, bytes | None, int, list[tuple[str, bytes]] | None]] = []
        tails: list[tuple[str, bytes | None, int, list[tuple[str, bytes]] | None]] = []
        for sk in state_keys:
            for kkey, part in sorted(self._log_keys.get(sk, {}).items()):
                (heads if kkey.startswith("S|") else tails).append((kkey, None, part, None))
        self._send(heads)
        for sk in state_keys:
            gone = self._entries.pop(sk, None)
            if gone is not None:
                self._by_key.discard(gone.key, sk)
            log_keys = self._log_keys.get(sk, {})
            log_keys.pop(s_key(sk), None)
        if tails:
            self._send(tails)
        for sk in state_keys:
            self._log_keys.pop(sk, None)

    def get(self, ref: StateRef) -> ActionState | None:
        with self._lock:
            entry = self._entries.get(ref.state_key)
            if entry is None:
                self._delete(self._of_key(ref.key, lambda seq: seq > ref.seq))
                return None
            _refuse_corrupt(entry, ref)
            header, calls = entry.header, list(entry.calls)
        state = decode_state(header, _loc(ref))
        state.call_results = [decode_call_result(body, _loc(ref, i)) for i, body in enumerate(calls)]
        return state

    def prune_state(self, key: str, seq: int) -> None:
        with self._lock:
            self._delete(self._of_key(key, lambda found: found <= seq))

    def _of_key(self, key: str, wanted: Callable[[int], bool]) -> list[str]:
        def seq_of(sk: str) -> int | None:
            entry = self._entries.get(sk)
            return entry.seq_of(key) if entry is not None else None

        return self._by_key.matching(key, seq_of, wanted)

    # -- recovery --------------------------------------------------------------------------------------

    def _watermarks(self) -> dict[int, tuple[int, int]]:
        """(log start, end) offsets per partition as ListOffsets reports them; Tansu 0.6 can report an end
        below the true one (the last batch's base offset + 1), never above it, and never equal to the start
        of a non-empty partition."""
        out: dict[int, tuple[int, int]] = {}
        for p in range(self._npart):
            tp = self._ck.TopicPartition(self.topic, p)
            try:
                low, high = self._consumer.get_watermark_offsets(tp, timeout=self.timeout, cached=False)
            except Exception as exc:
                raise self._fail(f"cannot read the end offset of partition {p}", exc) from exc
            out[p] = (int(low), max(int(high), self._ends.get(p, 0)))
        return out

    def get_recovery_marker(self) -> RecoveryMarker:
        with self._lock:
            try:
                self._producer.flush(self.timeout)
            except self._ck.KafkaException as exc:
                raise self._fail("flush failed", exc) from exc
            return {"offsets": {str(p): end for p, (_low, end) in self._watermarks().items()}}

    def _marker_offsets(self, markers: Sequence[RecoveryMarker]) -> dict[int, int]:
        """The minimum offset per partition over ``markers`` (KSTORE-4)."""
        low: dict[int, int] = {}
        for marker in markers:
            offsets = marker.get("offsets") if isinstance(marker, dict) else None
            if not isinstance(offsets, dict):
                raise StoreError(f"Kafka store {self.url}: unreadable recovery marker {marker!r}")
            for p_raw, off in offsets.items():
                try:
                    p, offset = int(p_raw), int(off)
                except (TypeError, ValueError) as exc:
                    raise StoreError(f"Kafka store {self.url}: unreadable recovery marker {marker!r}") from exc
                if not 0 <= p < self._npart or offset < 0:
                    raise StoreError(
                        f"Kafka store {self.url}: recovery marker names partition {p} offset "
                        f"{offset}; the topic has {self._npart} partitions"
                    )
                low[p] = min(offset, low.get(p, offset))
        return low

    def _replay(self, apply: Callable[[Any], None], starts: dict[int, int] | None = None) -> dict[int, int]:
        """Feed every record of every partition, in offset order, to ``apply``; return the end offsets.
        With ``starts``, read only those partitions, each from the given offset (or its log start if later).

        A partition is done at its end-of-partition event, whose offset is the high watermark of the fetch
        (Tansu 0.6 answers ListOffsets with the last batch's base offset + 1, so that is only a lower bound).
        """
        marks = self._watermarks()
        # A start past the reported end is clamped to it: the end may be reported low (Tansu, above), and a
        # marker past the true end must still reach the end-of-partition event that proves the loss.
        begin = {
            p: low if starts is None else min(max(low, starts.get(p, low)), high) for p, (low, high) in marks.items()
        }
        ends = {p: high for p, (low, high) in marks.items() if high <= low}  # empty partitions
        pending = {p for p in marks if p not in ends and (starts is None or p in starts)}
        if not pending:
            return ends
        self._consumer.assign([self._ck.TopicPartition(self.topic, p, begin[p]) for p in sorted(pending)])
        try:
            deadline = time.monotonic() + self.timeout
            while pending:
                if time.monotonic() > deadline:
                    raise self._fail(
                        "replay stalled",
                        f"no progress for {self.timeout}s on partitions "
                        f"{sorted(pending)} (last client error: {self._last_error})",
                    )
                batch: list[Any] = self._consumer.consume(num_messages=1000, timeout=0.01)
                for msg in batch:
                    p = msg.partition()
                    err: Any = msg.error()
                    if err is not None:
                        if err.code() == self._ck.KafkaError._PARTITION_EOF:
                            if p in pending and msg.offset() >= marks[p][1]:
                                pending.discard(p)
                                ends[p] = msg.offset()
                            continue
                        raise self._fail("replay failed", err)
                    if p not in pending:
                        continue
                    deadline = time.monotonic() + self.timeout
                    apply(msg)
        finally:
            self._consumer.unassign()
        return ends

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        with self._lock:
            marked = self._marker_offsets(markers)
            states: dict[str, _Replayed] = {}
            log_keys: dict[str, dict[str, int]] = {}
            bad_keys: list[str] = []

            def apply(msg: Any) -> None:
                raw_key = msg.key()
                value = msg.value()
                part = msg.partition()
                try:
                    kkey = raw_key.decode("utf-8")
                except (AttributeError, UnicodeDecodeError):
                    bad_keys.append(f"{raw_key!r}@{part}:{msg.offset()}")
                    return
                parsed = parse_record_key(kkey)
                if parsed is None:
                    bad_keys.append(f"{kkey[:200]!r}@{part}:{msg.offset()}")
                    return
                kind, sk, index = parsed
                if value is None:
                    log_keys.get(sk, {}).pop(kkey, None)
                    if kind == "S":
                        states.pop(sk, None)
                    elif kind == "C" and sk in states and index is not None:
                        states[sk].slots.pop(index, None)
                    return
                log_keys.setdefault(sk, {})[kkey] = part
                if kind == "S":
                    states[sk] = self._replay_header(msg, value)
                    return
                state = states.get(sk)
                if state is None or state.problem is not None:
                    return  # a delta of a deleted or superseded state, or of an unreadable one
                if kind == "C" and index is not None:
                    state.slots[index] = bytes(value)
                else:
                    text = bytes(value).decode("ascii", "replace")
                    keep = parse_index(text)
                    if keep is None:
                        state.problem = (f"truncation record {kkey[:200]!r} holds {text[:40]!r}, not a length", None)
                        return
                    for i in [i for i in state.slots if i >= keep]:
                        del state.slots[i]

            ends = self._replay(apply)
            lost = {p: off for p, off in marked.items() if off > ends.get(p, 0)}
            if lost:
                raise StoreError(
                    f"Kafka store {self.url}: recovery marker offsets {lost} are past the end of "
                    f"the log {ends}; the topic lost records (deleted or recreated?)"
                )
            if bad_keys:
                raise CorruptRecordError(
                    f"Kafka store {self.url}: records with unknown keys: {', '.join(bad_keys[:5])}"
                )
            entries: dict[str, _Entry] = {}
            for sk, st in states.items():
                calls = [st.slots[i] for i in range(len(st.slots)) if i in st.slots]
                problem = st.problem
                if problem is None and len(calls) != len(st.slots):
                    problem = (f"call results have a gap at index {len(calls)}", len(calls))
                entries[sk] = _Entry(st.key, st.seq, st.action, st.header, calls, problem)
            self._entries = entries
            self._by_key = KeyIndex.of((e.key, sk) for sk, e in entries.items())
            self._log_keys = log_keys
            self._ends = ends
            # Finish deletions a crash interrupted: delta keys whose state has no live S record.
            orphans = [sk for sk, keys in log_keys.items() if sk not in entries and keys]
            if orphans and not self.read_only:
                self._delete(orphans)

    def _replay_header(self, msg: Any, value: bytes) -> _Replayed:
        try:
            key, seq, action, header, calls = decode_frame(bytes(value))
        except ValueError as exc:
            located: dict[str, str] = {}
            for name, raw in msg.headers() or []:
                if name in ("key", "seq", "action") and isinstance(raw, bytes):
                    located[name] = raw.decode("utf-8", "replace")
            return _Replayed(
                located.get("key"),
                parse_index(located.get("seq", "")),
                located.get("action"),
                b"",
                {},
                (f"unreadable action state record: {exc}", None),
            )
        return _Replayed(key, seq, action, header, dict(enumerate(calls)))

    def inspect_states(self) -> list[InspectedState]:
        """Every live state as ``(state key, key, seq, action, decode)`` for ``durable inspect``: ``decode()``
        returns the state and its record format, or raises ``CorruptRecordError`` naming the location."""
        with self._lock:
            entries = dict(self._entries)

        def decoder(e: _Entry) -> Callable[[], tuple[ActionState, str]]:
            def decode() -> tuple[ActionState, str]:
                if e.problem is not None:
                    raise CorruptRecordError(e.problem[0], Location(e.key, e.seq, e.action, e.problem[1]))
                state = decode_state(e.header, Location(e.key, e.seq, e.action))
                state.call_results = [
                    decode_call_result(body, Location(e.key, e.seq, e.action, i)) for i, body in enumerate(e.calls)
                ]
                return state, "native"

            return decode

        return [(sk, e.key, e.seq, e.action, decoder(e)) for sk, e in entries.items()]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._producer.flush(self.timeout)
            finally:
                self._consumer.close()

    def destroy(self) -> None:
        """Close the store and delete its topic (the test fixtures call it for each isolated topic)."""
        self.close()
        delete_topics(self.bootstrap, [self.topic], self.timeout, admin=self._admin)

    def __len__(self) -> int:
        return len(self._entries)
