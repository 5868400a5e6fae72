"""A Flink Agents topic belongs to one engine version, and the store writes only what that engine reads
(WIRE-10..WIRE-12, INS-8). The 0.2.0 oracle here is the records a real 0.2.0 job wrote (``captured/``);
``tests/engine020`` feeds what the 0.2 writer produces to the real 0.2.0 deserializer.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from typing import Any

import pytest

from pytest_durable.cli import main as durable
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action
from reference_runtime.errors import StoreFailedError, StoreUrlError, TopicFormatError
from reference_runtime.events import ChatRequestEvent
from reference_runtime.records import ActionRef, ActionState, CallResult, MemoryUpdate, StateRef
from reference_runtime.runner import Runner
from reference_runtime.serde.actionstate import serialize
from reference_runtime.serde.legacy import read_legacy_020, write_legacy_020
from reference_runtime.serde.legacy_event import LegacyFormatError, event_pickle, pydantic_json
from reference_runtime.state_keys import legacy_020_state_key
from reference_runtime.stores import open_store
from reference_runtime.stores.kafka_flink import FlinkAgentsKafkaStore
from reference_runtime.stores.kafka_flink_format import engine_check, partition_for, topic_owner
from reference_runtime.stores.kafka_url import parse_kafka_url
from tests.vectors import captured_records, cases

from .test_kafka_store import produce_raw, read_topic

CALLS = captured_records("flink-agents-0.2.0-kafka-topic-calls.jsonl")
COUNTER = captured_records()
#: The ``id`` of a PythonEvent wrapper: 0.2.0 draws it at random, nothing reads it back.
WRAPPER_ID = re.compile(
    rb'("@class":"org\.apache\.flink\.agents\.runtime\.python\.event\.PythonEvent","id":")[0-9a-f-]{36}'
)


def masked(value: bytes) -> bytes:
    return WRAPPER_ID.sub(rb"\1<random>", value)


def _input(rec: dict[str, Any]) -> Any:
    return json.loads(rec["value"]["taskEvent"]["eventJsonStr"])["input"]


# --- the 0.2 writer against the real job's records (pure) -------------------------------------------------


@pytest.mark.parametrize("records", [COUNTER, CALLS], ids=["counter", "calls"])
def test_the_020_writer_writes_the_real_jobs_bytes(records: list[dict[str, Any]]) -> None:
    """WIRE-10: every record a real 0.2.0 job wrote, read and written again by the 0.2 writer, is the job's
    bytes (events with their pickles, plain JSON memory, status-less calls, one failed), except the random id
    of the PythonEvent wrapper."""
    for rec in records:
        ours = write_legacy_020(read_legacy_020(rec["value_bytes"]))
        assert masked(ours) == masked(rec["value_bytes"]), rec["offset"]
    assert any(c["exceptionPayload"] for rec in records for c in rec["value"]["callResults"]) == (records is CALLS)


def test_event_pickles_and_ids_are_the_engines() -> None:
    """WIRE-10, WIRE-11: the pickle of each event (which names it in the state key) and its content-based id
    are byte for byte what 0.2.0's Python runtime made."""
    for rec in CALLS:
        events = [(rec["value"]["taskEvent"], "_input_event", "input")]
        events += [(e, "_output_event", "output") for e in rec["value"]["outputEvents"]]
        for raw, event_type, field in events:
            body = json.loads(raw["eventJsonStr"])
            pickled, event_id = event_pickle(event_type, body[field])
            assert pickled == base64.b64decode(raw["event"]) and str(event_id) == body["id"]


def test_020_state_keys_are_the_engines() -> None:
    """WIRE-11: event UUID = nameUUIDFromBytes(event pickle), action UUID over 0.2.0's class-path triggers."""
    count = ActionRef("count", "h9_agent", "CounterAgent.count", ("_input_event",))
    for rec in CALLS:
        key, seq = rec["key"].rsplit("_", 3)[:2]
        assert legacy_020_state_key(key, int(seq), count, InputEvent(_input(rec))) == rec["key"]


