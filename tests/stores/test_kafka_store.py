"""The Kafka store against a real Kafka-protocol broker (Tansu, started per test session / xdist worker).

Skipped when Tansu or confluent-kafka is missing, unless ``DURABLE_REQUIRE_SERVERS=1``.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from conformance import StoreConformance, StoreFactory, factory_from_url
from conformance.store_suite import ACTION, OTHER, ref
from reference_runtime.errors import CorruptRecordError, StoreError, StoreUrlError
from reference_runtime.events import InputEvent
from reference_runtime.records import ActionState, CallResult, MemoryUpdate
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.kafka_flink_format import partition_for
from reference_runtime.stores.native import encode_call_result

from .tansu import start_tansu

Record = tuple[int, int, str, bytes | None]  # partition, offset, key, value


def _topic() -> str:
    return f"durable-{uuid.uuid4().hex[:16]}"


@pytest.fixture
def topic() -> str:
    return _topic()


def open_store(bootstrap: str, topic: str, **kwargs: Any) -> Any:
    from reference_runtime.stores.kafka import KafkaStore

    return KafkaStore(bootstrap, topic, **kwargs)


@pytest.fixture
def store(tansu: str, topic: str) -> Iterator[Any]:
    s = open_store(tansu, topic)
    yield s
    s.close()


def restart(store: Any, markers: list[Any] | None = None) -> Any:
    """A process restart: a brand-new store object over the same topic, rebuilt from the log."""
    store.close()
    again = open_store(store.bootstrap, store.topic)
    again.rebuild_state(markers or [])
    return again


def read_topic(bootstrap: str, topic: str) -> list[Record]:
    """Every record of the topic, per partition in offset order (a raw assign() consumer, no group).

    Reads each partition to its end-of-partition event: Tansu 0.6's ListOffsets reports the last batch's base
    offset + 1 as the end, so watermarks from it cannot bound the read."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"raw-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    try:
        md = consumer.list_topics(topic=topic, timeout=10)
        partitions = sorted(md.topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        pending = set(partitions)
        out: list[Record] = []
        deadline = time.monotonic() + 10
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.05)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, err
                pending.discard(msg.partition())
                continue
            key = msg.key()
            assert key is not None
            out.append((msg.partition(), msg.offset(), key.decode(), msg.value()))
        assert not pending, f"could not read partitions {pending} of {topic}"
        return sorted(out, key=lambda rec: (rec[0], rec[1]))
    finally:
        consumer.close()


def produce_raw(
    bootstrap: str,
    topic: str,
    records: list[tuple[str, bytes | None, int]],
    headers: list[tuple[str, bytes]] | None = None,
) -> None:
    """Plant records on the topic behind the store's back."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value, partition in records:
        producer.produce(topic, key=key.encode(), value=value, partition=partition, headers=headers)
    assert producer.flush(10) == 0


def end_offsets_total(store: Any) -> int:
    return sum(store.get_recovery_marker()["offsets"].values())


def part(key: str, partitions: int = 4) -> int:
    return partition_for(key, partitions)


# --- store protocol over Kafka ---------------------------------------------------------------------------


def test_put_get_round_trip_on_a_compacted_topic(tansu: str, store: Any) -> None:
    """STORE-1, KSTORE-3: put/get round-trips; the topic is compacted and the record is keyed by the state key
    on the business key's partition."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    r = ref("k", 0)
    state = ActionState(
        task_event=InputEvent({"q": [1, "x"]}),
        short_term_memory_updates=[MemoryUpdate("a.b", {"k": [1.5, None]}), MemoryUpdate("o", None, True)],
        output_events=[InputEvent("out")],
        call_results=[CallResult.succeeded("f", "d1", b"\x00r"), CallResult.pending("h", "d3")],
    )
    store.put(r, state)
    got = store.get(r)
    assert got is not None
    assert got.task_event == state.task_event
    assert got.short_term_memory_updates == state.short_term_memory_updates
    assert [e.attributes for e in got.output_events] == [{"input": "out"}]
    assert got.call_results == state.call_results
    assert store.get(ref("k", 0, OTHER)) is None
    records = read_topic(tansu, store.topic)
    assert [(p, k) for p, _o, k, _v in records] == [(part("k"), f"S|{r.state_key}")]
    admin = AdminClient({"bootstrap.servers": tansu})
    configs = admin.describe_configs([ConfigResource("topic", store.topic)])
    (future,) = configs.values()
    assert future.result(10)["cleanup.policy"].value == "compact"
    assert store.compacted


