"""Kafka store: action states in a compacted Kafka topic, in the manner of Flink Agents'
``KafkaActionStateStore`` (KSTORE-3..KSTORE-7). This module is the client side: producer, replay
consumer and the store's cache. The record layout, recovery and failure rules are in docs/stores.md; pure
framing is in :mod:`.kafka_native_format`, replay folding and marker arithmetic in :mod:`.kafka_replay`
(KSTORE-8), topic administration in :mod:`.kafka_topics`. The Flink Agents topic format is the subclass
:class:`~.kafka_flink.FlinkAgentsKafkaStore`, which this module does not import (no cycle, API-3). Needs
``confluent-kafka`` (``pip install pytest-durable[kafka]``), imported only when a store is opened. One
store object per topic writes at a time (as one Flink subtask owns its partitions); the object itself is
thread-safe.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import CorruptRecordError, Location, StoreDataLostError, StoreError, StoreUrlError, location
from ..records import ActionState, CallResult, StateRef
from .base import RecoveryMarker
from .kafka_flink_format import FLINK_AGENTS, FORMATS, NATIVE, partition_for
from .kafka_native_format import c_key, encode_frame, s_key, t_key
from .kafka_replay import Entry, Replay, check_no_loss, marker_offsets, refuse_corrupt, replay_plan
from .kafka_topics import delete_topics, ensure_topic, probe, topic_id
from .kafka_url import TOPIC, parse_kafka_url
from .keyindex import KeyIndex
from .native import decode_call_result, decode_state, encode_call_result, encode_state
from .scheme import InspectedState

_LOG = logging.getLogger(__name__)


#: librdkafka error codes a client recovers from by itself: it reconnects, refetches metadata and retries
#: (its documentation calls such consumer error events informational). KSTORE-10.
TRANSIENT_ERRORS = (
    "_TRANSPORT",
    "_ALL_BROKERS_DOWN",
    "_RESOLVE",
    "_TIMED_OUT",
    "_UNKNOWN_PARTITION",
    "_DESTROY_BROKER",
    "NETWORK_EXCEPTION",
    "REQUEST_TIMED_OUT",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_FOR_PARTITION",
)


class KafkaStore:
    """An :class:`~reference_runtime.stores.base.ActionStateStore` backed by a compacted Kafka topic."""

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
        if format == FLINK_AGENTS and type(self) is KafkaStore:
            raise StoreUrlError(
                f"KafkaStore(format={format!r}) for kafka://{bootstrap}/{topic}: the Flink Agents topic format is "
                "FlinkAgentsKafkaStore(bootstrap, topic) from reference_runtime.stores, or open_store(url)"
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
        self._entries: dict[str, Entry] = {}
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
        self._admin_module: Any = kafka_admin
        cause = probe(bootstrap, min(self.timeout, 5.0))
        if cause is not None:
            raise StoreError(f"cannot reach Kafka store {self.url}: {cause}")
        common: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "socket.timeout.ms": max(1000, int(self.timeout * 1000)),
            "logger": _LOG,
            "error_cb": self._on_error,
        }
        self._common = common
        self._admin: Any = kafka_admin.AdminClient(dict(common))
        self._npart, self.compacted = ensure_topic(
            self._admin,
            topic,
            partitions,
            url=self.url,
            timeout=self.timeout,
            read_only=read_only,
            last_error=lambda: self._last_error,
        )
        #: The topic's id as this store first saw it: a topic deleted and created again has a new one (FAIL-6).
        self._topic_id = topic_id(self._admin, topic, self.timeout, self.url)
        #: Why this store refuses every operation, once it found that data it acknowledged is gone (FAIL-6).
        self._lost: str | None = None
        self._producer: Any = None
        self._consumer: Any = None
        self._connect()

    def _connect(self, admin: bool = False) -> None:
        """Make the producer and the replay consumer, and with ``admin`` the admin client, anew: after a
        topic id change no client that cached the old topic may be used (docs/stores.md, "librdkafka and a
        recreated topic")."""
        if admin:
            self._admin = self._admin_module.AdminClient(dict(self._common))
        for old in (self._producer, self._consumer):
            if old is not None:
                with contextlib.suppress(Exception):  # the old client is dropped whatever state it is in
                    if old is self._producer:
                        old.purge()
                        old.flush(0)
                    else:
                        old.close()
        self._producer = self._ck.Producer(
            {
                **self._common,
                "acks": "all",
                # Every write waits for its acknowledgement before the next is produced (KSTORE-3), so nothing
                # is gained by lingering; at 0 a produce wakes the broker's thread at once (benchmark P10).
                "linger.ms": 0,
                "max.in.flight.requests.per.connection": 1,
                "message.timeout.ms": max(1000, int(self.timeout * 1000)),
            }
        )
        self._consumer = self._ck.Consumer(
            {
                **self._common,
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
        again = type(self)(self.bootstrap, self.topic, partitions=self._npart, timeout=self.timeout, format=self.format)
        again.rebuild_state([])
        return again

    # -- connection ------------------------------------------------------------------------------------

    def _on_error(self, err: Any) -> None:
        self._last_error = str(err)

    def _fail(self, what: str, exc: BaseException | str) -> StoreError:
        return StoreError(f"Kafka store {self.url}: {what}: {exc}")

    # -- writes ----------------------------------------------------------------------------------------

    def _partition(self, key: str) -> int:
        return partition_for(key, self._npart)

    def _send(self, records: Sequence[tuple[str, bytes | None, int, list[tuple[str, bytes]] | None]]) -> None:
        """Produce ``(kafka key, value, partition, headers)`` records and wait until the broker acknowledged
        every one (the flush of KSTORE-3); raise unless all landed.

        Every durable call runs through here once, between two broker round trips, when the CPU caches are
        cold; so the Python around the produce and the flush is kept to what the checks need (benchmark P10)."""
        if self._closed or self.read_only:
            raise StoreError(f"Kafka store {self.url} is {'closed' if self._closed else 'opened read-only'}")
        if self._lost is not None:
            raise self._lose(self._lost)
        failures: list[str] = []
        behind: list[str] = []
        outstanding = len(records)

        def delivered(err: Any, msg: Any) -> None:
            nonlocal outstanding
            outstanding -= 1
            if err is not None:
                failures.append(f"{msg.key()!r}: {err}")
                return
            p, offset = msg.partition(), msg.offset()
            known = self._ends.get(p, 0)
            if offset < known:
                # The log is shorter than what this store saw acknowledged: the topic lost records (FAIL-6).
                behind.append(f"partition {p} took a record at offset {offset}, below its known end {known}")
            else:
                self._ends[p] = offset + 1

        produce, topic, size = self._producer.produce, self.topic, 0
        try:
            for kkey, value, partition, headers in records:
                produce(
                    topic,
                    key=kkey.encode("utf-8"),
                    value=value,
                    partition=partition,
                    headers=headers,
                    on_delivery=delivered,
                )
                if value is not None:
                    size += len(value)
            # Wait for this write's own delivery reports. With linger.ms=0 its produce already woke the
            # broker's thread; flush() would also wake every broker thread of the client (two for one broker:
            # the bootstrap connection and the broker's own) on a machine with two cores, and cost more
            # (benchmark P10). The write still returns only once every record is acknowledged (KSTORE-3).
            poll, deadline = self._producer.poll, time.monotonic() + self.timeout
            while outstanding and (left := deadline - time.monotonic()) > 0:
                poll(left)
        except (BufferError, self._ck.KafkaException) as exc:
            raise self._fail("write failed", exc) from exc
        if outstanding:
            self._producer.purge(in_queue=True, in_flight=False)
            self._producer.flush(0)
            raise self._fail(
                "write not acknowledged",
                f"{outstanding} record(s) pending after {self.timeout}s (last client error: {self._last_error})",
            )
        if behind:
            raise self._lose(f"a write landed behind records it acknowledged before ({'; '.join(behind[:3])})")
        if failures:
            raise self._fail("write failed", "; ".join(failures))
        self.records_written += len(records)
        self.bytes_written += size

    def _note(self, state_key: str, kafka_key: str, partition: int) -> None:
        self._log_keys.setdefault(state_key, {})[kafka_key] = partition

    def put(self, ref: StateRef, state: ActionState) -> None:
        header = encode_state(state, ref=ref)
        calls = [encode_call_result(r, ref, i) for i, r in enumerate(state.call_results)]
        frame = encode_frame(ref.key, ref.seq, ref.action.name, header, calls)
        part = self._partition(ref.key)
        headers = [
            ("key", ref.key.encode("utf-8")),
            ("seq", str(ref.seq).encode()),
            ("action", ref.action.name.encode("utf-8")),
        ]
        with self._lock:
            self._send([(s_key(ref.state_key), frame, part, headers)])
            self._entries[ref.state_key] = Entry(ref.key, ref.seq, ref.action.name, header, calls)
            self._by_key.add(ref.key, ref.state_key)
            self._note(ref.state_key, s_key(ref.state_key), part)

    def _live(self, ref: StateRef, index: int) -> Entry:
        entry = self._entries.get(ref.state_key)
        if entry is None:
            raise StoreError(f"no action state to add call results to [{location(ref, index)}]")
        refuse_corrupt(entry, ref)
        return entry

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        sk, part = ref.state_key, partition_for(ref.key, self._npart)
        if len(results) == 1:
            # A durable call writes one result: its record made without the loop of the general case (P10).
            records = [(c_key(sk, index), encode_call_result(results[0], ref, index), part, None)]
        else:
            records = [
                (c_key(sk, index + i), encode_call_result(r, ref, index + i), part, None) for i, r in enumerate(results)
            ]
        with self._lock:
            calls = self._live(ref, index).calls
            if index < 0 or index > len(calls):
                raise StoreError(f"call index {index} leaves a gap after {len(calls)} records [{location(ref, index)}]")
            if not records:
                return
            self._send(records)
            if index == len(calls) and len(records) == 1:
                calls.append(records[0][1])
            else:
                calls[index : index + len(records)] = [body for _kkey, body, _part, _headers in records]
            log_keys = self._log_keys.setdefault(sk, {})
            for kkey, _body, _part, _headers in records:
                log_keys[kkey] = part

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        part = self._partition(ref.key)
        with self._lock:
            entry = self._entries.get(ref.state_key)
            if entry is None:
                return
            refuse_corrupt(entry, ref)
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
            self._refuse_if_lost()
            entry = self._entries.get(ref.state_key)
            if entry is None:
                self._delete(self._of_key(ref.key, lambda seq: seq > ref.seq))
                return None
            refuse_corrupt(entry, ref)
            header, calls = entry.header, list(entry.calls)
        state = decode_state(header, location(ref))
        state.call_results = [decode_call_result(body, location(ref, i)) for i, body in enumerate(calls)]
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
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    low, high = self._consumer.get_watermark_offsets(tp, timeout=self.timeout, cached=False)
                    break
                except Exception as exc:
                    err = exc.args[0] if isinstance(exc, self._ck.KafkaException) and exc.args else None
                    if not self._transient(err) or time.monotonic() > deadline:
                        raise self._fail(f"cannot read the end offset of partition {p}", exc) from exc
                    self._last_error = str(err)  # KSTORE-10: the client reconnects; ask again
                    time.sleep(0.05)
            out[p] = (int(low), max(int(high), self._ends.get(p, 0)))
        return out

    def _transient(self, err: Any) -> bool:
        """``err`` is a client error librdkafka recovers from by itself (a dropped or refused connection, a
        request timed out, partition metadata lost with the connection and not yet refetched): the client
        reconnects and retries, so it is noted, not fatal; only the caller's no-progress deadline is (KSTORE-10).
        A fatal error or any other code is a failure at once."""
        if err is None or not hasattr(err, "code") or err.fatal():
            return False
        return err.code() in {
            getattr(self._ck.KafkaError, n) for n in TRANSIENT_ERRORS if hasattr(self._ck.KafkaError, n)
        }

    def get_recovery_marker(self) -> RecoveryMarker:
        with self._lock:
            self._check_topic([])
            try:
                self._producer.flush(self.timeout)
            except self._ck.KafkaException as exc:
                raise self._fail("flush failed", exc) from exc
            marker: dict[str, Any] = {"offsets": {str(p): end for p, (_low, end) in self._watermarks().items()}}
            if self._topic_id is not None:
                marker["topic_id"] = self._topic_id
            return marker

    def _marker_offsets(self, markers: Sequence[RecoveryMarker]) -> dict[int, int]:
        """The minimum offset per partition over ``markers``, after checking that the topic is the one this
        store and the markers were taken on (both formats' ``rebuild_state`` starts here)."""
        with self._lock:
            self._check_topic(markers)
        return marker_offsets(markers, self._npart, self.url)

    # -- data loss (FAIL-6) ------------------------------------------------------------------------------

    def _lose(self, why: str) -> StoreDataLostError:
        """Latch the loss: from now on every operation of this store raises it."""
        if self._lost is None:
            self._lost = why
        return StoreDataLostError(
            f"Kafka store {self.url} lost records it acknowledged: {self._lost}. The topic was deleted, "
            "recreated or truncated (a broker restarted without its data); going on would run completed "
            "durable calls again, so this store refuses every operation. Open a new store to start over."
        )

    def _refuse_if_lost(self) -> None:
        if self._lost is not None:
            raise self._lose(self._lost)

    def _check_topic(self, markers: Sequence[RecoveryMarker]) -> None:
        """Refuse a topic that is not the one this store wrote to, or the markers were taken on: its id
        changed (deleted and created again). On a changed id the clients are made anew first: librdkafka's
        metadata cache crashes the process when a cached topic comes back under a new id (docs/stores.md)."""
        self._refuse_if_lost()
        now = topic_id(self._admin, self.topic, self.timeout, self.url)
        if now != self._topic_id:
            before, self._topic_id = self._topic_id, now
            self._connect(admin=True)
            if before and (self._entries or any(self._ends.values())):
                raise self._lose(
                    f"the topic was deleted (it had id {before})"
                    if now == ""
                    else f"the topic's id changed from {before} to {now}"
                )
        for marker in markers:
            taken = marker.get("topic_id") if isinstance(marker, dict) else None
            if taken is not None and now is not None and taken != now:
                raise self._lose(f"the recovery marker was taken on topic id {taken}, the topic now has id {now}")

    def _replay(self, apply: Callable[[Any], None], starts: dict[int, int] | None = None) -> dict[int, int]:
        """Feed every record of every partition, in offset order, to ``apply``; return the end offsets.
        With ``starts``, read only those partitions, each from the given offset (or its log start if later).

        A partition is done at its end-of-partition event, whose offset is the high watermark of the fetch
        (Tansu 0.6 answers ListOffsets with the last batch's base offset + 1, so that is only a lower bound).
        """
        marks = self._watermarks()
        begin, ends, pending = replay_plan(marks, starts)
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
                            elif p in pending and msg.offset() < self._ends.get(p, 0):
                                # The fetch's high watermark is below what this store saw acknowledged.
                                raise self._lose(
                                    f"partition {p} ends at offset {msg.offset()}, below offset "
                                    f"{self._ends[p]} this store saw written"
                                )
                            continue
                        if self._transient(err):
                            # An error event the consumer recovers from (KSTORE-10): it reconnects and fetches
                            # again; the deadline above still bounds a broker that stays away (KSTORE-7).
                            self._last_error = str(err)
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
        """Replay every partition from its log start (KSTORE-4: at or before the minimum marker offset; a
        delta after a marker can update a header written before it) and replace the cache with the result.
        Records with unknown keys raise :class:`CorruptRecordError` and keep the previous cache."""
        with self._lock:
            marked = self._marker_offsets(markers)
            replay = Replay()
            ends = self._replay(
                lambda msg: replay.apply(msg.key(), msg.value(), msg.partition(), msg.offset(), msg.headers())
            )
            check_no_loss(marked, ends, self.url)
            if replay.bad_keys:
                raise CorruptRecordError(
                    f"Kafka store {self.url}: records with unknown keys: {', '.join(replay.bad_keys[:5])}"
                )
            entries = replay.entries()
            self._entries = entries
            self._by_key = KeyIndex.of((e.key, sk) for sk, e in entries.items())
            self._log_keys = replay.log_keys
            self._ends = ends
            orphans = replay.orphans(entries)
            if orphans and not self.read_only:
                self._delete(orphans)

    def inspect_states(self) -> list[InspectedState]:
        """Every live state as ``(state key, key, seq, action, decode)`` for ``durable inspect``: ``decode()``
        returns the state and its record format, or raises ``CorruptRecordError`` naming the location."""
        with self._lock:
            entries = dict(self._entries)

        def decoder(e: Entry) -> Callable[[], tuple[ActionState, str]]:
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