def test_pydantic_json_spells_numbers_as_pydantic_core() -> None:
    """WIRE-11: the content id hashes pydantic-core's JSON; floats as Rust's shortest form, NaN as null."""
    assert pydantic_json([1.0, 0.1, 1e20, 1.5e-7, 1e16, 1e15, 1e-5, -0.0, float("nan")]) == (
        "[1.0,0.1,1e20,1.5e-7,1e16,1000000000000000.0,0.00001,-0.0,null]"
    )
    assert pydantic_json({"é": "\u0001\n😀"}) == '{"é":"\\u0001\\n😀"}'


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (ActionState(call_results=[CallResult.pending("m.f", "d")]), r"call 0 \(m\.f\) is PENDING"),
        (ActionState(short_term_memory_updates=[MemoryUpdate("obj", None, True)]), r"new_object\('obj'\).*#1029"),
        (ActionState(short_term_memory_updates=[MemoryUpdate("raw", b"\x00")]), r"'raw' is a bytes.*base64"),
        (ActionState(sensory_memory_updates=[MemoryUpdate("x", float("nan"))]), r"'x' is nan"),
        (ActionState(task_event=ChatRequestEvent("m", [])), r"'_chat_request_event' event cannot be written"),
        (ActionState(task_event=Event("_input_event", {"input": 1, "extra": 2})), r"holds exactly one field"),
        (ActionState(output_events=[OutputEvent(b"\x01")]), r"output is a bytes"),
    ],
)
def test_what_020_cannot_hold_is_refused_not_misrecorded(state: ActionState, message: str) -> None:
    """WIRE-10: a state 0.2.0 would misread (a PENDING call as a success, new_object as set(None), bytes as
    text) raises one error naming the part, instead of being written."""
    with pytest.raises(LegacyFormatError, match=message):
        write_legacy_020(state)


def test_engine_check_tells_which_engine_reads_a_record() -> None:
    """WIRE-12, INS-8: the real 0.2.0 records are read by 0.2 only, current records by 0.3 only; a state with
    nothing version-specific by both; a call `status` or a Kryo envelope is not read (right) by 0.2."""
    assert all(engine_check(r["value_bytes"]).readers == {"0.2"} for r in CALLS)
    assert "PythonEvent" in (engine_check(CALLS[0]["value_bytes"]).reason("0.3") or "")
    current = [c.get("jdk25_json", c["json"]).encode() for c in cases("actionstate_serialize.jsonl")]
    assert all("0.3" in engine_check(v).readers for v in current)
    assert engine_check(serialize(ActionState())).readers == {"0.2", "0.3"}
    status = engine_check(serialize(ActionState(call_results=[CallResult.succeeded("f", "d", b"x")])))
    assert status.readers == {"0.3"} and "status" in (status.reason("0.2") or "")
    kryo = engine_check(serialize(ActionState(short_term_memory_updates=[MemoryUpdate("n", 1)])))
    assert kryo.readers == {"0.3"} and "reads as a map" in (kryo.reason("0.2") or "")
    assert engine_check(b"not json").readers == frozenset()


def test_topic_owner_from_the_live_records() -> None:
    """WIRE-12: declared wins; else the one version reading every record; empty or neutral → 0.3; mixed →
    none."""
    old, new, both = (
        engine_check(CALLS[0]["value_bytes"]),
        engine_check(serialize(ActionState(call_results=[CallResult.succeeded("f", "d", b"x")]))),
        engine_check(serialize(ActionState())),
    )
    assert (topic_owner([]).version, topic_owner([]).how) == ("0.3", "default")
    assert (topic_owner([("s", both)]).version, topic_owner([("s", both)]).how) == ("0.3", "default")
    assert (topic_owner([("a", old), ("b", both)]).version, topic_owner([("a", old)]).how) == ("0.2", "detected")
    mixed = topic_owner([("a", old), ("b", new)])
    assert mixed.version is None and "mixed" in mixed.describe() and "1 only the 0.2 engine reads" in mixed.describe()
    declared = topic_owner([("a", old), ("b", both)], "0.3")
    assert declared.how == "declared" and [sk for sk, _ in declared.unreadable] == ["a"]