def test_call_results_are_written_as_one_record_per_call(tansu: str, store: Any) -> None:
    """STORE-5, KSTORE-3: K durable calls after a put cost K+1 records, each one call result (a delta, never a
    whole-state rewrite); an in-place finalize is one more record; every record is flushed before returning."""
    r = ref("agent-7", 3)
    before = end_offsets_total(store)
    store.put(r, ActionState(task_event=r.event))
    k = 12
    for i in range(k):
        store.put_call_results(r, i, [CallResult.pending("tool", f"d{i}")])
        # Flushed per write: the broker's end offset has already moved.
        assert end_offsets_total(store) == before + 1 + i + 1
    assert end_offsets_total(store) - before == k + 1
    assert store.records_written == k + 1
    store.put_call_results(r, 5, [CallResult.succeeded("tool", "d5", b"done")])
    assert end_offsets_total(store) - before == k + 2
    records = read_topic(tansu, store.topic)
    assert {p for p, *_ in records} == {part("agent-7")}
    keys = [key for _p, _o, key, _v in records]
    assert keys[0] == f"S|{r.state_key}"
    assert keys[1:] == [f"C|{r.state_key}|{i:08d}" for i in range(k)] + [f"C|{r.state_key}|00000005"]
    # Each delta holds exactly one encoded call result.
    assert records[-1][3] == encode_call_result(CallResult.succeeded("tool", "d5", b"done"))
    got = store.get(r)
    assert got is not None and len(got.call_results) == k
    assert got.call_results[5].result_payload == b"done"
    assert [c.args_digest for c in got.call_results] == [f"d{i}" for i in range(k)]


def test_put_call_results_refuses_missing_state_and_gaps(store: Any) -> None:
    """STORE-5: a delta needs an existing state and may not leave a gap; the error names the location."""
    r = ref("k", 4)
    with pytest.raises(StoreError, match=r"no action state.*key='k', seq=4, action='work', call_index=0"):
        store.put_call_results(r, 0, [CallResult.pending("f", "d")])
    store.put(r, ActionState(call_results=[CallResult.pending("f", "d")]))
    with pytest.raises(StoreError, match=r"call index 2 leaves a gap after 1 records"):
        store.put_call_results(r, 2, [CallResult.pending("g", "d")])
    store.put_call_results(r, 1, [CallResult.pending("g", "d"), CallResult.pending("h", "d")])
    got = store.get(r)
    assert got is not None and [c.function_id for c in got.call_results] == ["f", "g", "h"]


