"""The Kafka store in Flink Agents' topic format (``?format=flink-agents``) on a real Kafka-protocol broker.

Skipped when Tansu or confluent-kafka is missing, unless ``DURABLE_REQUIRE_SERVERS=1``.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from conformance import StoreConformance, StoreFactory, factory_from_url
from conformance.store_suite import ref
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action
from reference_runtime.errors import CorruptRecordError, StoreError, StoreUrlError
from reference_runtime.events import BASE_EVENT_CLASS
from reference_runtime.records import ActionRef, ActionState, CallResult, CallStatus, MemoryUpdate, StateRef
from reference_runtime.runner import Runner
from reference_runtime.serde.jackson import loads
from reference_runtime.state_keys import event_uuid, java_string_hash, name_uuid
from reference_runtime.stores import open_store
from reference_runtime.stores.kafka import KafkaStore
from reference_runtime.stores.kafka_flink import FlinkAgentsKafkaStore
from reference_runtime.stores.kafka_flink_format import (
    decode_value,
    murmur_hash,
    parse_state_key,
    partition_for,
)
from tests.serde.kryo_vectors import typed_from_vector
from tests.vectors import captured_records, cases

from .test_kafka_store import produce_raw, read_topic

FA = "flink-agents"


def _topic() -> str:
    return f"durable-fa-{uuid.uuid4().hex[:16]}"


def open_fa(bootstrap: str, topic: str, **kwargs: Any) -> FlinkAgentsKafkaStore:
    store = FlinkAgentsKafkaStore(bootstrap, topic, **kwargs)
    assert isinstance(store, KafkaStore) and store.format == FA
    return store


@pytest.fixture
def store(tansu: str) -> Iterator[FlinkAgentsKafkaStore]:
    s = open_fa(tansu, _topic())
    yield s
    s.close()


def restart(store: FlinkAgentsKafkaStore, markers: list[Any]) -> FlinkAgentsKafkaStore:
    """A process restart: a new object on the same topic, rebuilt from ``markers``."""
    store.close()
    again = open_fa(store.bootstrap, store.topic)
    again.rebuild_state(markers)
    return again


def top_level_fields(value: bytes) -> dict[str, bytes]:
    """The raw bytes of each top-level field of a compact JSON object, in order."""
    text = value.decode("utf-8")
    decoder = json.JSONDecoder()
    out: dict[str, bytes] = {}
    pos = 1
    while text[pos] != "}":
        name, pos = decoder.raw_decode(text, pos)
        _, end = decoder.raw_decode(text, pos + 1)
        out[name] = text[pos + 1 : end].encode("utf-8")
        pos = end + (text[end] == ",")
    return out


# --- pure format ------------------------------------------------------------------------------------------


# String.hashCode and MathUtils.murmurHash(hashCode) % 4 and % 3, computed with a JVM (OpenJDK 17) running
# Flink's MathUtils.murmurHash on the same strings.
JAVA_PARTITIONS = [
    ("a", 97, 1455541201, 1, 1),
    ("b", 98, 516420758, 2, 2),
    ("user-1", -836031825, 1662039673, 1, 1),
    ("123", 48690, 1926988058, 2, 2),
    ("+I[[-128, 5, -107, 5, 0, 0, 0, 0, 0, 0, 0, -116, 1, 97, -108, 46]]", 602857365, 608101140, 0, 0),
    ("été", 227742, 157703301, 1, 0),
    ("😀", 1772899, 1934073014, 2, 2),
    ("", 0, 593689054, 2, 1),
]


@pytest.mark.parametrize(("key", "hash_code", "murmur", "p4", "p3"), JAVA_PARTITIONS)
def test_partition_is_murmur_of_the_java_string_hash(key: str, hash_code: int, murmur: int, p4: int, p3: int) -> None:
    """WIRE-3: the partition is Flink's murmurHash of Java's String.hashCode of the business key."""
    assert java_string_hash(key) == hash_code
    assert murmur_hash(hash_code) == murmur
    assert (partition_for(key, 4), partition_for(key, 3)) == (p4, p3)


def test_partition_uses_the_state_key_part_before_the_first_underscore() -> None:
    """WIRE-3: Java splits the state key at '_', so `user_1` and `user_2` share the partition of `user`."""
    assert partition_for("user_1", 7) == partition_for("user_2", 7) == partition_for("user", 7)


def test_state_keys_parse_from_the_right() -> None:
    """WIRE-5: a record without headers is located from its key, even when the business key has '_'."""
    e, a = "557b0790-f63d-3688-a99b-bc78be37394d", "2ce769d1-2752-3b38-a016-1a3e27b21029"
    assert parse_state_key(f"user_1_3_{e}_{a}") == ("user_1", 3)
    assert parse_state_key(f"_0_{e}_{a}") == ("", 0)
    assert parse_state_key("k|0|work") is None
    assert parse_state_key(f"k_x_{e}_{a}") is None


# --- the store, on the broker -----------------------------------------------------------------------------


def test_url_and_constructor_select_the_format(tansu: str) -> None:
    """WIRE-1, KSTORE-6: `?format=flink-agents` picks the format through the registry, and the class picks it in
    code; native stays the default. KafkaStore itself refuses the Flink Agents format, naming the class to use:
    it does not know its subclass, so the two modules import no cycle (API-3)."""
    topic = _topic()
    by_url = open_store(f"kafka://{tansu}/{topic}?format=flink-agents")
    assert isinstance(by_url, FlinkAgentsKafkaStore)
    assert FlinkAgentsKafkaStore.from_url(f"kafka://{tansu}/{topic}").format == FA
    native = KafkaStore(tansu, _topic())
    try:
        assert isinstance(by_url, FlinkAgentsKafkaStore) and by_url.url.endswith("?format=flink-agents")
        assert type(native) is KafkaStore and native.format == "native"
        again = by_url.reopen()
        assert isinstance(again, FlinkAgentsKafkaStore)
        again.close()
    finally:
        by_url.close()
        native.close()
    with pytest.raises(StoreUrlError, match="format"):
        KafkaStore.from_url(f"kafka://{tansu}/{topic}?format=java")
    for wrong in (
        lambda: KafkaStore.from_url(f"kafka://{tansu}/{topic}?format=flink-agents"),
        lambda: KafkaStore(tansu, topic, format=FA),
    ):
        with pytest.raises(StoreUrlError, match="FlinkAgentsKafkaStore"):
            wrong()


def test_every_serialize_vector_is_written_byte_exact_by_the_store(tansu: str) -> None:
    """WIRE-2, SER-1..SER-3: `put` of each `actionstate_serialize` state produces Java's bytes on the topic,
    under the state key, in the business key's partition, with location headers."""
    vectors = cases("actionstate_serialize.jsonl")
    store = open_fa(tansu, _topic(), partitions=3)
    try:
        expected: dict[str, bytes] = {}
        for n, case in enumerate(vectors):
            r = StateRef(
                f"k{n}",
                0,
                ActionRef("act", "m", "A.act", ("_input_event",)),
                InputEvent(n),
                f"k{n}_0_{uuid.UUID(int=n)}_{uuid.UUID(int=0)}",
            )
            store.put(r, _runtime_state(case["input"], case["construction"]))
            expected[r.state_key] = case.get("jdk25_json", case["json"]).encode("utf-8")
        records = read_topic(tansu, store.topic)
    finally:
        store.close()
    assert {key: value for _p, _o, key, value in records} == expected
    for p, _o, key, _v in records:
        assert p == partition_for(key.split("_")[0], 3)


