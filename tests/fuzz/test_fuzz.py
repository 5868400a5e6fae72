"""Every decoder and parser that reads untrusted input, fuzzed from valid records of its own format plus
mutations, spliced resource bombs and (for pickles) opcode soup. Each input must give a value or one of
the decoder's typed errors — located where the decoder knows the location — within MAX_SECONDS and
MAX_BYTES (spec LIM-1, LIM-8). A quick run of a few hundred inputs per target runs by default; the
``slow`` run feeds 5 500 per target (107 500 in all: every decoder of the JSON and pickle paths, of every
store and of both Kafka formats) and prints its figures (spec LIM-8, LIM-10)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.codecs import CloudpickleCodec, JavaStyleCodec
from reference_runtime.durable import ActionExecution
from reference_runtime.errors import (
    CorruptRecordError,
    InvalidValueError,
    Location,
    PayloadDecodeError,
    StoreError,
    location,
)
from reference_runtime.faults import CrashAt, ScheduleSyntaxError
from reference_runtime.records import ActionRef, ActionState, CallResult, StateRef
from reference_runtime.serde import jackson, kryo
from reference_runtime.serde.actionstate import read_action_state
from reference_runtime.serde.legacy import read_legacy_020
from reference_runtime.stores.kafka_flink_format import decode_value as flink_decode_value
from reference_runtime.stores.kafka_native_format import decode_frame, parse_record_key
from reference_runtime.stores.kafka_replay import Replay, refuse_corrupt
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import decode_call_result, decode_state

from . import seeds
from .harness import Meter, Target, metered, run
from .mutator import Mutator
from .strategies import field_swaps, hostile_values, mutated, opcode_soup, spliced

LOC = Location("k", 3, "act", 1)
REF = StateRef("k", 1, ActionRef("act", "m", "A.act", ("_input_event",)), InputEvent(1), "sk")


def _replay(codec: Any, status: str) -> Callable[[bytes], Any]:
    """Decode a payload the way recovery does: as the record at call index 0, which locates errors."""
    ex = ActionExecution(REF, InMemoryStore(), codec, ActionState())

    def decode(data: bytes) -> Any:
        record = (
            CallResult("fid", "digest", None, data, None)
            if status == "FAILED"
            else CallResult("fid", "digest", data, None, None)
        )
        return ex.decode(record, 0)

    return decode


def _frame(data: bytes) -> Any:
    """What the Kafka store does with an S record: split the frame, then decode header and calls."""
    try:
        key, seq, action, header, calls = decode_frame(data)
    except ValueError as exc:  # decode_frame's contract: the store turns the reason into a located error
        raise CorruptRecordError(f"unreadable action state record: {exc}", LOC) from exc
    decode_state(header, Location(key, seq, action))
    for i, c in enumerate(calls):
        decode_call_result(c, Location(key, seq, action, i))


class _StoreReader:
    """Plants fuzzed record bytes where a store keeps them and reads them back through the store's own
    ``get``: the Redis hash and list (through its Lua script), the SQLite rows, the Kafka log (replayed)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.store: Any = None

    def open(self) -> Any:
        if self.store is None:
            if self.kind == "redis":
                import fakeredis

                from reference_runtime.stores.redis import RedisStore

                self.store = RedisStore(fakeredis.FakeRedis(), namespace="fuzz")
            else:
                import tempfile

                from reference_runtime.stores.sqlite import SqliteStore

                self.store = SqliteStore(Path(tempfile.mkdtemp(prefix="durable-fuzz-")) / "fuzz.db")
        return self.store

    def __call__(self, data: tuple[bytes, bytes]) -> Any:
        header, call = data
        store = self.open()
        store.put(REF, ActionState())
        if self.kind == "redis":
            store.client.hset(f"fuzz:state:{REF.state_key}", "header", header)
            store.client.rpush(f"fuzz:calls:{REF.state_key}", call)
        else:
            store._conn.execute("UPDATE action_states SET header = ? WHERE state_key = ?", (header, REF.state_key))
            store._conn.execute("INSERT INTO call_results VALUES (?, 0, ?)", (REF.state_key, call))
        return store.get(REF)


@functools.cache
def _fake_redis() -> Any:
    import fakeredis

    return fakeredis.FakeRedis()  # one server for every input: starting its Lua runtime takes a while