def test_restart_sees_states_and_call_results(store: Any) -> None:
    """STORE-6, KSTORE-4: a brand-new store on the same topic sees every state and call result after
    rebuild_state, with no markers (a cold restart) and with a checkpoint's marker."""
    marker = store.get_recovery_marker()
    assert set(marker) == {"offsets", "topic_id"} and set(marker["offsets"]) == {"0", "1", "2", "3"}
    store.put(ref("a", 0), ActionState(call_results=[CallResult.succeeded("f", "1", b"x")]))
    store.put_call_results(ref("a", 0), 1, [CallResult.failed("g", "2", b"boom")])
    store.put(ref("b", 1, OTHER), ActionState(task_event=InputEvent("hi")))
    store.put_call_results(ref("b", 1, OTHER), 0, [CallResult.pending("h", "3")])
    store.put_call_results(ref("b", 1, OTHER), 0, [CallResult.succeeded("h", "3", b"ok")])
    later = store.get_recovery_marker()
    assert sum(later["offsets"].values()) - sum(marker["offsets"].values()) == 5
    for markers in ([], [marker], [marker, later]):
        store = restart(store, markers)
        a, b = store.get(ref("a", 0)), store.get(ref("b", 1, OTHER))
        assert a is not None and [(c.function_id, c.effective_status.value) for c in a.call_results] == [
            ("f", "SUCCEEDED"),
            ("g", "FAILED"),
        ]
        assert b is not None and b.task_event is not None and b.task_event.attributes == {"input": "hi"}
        assert [(c.function_id, c.result_payload) for c in b.call_results] == [("h", b"ok")]
    store.close()


def test_truncation_survives_restart(store: Any) -> None:
    """STORE-5, STORE-6: a truncation is one record and stays applied after a restart, also when calls are
    appended after it; a whole-state put resets the slots."""
    r = ref("k", 0)
    store.put(r, ActionState(call_results=[CallResult.succeeded(f, "d", b"1") for f in "abcd"]))
    store.put_call_results(r, 4, [CallResult.pending("e", "d")])
    before = end_offsets_total(store)
    store.truncate_call_results(r, 2)
    assert end_offsets_total(store) == before + 1
    store = restart(store)
    got = store.get(r)
    assert got is not None and [c.function_id for c in got.call_results] == ["a", "b"]
    store.put_call_results(r, 2, [CallResult.pending("x", "d")])
    store.truncate_call_results(r, 9)  # past the end: nothing to drop
    store = restart(store)
    got = store.get(r)
    assert got is not None and [c.function_id for c in got.call_results] == ["a", "b", "x"]
    store.put(r, ActionState(call_results=[CallResult.pending("z", "d")]))
    store = restart(store)
    got = store.get(r)
    assert got is not None and [c.function_id for c in got.call_results] == ["z"]
    store.close()


def test_prune_writes_tombstones_that_survive_restart(tansu: str, store: Any) -> None:
    """KSTORE-5, STORE-4: prune writes a tombstone for every record key of each pruned state (header, call
    results, truncation) and nothing for the others; after a restart the pruned states stay gone."""
    for seq in range(3):
        store.put(ref("k", seq), ActionState())
        store.put_call_results(ref("k", seq), 0, [CallResult.pending("f", "d"), CallResult.pending("g", "d")])
    store.truncate_call_results(ref("k", 0), 1)
    store.put(ref("j", 0), ActionState())
    store.prune_state("k", 1)
    records = read_topic(tansu, store.topic)
    tombstones = [key for _p, _o, key, value in records if value is None]
    assert sorted(tombstones) == sorted(
        [f"S|{ref('k', s).state_key}" for s in (0, 1)]
        + [f"C|{ref('k', s).state_key}|{i:08d}" for s in (0, 1) for i in (0, 1)]
        + [f"T|{ref('k', 0).state_key}"]
    )
    # The header's tombstone goes first: a crash after it leaves the state deleted, not torn.
    first = min(o for _p, o, key, value in records if value is None and key.startswith("C|"))
    assert all(o < first for _p, o, key, value in records if value is None and key.startswith("S|k|0"))
    store = restart(store)
    assert store.get(ref("k", 2)) is not None
    assert store.get(ref("j", 0)) is not None
    assert store.get(ref("k", 1)) is None
    assert store.get(ref("k", 0)) is None
    store.close()