def test_url_names_the_version_and_migration() -> None:
    """WIRE-12, KSTORE-9: `version` and `migrate` are options of the Flink Agents format only."""
    parsed = parse_kafka_url("kafka://h:1/t?format=flink-agents&version=0.2&migrate=true")
    assert dict(parsed.options) == {"version": "0.2", "migrate": "true"}
    for bad, why in [
        ("kafka://h:1/t?version=0.2", "format=flink-agents only"),
        ("kafka://h:1/t?format=flink-agents&version=0.1", "bad version '0.1'"),
        ("kafka://h:1/t?format=flink-agents&migrate=true", "needs version"),
        ("kafka://h:1/t?format=flink-agents&version=0.3&migrate=yes", "only value is true"),
    ]:
        with pytest.raises(StoreUrlError, match=why):
            parse_kafka_url(bad)


# --- on the broker ----------------------------------------------------------------------------------------


def _topic() -> str:
    return f"durable-fav-{uuid.uuid4().hex[:16]}"


def _plant(bootstrap: str, records: list[dict[str, Any]], partitions: int = 1) -> str:
    topic = _topic()
    FlinkAgentsKafkaStore(bootstrap, topic, partitions=partitions).close()
    produce_raw(
        bootstrap,
        topic,
        [(r["key"], r["value_bytes"], partition_for(r["key"].rsplit("_", 3)[0], partitions)) for r in records],
    )
    return topic


def add(x: int, y: int) -> int:
    return x + y


def explode(message: str) -> None:
    raise ValueError(message)


class CounterAgent(Agent):
    """The captured job's agent (module ``h9_agent``, class ``CounterAgent``, action ``count``)."""

    @action(InputEvent)
    @staticmethod
    def count(event: Event, ctx: RunnerContext) -> None:
        text = event.attributes["input"]
        n = (ctx.short_term_memory.get("n") or 0) + 1
        ctx.short_term_memory.set("n", n)
        if text.startswith("c:"):
            total = ctx.durable_execute(add, 5, 10)
            try:
                ctx.durable_execute(explode, "boom")
            except ValueError as exc:
                ctx.send_event(OutputEvent(f"{text}#{n}#{total}#{exc}"))
                return
        ctx.send_event(OutputEvent(f"{text}#{n}"))


# The names the real job's classes had, so action UUIDs and function ids are the job's.
for _f in (add, explode, CounterAgent.count):
    _f.__module__ = "h9_agent"
CounterAgent.__module__, CounterAgent.__qualname__ = "h9_agent", "CounterAgent"
CounterAgent.count.__qualname__ = "CounterAgent.count"


def test_the_runtime_writes_the_real_jobs_topic_in_a_020_topic(tansu: str) -> None:
    """WIRE-10, WIRE-11: the captured job's agent and inputs, run by this runtime on a topic declared 0.2,
    write the real job's records: the same keys, in the same order, the same bytes (wrapper ids aside)."""
    store = FlinkAgentsKafkaStore(tansu, _topic(), partitions=1, version="0.2")
    assert store.key_scheme == "flink-agents-0.2"
    inputs = [(rec["key"].rsplit("_", 3)[0], _input(rec)) for rec in CALLS if not rec["value"]["completed"]]
    inputs = list(dict.fromkeys(inputs))
    try:
        result = Runner(CounterAgent, store).run(inputs)
        assert sorted(o for outs in result.outputs.values() for o in outs) == sorted(
            ["a:1#1", "b:1#1", "a:2#2", "c:1#1#15#boom"]
        )
        ours = [(k, v) for _p, _o, k, v in read_topic(tansu, store.topic) if v is not None]
    finally:
        store.close()

    # Keys run one after another here and interleave in the job: compare each state's records in order.
    def by_key(records: list[tuple[str, bytes]]) -> dict[str, list[bytes]]:
        out: dict[str, list[bytes]] = {}
        for key, value in records:
            out.setdefault(key, []).append(masked(value))
        return out

    assert by_key(ours) == by_key([(r["key"], r["value_bytes"]) for r in CALLS])
    assert len(ours) == len(CALLS) == 10