def _event(form: dict[str, Any]) -> Event:
    raw = json.loads(form["fromJson"])
    return Event(
        raw["type"],
        raw.get("attributes") or {},
        id=uuid.UUID(raw["id"]),
        java_class=form.get("javaClass", BASE_EVENT_CLASS),
        upstream_event_id=raw.get("upstreamEventId"),
        upstream_action_name=raw.get("upstreamActionName"),
    )


def _runtime_state(i: dict[str, Any], construction: str) -> ActionState:
    """A vector's input as the runtime state a runner would put (Java value types pinned as JavaValue)."""

    def update(u: dict[str, Any]) -> MemoryUpdate:
        return MemoryUpdate(u["path"], typed_from_vector(u.get("java_iteration_value", u["value"])))

    def b(c: dict[str, Any], k: str) -> bytes | None:
        return None if c.get(k) is None else base64.b64decode(c[k])

    state = ActionState(
        task_event=None if i["taskEvent"] is None else _event(i["taskEvent"]),
        sensory_memory_updates=[update(u) for u in i["sensoryMemoryUpdates"]],
        short_term_memory_updates=[update(u) for u in i["shortTermMemoryUpdates"]],
        output_events=[_event(e) for e in i["outputEvents"]],
        call_results=[
            CallResult(
                c["functionId"],
                c["argsDigest"],
                b(c, "resultPayload_b64"),
                b(c, "exceptionPayload_b64"),
                CallStatus(c["status"]),
            )
            for c in i["callResults"]
        ],
        completed=i["completed"],
    )
    if i["completed"] and construction == "incremental":
        state.call_results = []
    return state