def test_miss_hides_larger_sequence_numbers_durably(store: Any) -> None:
    """STORE-3, KSTORE-5: a get miss deletes every state of that key with a larger seq (by tombstones, so
    they stay hidden after a restart); other keys and smaller seqs are untouched."""
    for seq in (0, 2, 3):
        store.put(ref("k", seq), ActionState(call_results=[CallResult.pending("f", "d")]))
    store.put_call_results(ref("k", 3), 1, [CallResult.pending("g", "d")])
    store.put(ref("j", 9), ActionState())
    before = end_offsets_total(store)
    assert store.get(ref("k", 1)) is None
    assert end_offsets_total(store) == before + 3  # tombstones: S of seq 2 and 3, C 1 of seq 3
    store = restart(store)
    assert store.get(ref("k", 0)) is not None
    assert store.get(ref("j", 9)) is not None
    store.put(ref("k", 2), ActionState())  # a fresh execution may write seq 2 again
    assert store.get(ref("k", 3)) is None
    store = restart(store)
    got = store.get(ref("k", 2))
    assert got is not None and got.call_results == []
    store.close()


def test_compaction_keeps_the_replayed_state(tansu: str, store: Any) -> None:
    """KSTORE-3, STORE-6: replaying the log as compaction leaves it (latest record per key, with or without
    tombstones) yields the same states as replaying the full log."""
    r, s = ref("k", 0), ref("k", 1, OTHER)
    store.put(r, ActionState(call_results=[CallResult.pending(f, "d") for f in "ab"]))
    store.put_call_results(r, 2, [CallResult.pending("c", "d")])
    store.truncate_call_results(r, 1)
    store.truncate_call_results(r, 3)
    store.put_call_results(r, 1, [CallResult.succeeded("B", "d", b"1")])
    store.put(s, ActionState())
    store.put_call_results(s, 0, [CallResult.pending(f, "d") for f in "xyz"])
    store.put(s, ActionState(call_results=[CallResult.pending("only", "d")]))
    store.put(ref("gone", 0), ActionState(call_results=[CallResult.pending("f", "d")]))
    store.prune_state("gone", 0)
    expected = {x.state_key: store.get(x) for x in (r, s)}
    records = read_topic(tansu, store.topic)
    for keep_tombstones in (True, False):
        latest: dict[str, Record] = {}
        for rec in records:
            latest[rec[2]] = rec
        compacted = sorted(latest.values(), key=lambda rec: (rec[0], rec[1]))
        if not keep_tombstones:
            compacted = [rec for rec in compacted if rec[3] is not None]
        other = _topic()
        clone = open_store(tansu, other)
        produce_raw(tansu, other, [(key, value, p) for p, _o, key, value in compacted])
        clone.rebuild_state([])
        for x in (r, s):
            assert clone.get(x) == expected[x.state_key]
        assert clone.get(ref("gone", 0)) is None
        clone.close()
    store.close()


def test_rebuild_finishes_an_interrupted_prune(tansu: str, store: Any) -> None:
    """KSTORE-5, STORE-7: if a process dies after a prune's header tombstone, the state is already gone and the
    next rebuild tombstones the call-result records it left behind."""
    r = ref("k", 0)
    store.put(r, ActionState())
    store.put_call_results(r, 0, [CallResult.pending("f", "d")])
    produce_raw(tansu, store.topic, [(f"S|{r.state_key}", None, part("k"))])  # the crash point
    store = restart(store)
    assert store.get(r) is None
    tail = read_topic(tansu, store.topic)[-1]
    assert tail[2:] == (f"C|{r.state_key}|00000000", None)
    store.close()


def test_marker_past_the_end_of_the_topic_is_refused(store: Any) -> None:
    """KSTORE-4, STORE-6: a marker past the log's end (the topic was recreated) is an error, not a silent loss."""
    with pytest.raises(StoreError, match=r"past the end of the log.*lost records"):
        store.rebuild_state([{"offsets": {"0": 10, "1": 0}}])
    with pytest.raises(StoreError, match="unreadable recovery marker"):
        store.rebuild_state([{"writes": 3}])