def _redis_bookkeeping(data: bytes) -> Any:
    """The Redis store's epoch and write counter as a server that another program wrote to holds them."""
    from reference_runtime.stores.redis import RedisStore

    client = _fake_redis()
    client.set("fuzz:epoch", data[: len(data) // 2])
    client.set("fuzz:writes", data[len(data) // 2 :])
    store = RedisStore(client, namespace="fuzz")
    store.rebuild_state([{"writes": 1, "epoch": "0" * 32}])
    return store.get_recovery_marker()


def _kafka_replay(data: tuple[bytes, bytes]) -> Any:
    """What the native Kafka store does with a log: fold the records, then read every state it holds."""
    frame, call = data
    replay = Replay()
    replay.apply(f"S|{REF.state_key}".encode(), frame, 0, 0, [("key", b"k"), ("seq", b"1"), ("action", b"act")])
    replay.apply(f"C|{REF.state_key}|00000000".encode(), call, 0, 1, None)
    for sk, entry in replay.entries().items():
        ref = StateRef(entry.key or "k", entry.seq if entry.seq is not None else 1, REF.action, REF.event, sk)
        refuse_corrupt(entry, ref)
        decode_state(entry.header, location(ref))
        for i, body in enumerate(entry.calls):
            decode_call_result(body, location(ref, i))


def _flink_value(data: bytes) -> Any:
    """A Flink Agents topic record's value, as the Flink-format Kafka store reads it."""
    return flink_decode_value(data, LOC)


def _key(text: str) -> Any:
    parsed = parse_record_key(text)
    assert parsed is None or (parsed[0] in "SCT" and (parsed[2] is None or parsed[2] >= 0))


class Store(Agent):
    """Takes a hostile value as input, writes it to memory and sends it in an event attribute."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        ctx.short_term_memory.set("v", value)
        ctx.send_event(OutputEvent({"echo": value}))


def _api(value: Any) -> Any:
    try:
        return Runner(Store).run([("key", value), (value if isinstance(value, str) else "k2", 1)])
    except Exception as exc:
        # Through memory and send_event the value check surfaces as the action's failure, with its cause.
        if isinstance(exc.__cause__, InvalidValueError):
            raise exc.__cause__ from None
        raise


def _targets() -> dict[str, tuple[Target, st.SearchStrategy[Any]]]:
    headers, calls, frames = seeds.native()
    java = seeds.java_records()
    located = (CorruptRecordError,)
    redis_reader, sqlite_reader = _StoreReader("redis"), _StoreReader("sqlite")
    return {
        "native_state": (
            Target(lambda b: decode_state(b, LOC), located, located=True),
            mutated(headers) | spliced(headers) | field_swaps(headers),
        ),
        "native_call": (
            Target(lambda b: decode_call_result(b, LOC), located, located=True),
            mutated(calls) | spliced(calls) | field_swaps(calls),
        ),
        "kafka_frame": (Target(_frame, located, located=True), mutated(frames) | spliced(frames)),
        "kafka_key": (
            Target(_key, ()),
            st.text(max_size=30)
            | st.sampled_from(seeds.kafka_keys()).flatmap(
                lambda k: st.integers(0, len(k)).flatmap(lambda i: st.text(max_size=6).map(lambda t: k[:i] + t + k[i:]))
            ),
        ),
        "java_actionstate": (Target(read_action_state, located), mutated(java) | spliced(java) | field_swaps(java)),
        "java_legacy": (Target(read_legacy_020, located), mutated(java) | field_swaps(java)),
        "kryo": (Target(kryo.decode, located), st.binary(max_size=64) | mutated(seeds.kryo_payloads())),
        "jackson": (Target(jackson.loads, located), mutated(java) | spliced(java)),
        "pickle_result": (
            Target(_replay(CloudpickleCodec(), "SUCCEEDED"), (PayloadDecodeError,), located=True),
            mutated(seeds.pickles()) | opcode_soup(),
        ),
        "pickle_exception": (
            Target(_replay(CloudpickleCodec(), "FAILED"), (PayloadDecodeError,), located=True),
            mutated(seeds.pickles()) | opcode_soup(),
        ),
        "pickle_signed": (
            Target(_replay(CloudpickleCodec(hmac_key=b"fuzz-key"), "SUCCEEDED"), (PayloadDecodeError,), located=True),
            mutated(seeds.signed_pickles()),
        ),
        "java_codec": (
            Target(_replay(JavaStyleCodec(), "FAILED"), (PayloadDecodeError,), located=True),
            mutated(seeds.java_payloads()) | spliced(seeds.java_payloads()),
        ),
        "java_codec_result": (
            Target(_replay(JavaStyleCodec(), "SUCCEEDED"), (PayloadDecodeError,), located=True),
            mutated(seeds.java_payloads()) | spliced(seeds.java_payloads()) | spliced(java),
        ),
        "redis_get": (
            Target(redis_reader, located, located=True, setup=redis_reader.open),
            st.tuples(
                mutated(headers) | spliced(headers) | st.sampled_from(headers), mutated(calls) | st.sampled_from(calls)
            ),
        ),
        "sqlite_get": (
            Target(sqlite_reader, located, located=True, setup=sqlite_reader.open),
            st.tuples(
                mutated(headers) | spliced(headers) | st.sampled_from(headers), mutated(calls) | st.sampled_from(calls)
            ),
        ),
        "redis_bookkeeping": (Target(_redis_bookkeeping, (StoreError,), setup=_fake_redis), st.binary(max_size=80)),
        "kafka_replay": (
            Target(_kafka_replay, located, located=True),
            st.tuples(
                mutated(frames) | spliced(frames) | st.sampled_from(frames), mutated(calls) | st.sampled_from(calls)
            ),
        ),
        "kafka_flink_value": (
            Target(_flink_value, located, located=True),
            mutated(java) | spliced(java) | field_swaps(java),
        ),
        "crash_selector": (
            Target(CrashAt.parse, (ScheduleSyntaxError,)),
            mutated([s.encode() for s in seeds.selectors()]).map(lambda b: b.decode("utf-8", "replace"))
            | st.text(max_size=40),
        ),
        "api_values": (Target(_api, (InvalidValueError,)), hostile_values()),
    }


TARGETS = _targets()


def _slow_inputs(m: Mutator) -> dict[str, Callable[[], Any]]:
    """The slow run's generators: the same kinds of input as the strategies, from the same seeds."""
    headers, calls, frames = seeds.native()
    java, pickles, java_payloads = seeds.java_records(), seeds.pickles(), seeds.java_payloads()
    selectors = seeds.selectors()
    return {
        "native_state": lambda: m.any_of(lambda: m.mutate(headers), lambda: m.splice(headers), lambda: m.swap(headers)),
        "native_call": lambda: m.any_of(lambda: m.mutate(calls), lambda: m.splice(calls), lambda: m.swap(calls)),
        "kafka_frame": lambda: m.any_of(lambda: m.mutate(frames), lambda: m.splice(frames)),
        "kafka_key": lambda: m.text(seeds.kafka_keys()),
        "java_actionstate": lambda: m.any_of(lambda: m.mutate(java), lambda: m.splice(java), lambda: m.swap(java)),
        "java_legacy": lambda: m.any_of(lambda: m.mutate(java), lambda: m.swap(java)),
        "kryo": lambda: m.mutate(seeds.kryo_payloads()),
        "jackson": lambda: m.any_of(lambda: m.mutate(java), lambda: m.splice(java)),
        "pickle_result": lambda: m.any_of(lambda: m.mutate(pickles), m.soup),
        "pickle_exception": lambda: m.any_of(lambda: m.mutate(pickles), m.soup),
        "pickle_signed": lambda: m.mutate(seeds.signed_pickles()),
        "java_codec": lambda: m.any_of(lambda: m.mutate(java_payloads), lambda: m.splice(java_payloads)),
        "java_codec_result": lambda: m.any_of(
            lambda: m.mutate(java_payloads), lambda: m.splice(java_payloads), lambda: m.splice(java)
        ),
        "redis_get": lambda: (
            m.any_of(lambda: m.mutate(headers), lambda: m.splice(headers), m.pick(headers)),
            m.any_of(lambda: m.mutate(calls), m.pick(calls)),
        ),
        "sqlite_get": lambda: (
            m.any_of(lambda: m.mutate(headers), lambda: m.splice(headers), m.pick(headers)),
            m.any_of(lambda: m.mutate(calls), m.pick(calls)),
        ),
        "redis_bookkeeping": lambda: m.mutate([b"0123456789abcdef0123456789abcdef12", "é".encode() + b"7"]),
        "kafka_replay": lambda: (
            m.any_of(lambda: m.mutate(frames), lambda: m.splice(frames), m.pick(frames)),
            m.any_of(lambda: m.mutate(calls), m.pick(calls)),
        ),
        "kafka_flink_value": lambda: m.any_of(lambda: m.mutate(java), lambda: m.splice(java), lambda: m.swap(java)),
        "crash_selector": lambda: m.text(selectors),
        "api_values": m.hostile,
    }


#: The API target runs a whole agent per input: fewer of them keep the slow run within minutes.
SLOW_EXAMPLES = {"api_values": 3_000}


def _fuzz(name: str, examples: int) -> Meter:
    target, strategy = TARGETS[name]
    if target.setup is not None:
        target.setup()
    with metered(name) as meter:

        @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(strategy)
        def each(data: Any) -> None:
            run(meter, target, data)

        each()
    return meter


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_quick(name: str) -> None:
    """LIM-8: 100 Hypothesis inputs per decoder (40 whole runs for the API) on every run."""
    examples = 40 if name == "api_values" else 100
    meter = _fuzz(name, examples)
    assert meter.inputs >= examples


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_slow(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """LIM-8: 5 500 inputs per decoder (3 000 whole runs for the API; 107 500 in all) from the fast
    mutator, figures printed for the record."""
    examples = SLOW_EXAMPLES.get(name, 5_500)
    target = TARGETS[name][0]
    if target.setup is not None:
        target.setup()
    make = _slow_inputs(Mutator(seed=sorted(TARGETS).index(name)))[name]
    with metered(name) as meter:
        for _ in range(examples):
            data = make()
            try:
                run(meter, target, data)
            except AssertionError as exc:
                raise AssertionError(f"{name}: input {data!r:.300}") from exc
    assert meter.inputs == examples
    with capsys.disabled():
        print("\n" + meter.summary())