def test_a_020_topic_is_detected_and_a_030_write_refused(tansu: str) -> None:
    """WIRE-12: a topic holding 0.2 records is 0.2 unless told otherwise; a store declared 0.3 refuses to
    write beside them, naming both versions and the fix, and writes nothing."""
    topic = _plant(tansu, CALLS)
    detected = open_store(f"kafka://{tansu}/{topic}?format=flink-agents")
    assert isinstance(detected, FlinkAgentsKafkaStore)
    assert (detected.version, detected.owner.how, detected.key_scheme) == ("0.2", "detected", "flink-agents-0.2")
    detected.close()
    before = read_topic(tansu, topic)
    store = open_store(f"kafka://{tansu}/{topic}?format=flink-agents&version=0.3")
    ref = StateRef("k", 0, ActionRef("a", "m", "M.a", ("_input_event",)), InputEvent(1), "k_0_x")
    try:
        with pytest.raises(TopicFormatError) as info:
            store.put(ref, ActionState(task_event=InputEvent(1)))
        text = str(info.value)
        assert "4 state(s) in the 0.2 format" in text and "Flink Agents 0.3 engine" in text
        assert "version=0.2" in text and "version=0.3&migrate=true" in text
    finally:
        store.close()
    assert read_topic(tansu, topic) == before


def test_a_runner_on_a_mixed_topic_stops_with_the_reason(tansu: str) -> None:
    """WIRE-12, FAIL-1: a topic where a 0.3 record sits beside 0.2 ones (what the old writer did to a 0.2
    job's topic) is read by no engine whole: the first write fails the run with the mixed-topic error."""
    topic = _plant(tansu, CALLS)
    poison = serialize(ActionState(task_event=InputEvent("z:1"), call_results=[CallResult.succeeded("f", "d", b"x")]))
    produce_raw(tansu, topic, [("z_0_poison", poison, 0)])
    store = FlinkAgentsKafkaStore(tansu, topic, partitions=1)
    try:
        assert store.owner.version is None
        with pytest.raises(StoreFailedError) as info:
            Runner(CounterAgent, store).run([("z", "z:2")])
        assert isinstance(info.value.cause, TopicFormatError) and "mixes Flink Agents formats" in str(info.value)
    finally:
        store.close()


def test_migration_rewrites_the_live_states_in_the_declared_version(tansu: str) -> None:
    """WIRE-12: `migrate=true` rewrites every live state the declared version's engine cannot read, under the
    same key; the topic then reads as that version's and the store writes it."""
    topic = _plant(tansu, COUNTER)
    store = open_store(f"kafka://{tansu}/{topic}?format=flink-agents&version=0.3&migrate=true")
    assert isinstance(store, FlinkAgentsKafkaStore)
    store.close()
    live: dict[str, bytes | None] = {}
    for _p, _o, k, v in read_topic(tansu, topic):
        live[k] = v
    assert len(live) == 3 and all(v is not None and engine_check(v).readers == {"0.3"} for v in live.values())
    again = FlinkAgentsKafkaStore(tansu, topic, partitions=1)
    try:
        assert (again.version, again.owner.how, again.owner.unreadable) == ("0.3", "detected", ())
    finally:
        again.close()