# --- URLs and failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "kafka://",
        "kafka://host",
        "kafka://host:9092",
        "kafka://host:9092/",
        "kafka://host:notaport/t",
        "kafka://:9092/t",
        "kafka://host:9092/a/b",
        "kafka://host:9092/bad topic",
        "redis://host:9092/t",
        "kafka://host:9092/t?partitions=0",
        "kafka://host:9092/t?colour=red",
        "kafka://host:99999/t",
    ],
)
def test_malformed_url_raises_store_url_error(url: str) -> None:
    """KSTORE-6: a malformed kafka:// URL raises StoreUrlError naming the URL, before any connection."""
    from reference_runtime.stores.kafka import KafkaStore

    with pytest.raises(StoreUrlError) as info:
        KafkaStore.from_url(url)
    assert url in str(info.value)


def test_url_opens_the_topic(tansu: str, topic: str) -> None:
    """KSTORE-6: kafka://HOST:PORT/TOPIC opens a store on that topic with the URL's options."""
    from reference_runtime.stores.kafka import KafkaStore

    store = KafkaStore.from_url(f"kafka://{tansu}/{topic}?partitions=2&timeout=5")
    assert store.url == f"kafka://{tansu}/{topic}"
    assert set(store.get_recovery_marker()["offsets"]) == {"0", "1"}
    assert isinstance(store, ActionStateStore)
    store.close()


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_broker_fails_fast_naming_url_and_cause() -> None:
    """KSTORE-7: nothing listening: StoreError naming the URL and the cause, well within the bound."""
    pytest.importorskip("confluent_kafka")
    from reference_runtime.stores.kafka import KafkaStore

    url = f"kafka://127.0.0.1:{_unused_port()}/t"
    start = time.monotonic()
    with pytest.raises(StoreError) as info:
        KafkaStore.from_url(url)
    assert time.monotonic() - start < 12
    assert url in str(info.value) and "refused" in str(info.value).lower()


def test_silent_broker_fails_within_the_timeout() -> None:
    """KSTORE-7: a port that accepts connections but never speaks Kafka fails with StoreError naming the URL
    within the timeout, never hanging."""
    pytest.importorskip("confluent_kafka")
    from reference_runtime.stores.kafka import KafkaStore

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        url = f"kafka://127.0.0.1:{server.getsockname()[1]}/t"
        start = time.monotonic()
        with pytest.raises(StoreError) as info:
            KafkaStore.from_url(url, timeout=3.0)
        elapsed = time.monotonic() - start
    assert elapsed < 12
    assert url in str(info.value)


def test_broker_down_mid_run_fails_writes_and_rebuilds_within_the_timeout() -> None:
    """KSTORE-7, KSTORE-3: when the broker goes away after the store opened, a write raises StoreError naming
    the URL within the timeout (never hangs), and so does a rebuild."""
    started = start_tansu()
    if started is None:
        pytest.skip("Tansu broker unavailable")
    bootstrap, stop = started
    store = None
    try:
        store = open_store(bootstrap, _topic(), timeout=2.0)
        store.put(ref("k", 0), ActionState())
    finally:
        stop()
    start = time.monotonic()
    with pytest.raises(StoreError) as info:
        store.put(ref("k", 1), ActionState())
    assert time.monotonic() - start < 12
    assert store.url in str(info.value)
    assert store.get(ref("k", 0)) is not None and store.get(ref("k", 1)) is None  # the cache was not changed
    start = time.monotonic()
    with pytest.raises(StoreError, match=store.url):
        store.rebuild_state([])
    assert time.monotonic() - start < 12