def test_round_trip_deltas_and_restart(tansu: str, store: FlinkAgentsKafkaStore) -> None:
    """WIRE-2, STORE-5, STORE-6: every call-result write rewrites the whole state as one record; a restart
    from a marker restores what was written after it."""
    r = ref("k", 0)
    marker = store.get_recovery_marker()
    store.put(r, ActionState(task_event=r.event))
    store.put_call_results(r, 0, [CallResult.pending("f", "d")])
    store.put_call_results(r, 0, [CallResult.succeeded("f", "d", b"\x80\x05K\x01.")])
    store.put_call_results(r, 1, [CallResult.failed("g", "e", b"boom")])
    store.truncate_call_results(r, 5)  # nothing to drop: no record
    records = read_topic(tansu, store.topic)
    assert [key for _p, _o, key, _v in records] == [r.state_key] * 4
    last = loads(records[-1][3])
    assert [c["status"] for c in last["callResults"]] == ["SUCCEEDED", "FAILED"]
    assert base64.b64decode(last["callResults"][0]["resultPayload"]) == b"\x80\x05K\x01."
    again = restart(store, [marker])
    try:
        got = again.get(r)
        assert got is not None and [c.effective_status for c in got.call_results] == [
            CallStatus.SUCCEEDED,
            CallStatus.FAILED,
        ]
    finally:
        again.close()


def test_call_result_writes_are_the_whole_model_reserialised(tansu: str, store: FlinkAgentsKafkaStore) -> None:
    """WIRE-2: the record of each call-result write is the previous record's Java model, edited and written
    whole (how the store wrote it before it kept the encoded parts), before and after a restart."""
    from reference_runtime.stores.kafka_flink_format import java_model

    from .test_kafka_flink_text import EDITS, slow_set, slow_truncate

    r = ref("k", 0)
    store.put(r, ActionState(task_event=r.event, short_term_memory_updates=[MemoryUpdate("a.b", 7)]))
    for n, (kind, index, results) in enumerate(EDITS):
        if n == len(EDITS) // 2:
            store = restart(store, [])  # the restarted store parses the record instead of keeping parts
        if kind == "set":
            store.put_call_results(r, index, results)
        else:
            store.truncate_call_results(r, index)
    store.close()
    values = [value for _p, _o, _k, value in read_topic(tansu, store.topic)]
    expected = values[:1]
    for kind, index, results in EDITS:
        java = java_model(expected[-1])
        value = slow_set(java, index, results) if kind == "set" else slow_truncate(java, index)
        if value is not None:
            expected.append(value)
    assert values == expected and len(values) == 10


def test_rebuild_replays_from_the_marker_offsets_only(tansu: str, store: FlinkAgentsKafkaStore) -> None:
    """KSTORE-4, WIRE-6: as Flink Agents, a rebuild reads each partition from the minimum marker offset, so
    a state written before the markers is not restored; without markers the whole log is (Deviation)."""
    early, late = ref("a", 0), ref("a", 1)
    store.put(early, ActionState())
    marker = store.get_recovery_marker()
    store.put(late, ActionState())
    store.rebuild_state([marker])  # the same object: what it holds stays, the replay adds to it
    assert store.stored().keys() == {early.state_key, late.state_key}
    with pytest.raises(StoreError, match="lost records"):
        store.rebuild_state([{"offsets": {str(p): 10**6 for p in range(4)}}])
    from_marker = restart(store, [marker])
    try:
        assert from_marker.get(late) is not None
        assert from_marker.stored().keys() == {late.state_key}
    finally:
        from_marker.close()
    whole = restart(from_marker, [])
    try:
        assert whole.stored().keys() == {early.state_key, late.state_key}
    finally:
        whole.close()