def test_a_state_020_cannot_hold_fails_with_its_location(tansu: str) -> None:
    """WIRE-10: in a 0.2 topic a PENDING call is refused with key, seq and action, and nothing is written."""
    store = FlinkAgentsKafkaStore(tansu, _topic(), version="0.2")
    count = ActionRef("count", "h9_agent", "CounterAgent.count", ("_input_event",))
    event = InputEvent("a:1")
    ref = StateRef("a", 0, count, event, legacy_020_state_key("a", 0, count, event))
    try:
        store.put(ref, ActionState(task_event=event))
        with pytest.raises(TopicFormatError, match=r"PENDING.*key='a'.*seq=0.*action='count'"):
            store.put_call_results(ref, 0, [CallResult.pending("m.f", "d")])
        with pytest.raises(TopicFormatError, match=r"not the key a Flink Agents 0\.2 job files"):
            store.put(StateRef("a", 1, count, event, "a_1_x_y"), ActionState(task_event=event))
        assert len([v for *_, v in read_topic(tansu, store.topic)]) == 1
    finally:
        store.close()


def _inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = durable(["inspect", *args])
    return code, capsys.readouterr().out


def test_inspect_says_which_engine_reads_each_state(tansu: str, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-8: a 0.2 topic is reported as one, every state readable; a 0.3 record planted in it makes the topic
    mixed in the summary, flags that state and the others, and exits 1; --json carries the same verdicts."""
    topic = _plant(tansu, CALLS)
    url = f"kafka://{tansu}/{topic}?format=flink-agents"
    code, out = _inspect(capsys, url)
    assert code == 0, out
    assert out.splitlines()[1] == "Flink Agents 0.2 topic (detected)" and "NOT READABLE" not in out
    poison = serialize(ActionState(task_event=InputEvent("z:1"), call_results=[CallResult.succeeded("f", "d", b"x")]))
    produce_raw(tansu, topic, [("z_0_poison", poison, 0)])
    code, out = _inspect(capsys, url)
    assert code == 1
    assert out.splitlines()[1].startswith("mixed Flink Agents topic: no engine version reads every state")
    assert out.count("NOT READABLE by no owning engine: only the 0.2 engine reads it") == 4
    assert out.count("NOT READABLE by no owning engine: only the 0.3 engine reads it") == 1
    code, out = _inspect(capsys, url + "&version=0.2", "--json")
    views = {v["state_key"]: v["engine"] for v in json.loads(out)}
    poisoned = views["z_0_poison"]
    assert code == 1 and poisoned["readable"] is False and "abstract in 0.2.0" in poisoned["reason"]
    assert sum(e["readable"] for e in views.values()) == 4 and {e["owner"] for e in views.values()} == {"0.2"}


class Shipped(Event):
    """A user event with an instance field: the current format keeps its class in `__durable_py__` (WIRE-9)."""

    def __init__(self, order: str) -> None:
        super().__init__("shipped", {"order": order})
        self.carrier = "post"


def test_every_record_the_current_writer_makes_is_read_by_the_03_reader(tansu: str) -> None:
    """WIRE-2, WIRE-12: no engine runs the current format offline, so the oracle is the reader the Java-class
    vectors pin (SER-6): every record the store writes into a 0.3 topic (a run with calls, a failed call, a
    PENDING slot, a user event, memory of every kind, a migrated 0.2 state) is read by it and written back to
    the same bytes; only a `new_object` update is not (the documented #1029 deviation)."""
    from reference_runtime.serde.actionstate import read_action_state, write_action_state
    from tests.engine020.test_java_reads_020 import writer_corpus

    store = FlinkAgentsKafkaStore(tansu, _topic(), partitions=1)
    try:
        Runner(CounterAgent, store).run([("c", "c:1"), ("a", "a:1")])
        any_action = ActionRef("a", "m", "M.a", ("_input_event",))
        states = [state for state, _v in writer_corpus()[16:76]]
        states.append(ActionState(task_event=Shipped("o-1"), call_results=[CallResult.pending("m.f", "d")]))
        states.append(ActionState(short_term_memory_updates=[MemoryUpdate("raw", b"\x00"), MemoryUpdate("x", 1.5)]))
        states.append(ActionState(short_term_memory_updates=[MemoryUpdate("obj", None, True)]))
        for n, state in enumerate(states):
            store.put(StateRef(f"k{n}", 0, any_action, InputEvent(n), f"k{n}_0_state"), state)
        records = [v for *_, v in read_topic(tansu, store.topic) if v is not None]
    finally:
        store.close()
    migrated = FlinkAgentsKafkaStore(tansu, _plant(tansu, CALLS), partitions=1, version="0.3", migrate=True)
    migrated.close()
    records += [v for *_, v in read_topic(tansu, migrated.topic) if v is not None][len(CALLS) :]
    assert len(records) > 70
    new_object = [v for v in records if b'"objectCreation":true' in v]
    assert len(new_object) == 1 and "0.3" not in engine_check(new_object[0]).readers
    for value in records:
        if value in new_object:
            continue
        assert "0.3" in engine_check(value).readers, value[:300]
        java = read_action_state(value, dialect="head")
        assert java is not None and write_action_state(java) == value


def _with_new_object(ref: StateRef) -> ActionState:
    state = ActionState(task_event=ref.event)
    state.short_term_memory_updates = [MemoryUpdate("profile", None, True), MemoryUpdate("profile.name", "ann")]
    state.mark_completed()
    return state


def test_a_store_reads_back_its_own_new_object_records_after_a_restart(tansu: str) -> None:
    """WIRE-15: in a topic whose version was not declared, the store writes a new_object update with the
    objectCreation flag (PR #1030) and, reopened, accepts its own records and writes beside them (before,
    detection took them for a foreign format and refused every write); inspect still says the released 0.3
    engine cannot read them (INS-8)."""
    topic = _topic()
    ref = StateRef("k", 0, ActionRef("a", "m", "M.a", ("_input_event",)), InputEvent(1), "k_0_x")
    first = open_store(f"kafka://{tansu}/{topic}?format=flink-agents")
    try:
        first.put(ref, _with_new_object(ref))
    finally:
        first.close()
    again = open_store(f"kafka://{tansu}/{topic}?format=flink-agents")
    try:
        again.rebuild_state([])  # no markers: the whole topic (WIRE-6)
        assert again.get(ref) == _with_new_object(ref)
        later = StateRef("k", 1, ref.action, InputEvent(2), "k_1_x")
        again.put(later, ActionState(task_event=later.event))
    finally:
        again.close()
    [check] = [engine_check(v) for _p, _o, k, v in read_topic(tansu, topic) if k == "k_0_x" and v is not None][-1:]
    assert check.pr1030_only and "objectCreation" in (check.reason("0.3") or "")


def test_a_topic_declared_03_gets_no_new_object_record(tansu: str) -> None:
    """WIRE-15: a topic declared owned by a 0.3 engine (version=0.3) gets no record its engine misreads: a
    new_object update is refused with a TopicFormatError naming #1029 and the fix, and nothing is written."""
    topic = _topic()
    ref = StateRef("k", 0, ActionRef("a", "m", "M.a", ("_input_event",)), InputEvent(1), "k_0_x")
    store = open_store(f"kafka://{tansu}/{topic}?format=flink-agents&version=0.3")
    try:
        with pytest.raises(TopicFormatError) as info:
            store.put(ref, _with_new_object(ref))
        assert "#1029" in str(info.value) and "set()" in str(info.value)
        assert info.value.location is not None and info.value.location.key == "k"
    finally:
        store.close()
    assert [v for _p, _o, _k, v in read_topic(tansu, topic) if v is not None] == []