# --- corruption -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [b"\xff\xfe not a frame", b'{"v":1}\nxx', b"", None])
def test_corrupt_state_record_names_key_seq_action(tansu: str, store: Any, value: bytes | None) -> None:
    """STORE-9: a corrupt header record planted on the topic makes get raise CorruptRecordError naming key, seq
    and action after rebuild; the read deletes nothing and other states stay readable."""
    good, bad = ref("good", 0), ref("bad", 7, ACTION)
    store.put(good, ActionState())
    store.put(bad, ActionState())
    if value is None:  # a valid frame whose native header is garbage
        from reference_runtime.stores.kafka_native_format import encode_frame

        value = encode_frame("bad", 7, "work", b"{not json", [])
    produce_raw(
        tansu,
        store.topic,
        [(f"S|{bad.state_key}", value, part("bad"))],
        headers=[("key", b"bad"), ("seq", b"7"), ("action", b"work")],
    )
    store = restart(store)
    for _ in range(2):
        with pytest.raises(CorruptRecordError) as info:
            store.get(bad)
        assert (info.value.key, info.value.seq, info.value.action) == ("bad", 7, "work")
    assert store.get(good) is not None
    store.prune_state("bad", 7)  # an unreadable state can still be pruned by its business key
    store = restart(store)
    assert store.get(bad) is None
    store.close()


def test_corrupt_call_record_names_the_call_index(tansu: str, store: Any) -> None:
    """STORE-9: a corrupt call-result record raises CorruptRecordError with key, seq, action and call index."""
    r = ref("k", 2)
    store.put(r, ActionState(call_results=[CallResult.pending("f", "d")]))
    store.put_call_results(r, 1, [CallResult.pending("g", "d")])
    produce_raw(tansu, store.topic, [(f"C|{r.state_key}|00000001", b'{"f": 1}', part("k"))])
    store = restart(store)
    with pytest.raises(CorruptRecordError) as info:
        store.get(r)
    assert info.value.location.call_index == 1
    assert (info.value.key, info.value.seq, info.value.action) == ("k", 2, "work")
    with pytest.raises(CorruptRecordError):
        store.get(r)
    # A gap in the call slots is corruption too.
    produce_raw(
        tansu, store.topic, [(f"C|{r.state_key}|00000005", encode_call_result(CallResult.pending("x", "d")), part("k"))]
    )
    store = restart(store)
    with pytest.raises(CorruptRecordError, match="gap"):
        store.get(r)
    store.close()


def test_record_with_an_unknown_key_fails_the_rebuild(tansu: str, store: Any) -> None:
    """STORE-9: a record that belongs to no state (unknown key layout) makes rebuild_state raise
    CorruptRecordError naming it, and the previous cache stays in place."""
    store.put(ref("k", 0), ActionState())
    produce_raw(tansu, store.topic, [("X|what", b"?", 1)])
    with pytest.raises(CorruptRecordError, match=r"'X\|what'@1:\d+"):
        store.rebuild_state([])
    assert store.get(ref("k", 0)) is not None


# --- the conformance kit, dogfooded -----------------------------------------------------------------------


class TestKafkaConformance(StoreConformance):
    """CONF-1: the Kafka store certifies through the same kit a backend author uses (core, restart,
    concurrent writers)."""

    @pytest.fixture(scope="session")
    @classmethod
    def durable_store_factory(cls, tansu: str) -> StoreFactory:
        def new() -> ActionStateStore:
            store: ActionStateStore = open_store(tansu, _topic())
            return store

        def reopen(store: ActionStateStore) -> ActionStateStore:
            # A process restart: a new object on the same topic. The kit calls rebuild_state itself.
            store.close()
            again: ActionStateStore = open_store(tansu, store.topic)  # type: ignore[attr-defined]
            return again

        return StoreFactory(
            new, reopen=reopen, capabilities={"core", "restart", "concurrent_writers"}, name="kafka:tansu"
        )


class TestKafkaUrlConformance(StoreConformance):
    """CONF-1, KSTORE-6: ``durable certify --store kafka://…`` goes through ``factory_from_url``; each store gets
    its own topic and a restart is ``KafkaStore.reopen()``."""

    @pytest.fixture(scope="session")
    @classmethod
    def durable_store_factory(cls, tansu: str) -> StoreFactory:
        return factory_from_url(f"kafka://{tansu}/{_topic()}")