def test_prune_and_miss_write_tombstones(tansu: str, store: FlinkAgentsKafkaStore) -> None:
    """KSTORE-5, STORE-3: prune and the miss rule delete states durably with tombstones."""
    for seq in range(3):
        store.put(ref("k", seq), ActionState())
    store.prune_state("k", 0)
    assert store.get(ref("k", 1)) is not None
    store.put(ref("k", 5), ActionState())
    assert store.get(ref("k", 3)) is None  # hides seq 5
    tombstones = [key for _p, _o, key, value in read_topic(tansu, store.topic) if value is None]
    assert sorted(tombstones) == sorted([ref("k", 0).state_key, ref("k", 5).state_key])
    again = restart(store, [])
    try:
        assert again.stored().keys() == {ref("k", 1).state_key, ref("k", 2).state_key}
    finally:
        again.close()


def test_corrupt_record_names_its_state_and_deletes_nothing(tansu: str, store: FlinkAgentsKafkaStore) -> None:
    """STORE-9, WIRE-4: an unreadable value fails only its own state's read, naming key, seq and action."""
    good, bad = ref("g", 0), ref("b", 0)
    store.put(good, ActionState())
    produce_raw(
        tansu,
        store.topic,
        [(bad.state_key, b'{"taskEvent":7}', partition_for("b", 4))],
        headers=[("key", b"b"), ("seq", b"0"), ("action", b"work")],
    )
    again = restart(store, [])
    try:
        with pytest.raises(CorruptRecordError, match=r"key='b'.*seq=0.*action='work'") as info:
            again.get(bad)
        assert "$.taskEvent" in str(info.value)
        assert again.get(good) is not None
        assert bad.state_key in again.stored()
    finally:
        again.close()


STATUSLESS = (
    b'{"taskEvent":null,"sensoryMemoryUpdates":[],"shortTermMemoryUpdates":[],"outputEvents":[],'
    b'"callResults":[{"functionId":"f","argsDigest":"d","resultPayload":"AQ==","exceptionPayload":null},'
    b'{"functionId":"g","argsDigest":"e","resultPayload":null,"exceptionPayload":"Ag==","status":null}],'
    b'"completed":false}'
)


def test_status_less_records_follow_the_backward_compatibility_rule(tansu: str, store: FlinkAgentsKafkaStore) -> None:
    """WIRE-4, SER-3: a record written before call results had a status reads as SUCCEEDED / FAILED by its
    exception payload, never PENDING; a later delta keeps those results as `"status":null`."""
    r = ref("old", 0)
    produce_raw(
        tansu,
        store.topic,
        [(r.state_key, STATUSLESS, partition_for("old", 4))],
        headers=[("key", b"old"), ("seq", b"0"), ("action", b"work")],
    )
    again = restart(store, [])
    try:
        got = again.get(r)
        assert got is not None
        assert [(c.status, c.effective_status) for c in got.call_results] == [
            (None, CallStatus.SUCCEEDED),
            (None, CallStatus.FAILED),
        ]
        assert decode_value(STATUSLESS)[1] == "0.3.0"
        again.put_call_results(r, 2, [CallResult.pending("h", "x")])
        value = [v for _p, _o, k, v in read_topic(tansu, again.topic) if k == r.state_key][-1]
        assert value is not None
        assert value.startswith(
            STATUSLESS[: STATUSLESS.index(b'"exceptionPayload":null}')] + b'"exceptionPayload":null,"status":null},'
        )
        assert b'"status":"PENDING"' in value
    finally:
        again.close()


def test_put_call_results_refuses_a_gap_or_a_missing_state(store: FlinkAgentsKafkaStore) -> None:
    """STORE-5: a delta needs an existing state and must not leave a gap."""
    with pytest.raises(StoreError, match="no action state"):
        store.put_call_results(ref("k", 0), 0, [CallResult.pending("f", "d")])
    store.put(ref("k", 0), ActionState())
    with pytest.raises(
        StoreError, match=r"leaves a gap after 0 records \[key='k', seq=0, action='work', call_index=1\]"
    ):
        store.put_call_results(ref("k", 0), 1, [CallResult.pending("f", "d")])


def test_every_write_of_a_state_carries_its_location_headers(store: FlinkAgentsKafkaStore) -> None:
    """WIRE-5: the call-result writes and the truncation that rewrite a state carry the headers its first write
    had (they are kept with the state, not made again), so a restarted store locates it by them."""
    r = ref("k_with_underscores", 3)
    store.put(r, ActionState())
    store.put_call_results(r, 0, [CallResult.pending("f", "d")])
    store.put_call_results(r, 0, [CallResult.succeeded("f", "d", b"1")])
    store.put_call_results(r, 1, [CallResult.pending("g", "d")])
    store.truncate_call_results(r, 1)
    records = read_topic(store.bootstrap, store.topic)
    assert len(records) == 5
    again = restart(store, [])
    try:
        stored = again._states[r.state_key]
        assert (stored.key, stored.seq, stored.action) == (r.key, r.seq, r.action.name)
        assert [c.status for c in again.get(r).call_results] == [CallStatus.SUCCEEDED]  # type: ignore[union-attr]
    finally:
        again.close()


# --- real data: the records a Flink Agents 0.2.0 job wrote ------------------------------------------------

CAPTURED = captured_records()
_ANY_ACTION = ActionRef("count", "?", "?", ("_input_event",))


def _produce_captured(bootstrap: str, topic: str, partitions: int) -> None:
    produce_raw(
        bootstrap,
        topic,
        [(rec["key"], rec["value_bytes"], partition_for(rec["key"].rsplit("_", 3)[0], partitions)) for rec in CAPTURED],
    )


def _ref_of(state_key: str) -> StateRef:
    parsed = parse_state_key(state_key)
    assert parsed is not None
    return StateRef(parsed[0], parsed[1], _ANY_ACTION, InputEvent(None), state_key)


def test_captured_real_records_read_through_the_store(tansu: str) -> None:
    """WIRE-4, SER-7: the 6 records a real Flink Agents 0.2.0 job wrote, produced with their original keys,
    read through the store API as that job's action states."""
    topic = _topic()
    seed = open_fa(tansu, topic, partitions=2)
    seed.close()
    _produce_captured(tansu, topic, 2)
    store = open_store(f"kafka://{tansu}/{topic}?format=flink-agents")
    try:
        store.rebuild_state([])
        keys = list(dict.fromkeys(rec["key"] for rec in CAPTURED))
        states = [store.get(_ref_of(k)) for k in keys]
        assert all(s is not None and s.completed for s in states)
        done = [s for s in states if s is not None]
        assert [s.task_event.attributes["input"] for s in done if s.task_event] == ["a:1", "b:1", "a:2"]
        assert [s.task_event.type for s in done if s.task_event] == ["_input_event"] * 3
        assert [[(u.path, u.value) for u in s.short_term_memory_updates] for s in done] == [
            [("n", 1)],
            [("n", 1)],
            [("n", 2)],
        ]
        assert [[(e.type, e.attributes["output"]) for e in s.output_events] for s in done] == [
            [("_output_event", "a:1#1")],
            [("_output_event", "b:1#1")],
            [("_output_event", "a:2#2")],
        ]
        assert [s.call_results for s in done] == [[], [], []]
        # The Python event's own id (inside its eventJsonStr) is kept; its pickle is never loaded.
        assert done[0].task_event is not None and str(done[0].task_event.id) == "13eb9e18-780a-319c-afef-cd1c02cd66ab"
    finally:
        store.close()


class CounterAgent(Agent):
    """The captured job's agent: count inputs per key in memory `n`, emit `{input}#{n}`."""

    @action(InputEvent)
    @staticmethod
    def count(event: Event, ctx: RunnerContext) -> None:
        n = (ctx.short_term_memory.get("n") or 0) + 1
        ctx.short_term_memory.set("n", n)
        ctx.send_event(OutputEvent(f"{event.attributes['input']}#{n}"))


def counter_records(bootstrap: str) -> list[tuple[str, bytes]]:
    """Run the counter agent on the captured job's inputs and business keys, on a fresh topic in the Flink
    Agents format; every (key, value) record it wrote, in order, before the final checkpoint's tombstones."""
    a_key, b_key = (CAPTURED[0]["key"].rsplit("_", 3)[0], CAPTURED[2]["key"].rsplit("_", 3)[0])
    inputs = [(a_key, "a:1"), (b_key, "b:1"), (a_key, "a:2")]
    store = open_fa(bootstrap, _topic(), partitions=2)
    try:
        result = Runner(CounterAgent, store).run(inputs)
        assert result.outputs == {a_key: ["a:1#1", "a:2#2"], b_key: ["b:1#1"]}
        records = read_topic(bootstrap, store.topic)
    finally:
        store.close()
    return [(key, value) for _p, _o, key, value in records if value is not None]


def test_counter_agent_writes_what_the_real_job_wrote(tansu: str) -> None:
    """WIRE-7: our runtime's records for the captured job's inputs, record for record against the real job:
    equal where the formats agree; every difference is the 0.2.0 → current format change."""
    ours = counter_records(tansu)
    assert len(ours) == len(CAPTURED) == 6
    ours_in_offset_order = _align(ours)
    for rec, (key, value) in zip(CAPTURED, ours_in_offset_order, strict=True):
        theirs_key = rec["key"].rsplit("_", 3)
        ours_key = key.rsplit("_", 3)
        # Business key and seq are equal; the event UUID is MD5 of the event's pickle in 0.2.0 and of its
        # attributes now; the action UUID hashes 0.2.0's Python class trigger names.
        assert ours_key[:2] == theirs_key[:2]
        assert ours_key[2] == str(event_uuid(InputEvent(_input_of(rec))))
        theirs, mine = top_level_fields(rec["value_bytes"]), top_level_fields(value)
        assert list(mine) == list(theirs)  # same fields, same order
        for same in ("sensoryMemoryUpdates", "callResults", "completed"):
            assert mine[same] == theirs[same], same
        # The rest differs only by format: decoded, it is the same state.
        t_state, t_era = decode_value(rec["value_bytes"])
        m_state, m_era = decode_value(value)
        assert (t_era, m_era) == ("0.2.0", "current")
        assert m_state.task_event is not None and t_state.task_event is not None
        assert (m_state.task_event.type, m_state.task_event.attributes) == (
            t_state.task_event.type,
            t_state.task_event.attributes,
        )
        assert [(u.path, u.value) for u in m_state.short_term_memory_updates] == [
            (u.path, u.value) for u in t_state.short_term_memory_updates
        ]
        assert [(e.type, e.attributes) for e in m_state.output_events] == [
            (e.type, e.attributes) for e in t_state.output_events
        ]
    # Memory n=1 is the Kryo envelope of java.lang.Long 1 now, plain JSON 1 in 0.2.0.
    assert top_level_fields(ours_in_offset_order[1][1])["shortTermMemoryUpdates"] == (
        b'[{"path":"n","value":{"serde":"kryo","version":1,"payload":"CQI="}}]'
    )
    assert top_level_fields(CAPTURED[1]["value_bytes"])["shortTermMemoryUpdates"] == b'[{"path":"n","value":1}]'


def _input_of(rec: dict[str, Any]) -> str:
    return str(json.loads(rec["value"]["taskEvent"]["eventJsonStr"])["input"])


def _align(ours: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Our records in the captured topic's offset order: (input, completed) pairs match one to one."""

    def tag(value: bytes) -> tuple[str, bool]:
        state, _ = decode_value(value)
        assert state.task_event is not None
        return str(state.task_event.attributes["input"]), state.completed

    mine = {tag(v): (k, v) for k, v in ours}
    return [mine[(_input_of(rec), bool(rec["value"]["completed"]))] for rec in CAPTURED]


def test_the_real_jobs_event_uuids_are_md5_of_the_event_pickle() -> None:
    """WIRE-7: the one key difference is explained: 0.2.0 named the event by its pickle bytes."""
    for rec in CAPTURED:
        pickle_bytes = base64.b64decode(rec["value"]["taskEvent"]["event"])
        assert rec["key"].rsplit("_", 3)[2] == str(name_uuid(pickle_bytes))


# --- the conformance kit and the plugin ------------------------------------------------------------------


class TestFlinkAgentsKafkaUrlConformance(StoreConformance):
    """CONF-1, WIRE-8: `durable certify --store 'kafka://…?format=flink-agents'` passes the whole kit."""

    @pytest.fixture(scope="session")
    @classmethod
    def durable_store_factory(cls, tansu: str) -> StoreFactory:
        return factory_from_url(f"kafka://{tansu}/{_topic()}?format=flink-agents")


def test_benchmark_p3_counts_what_the_store_writes(tansu: str) -> None:
    """WIRE-2: benchmark P3's Flink Agents figure is the bytes the real store produces for the same calls."""
    from benchmarks.p3_bytes import FlinkFormatBytes, measure

    store = open_fa(tansu, _topic())
    try:
        measure(store, 20)
        counted = FlinkFormatBytes()
        measure(counted, 20)
        assert store.bytes_written == counted.fa_bytes > 0
    finally:
        store.close()


def refuse(amount: int) -> int:
    raise ValueError(f"refused {amount}")


def test_durable_call_payloads_are_enveloped_as_the_python_runtime_does(
    tansu: str, store: FlinkAgentsKafkaStore
) -> None:
    """WIRE-2, PAY-1: a durable call's record carries `cloudpickle.dumps(result)` (or of the exception) as
    standard base64, function id `module.qualname`, the args digest, and an explicit status."""
    import cloudpickle

    from reference_runtime.codecs import CloudpickleCodec
    from reference_runtime.durable import ActionExecution
    from reference_runtime.identity import args_digest

    r = ref("k", 0)
    state = ActionState(task_event=r.event)
    store.put(r, state)
    ex = ActionExecution(r, store, CloudpickleCodec(), state)
    assert ex.execute(partition_for, ("user-1", 4), {}) == 1
    with pytest.raises(ValueError, match="refused 5"):
        ex.execute(refuse, (5,), {})
    calls = loads([v for _p, _o, k, v in read_topic(tansu, store.topic) if k == r.state_key][-1])["callResults"]
    assert calls[0] == {
        "functionId": "reference_runtime.stores.kafka_flink_format.partition_for",
        "argsDigest": args_digest(("user-1", 4), {}),
        "resultPayload": base64.b64encode(cloudpickle.dumps(1)).decode(),
        "exceptionPayload": None,
        "status": "SUCCEEDED",
    }
    assert calls[1]["functionId"] == f"{__name__}.refuse" and calls[1]["status"] == "FAILED"
    assert calls[1]["resultPayload"] is None
    replayed = CloudpickleCodec().decode_exception(base64.b64decode(calls[1]["exceptionPayload"]))
    assert isinstance(replayed, ValueError) and str(replayed) == "refused 5"


class _NoScan(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise AssertionError("the store scanned every state")

    values = keys = __iter__ = items


@pytest.mark.parametrize("fmt", ["native", FA])
def test_misses_and_prunes_look_at_one_business_key(tansu: str, fmt: str) -> None:
    """COST-3: a miss (STORE-3) and a prune (STORE-4) touch only the business key's own states, in both
    Kafka formats, so they cost the same with 10 or 10 000 other keys in the store."""
    s = (KafkaStore if fmt == "native" else FlinkAgentsKafkaStore)(tansu, _topic())
    action = ActionRef("work", "m", "M.work", ("_input_event",))

    def sref(key: str, seq: int) -> StateRef:
        return StateRef(key, seq, action, InputEvent(seq), f"{key}_{seq}_work", 0)

    for i in range(5):
        s.put(sref(f"other{i}", 0), ActionState(task_event=InputEvent(0)))
    for seq in range(3):
        s.put(sref("mine", seq), ActionState(task_event=InputEvent(seq)))
    attr = "_states" if fmt == FA else "_entries"
    setattr(s, attr, _NoScan(getattr(s, attr)))
    assert s.get(sref("mine", 0)) is not None  # a hit
    assert s.get(sref("absent", 0)) is None  # a miss of another key
    s.prune_state("mine", 0)
    assert s.get(sref("mine", 1)) is not None and len(dict.items(getattr(s, attr))) == 7
    s.close()
