"""Nothing a store acknowledges is refused when recovery reads it back (spec LIM-9, LIM-10): the codecs and
the native record writer run the readers' own limits on what they write, on every built-in store, with real
redis-server and Tansu. The limits are lowered for these tests so the records stay small."""

from __future__ import annotations

import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reference_runtime import (
    Agent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    ResultEncodeError,
    Runner,
    RunnerContext,
    action,
    set_decode_limits,
)
from reference_runtime.codecs import CloudpickleCodec, JavaStyleCodec
from reference_runtime.errors import (
    Location,
    PayloadLimitError,
    RecordLimitError,
    StoreFailedError,
    WriteLimitError,
)
from reference_runtime.records import ActionState, CallResult, MemoryUpdate
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import decode_call_result, decode_state, encode_call_result
from reference_runtime.stores.redis import RedisStore
from reference_runtime.stores.sqlite import SqliteStore

from .test_kafka_store import open_store

LIMIT = 64 * 1024
MB = 1024 * 1024


@pytest.fixture(autouse=True)
def small_limits() -> Iterator[None]:
    previous = set_decode_limits(max_payload_bytes=LIMIT)
    yield
    set_decode_limits(previous)


@pytest.fixture(params=["memory", "sqlite", "redis", "kafka"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], ActionStateStore]]:
    """A fresh store of each built-in kind, over a real server where the store has one."""
    made: list[Any] = []

    def make() -> ActionStateStore:
        kind = request.param
        store: Any
        if kind == "memory":
            store = InMemoryStore()
        elif kind == "sqlite":
            store = SqliteStore(tmp_path / f"{uuid.uuid4().hex}.db")
        elif kind == "redis":
            store = RedisStore.from_url(request.getfixturevalue("real_redis"), namespace=uuid.uuid4().hex)
        else:
            store = open_store(request.getfixturevalue("tansu"), f"durable-{uuid.uuid4().hex[:16]}")
        made.append(store)
        return store  # type: ignore[no-any-return]

    yield make
    for store in made:
        store.close()


SIZE: list[int] = []


def sized(n: int) -> bytes:
    return b"x" * SIZE[0]


class Big(Agent):
    """One durable call whose result is ``SIZE[0]`` bytes."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(len(ctx.durable_execute(sized, event.attributes["input"]))))


def test_a_result_over_the_payload_limit_is_refused_when_recorded(make_store: Callable[[], ActionStateStore]) -> None:
    """LIM-9: a result larger than max_payload_bytes used to be acknowledged (memory store), then recovery
    raised PayloadLimitError and the completed call could never be replayed. Now the call fails when its
    record is written, naming the call and the limit, and nothing unreadable is stored."""
    SIZE[:] = [LIMIT + 1]
    crash = FaultInjector([CrashAt(Phase.AFTER_RECORD)], must_fire=False)
    with pytest.raises(ResultEncodeError) as info:
        Runner(Big, make_store(), injector=crash).run([("k", 1)])
    message = str(info.value)
    assert "sized" in message and "call_index=0" in message and f"max_payload_bytes={LIMIT}" in message
    assert isinstance(info.value.__cause__, WriteLimitError)
    assert not crash.fired, "the record was acknowledged"


def test_a_payload_whose_record_is_over_the_limit_is_refused_at_write(
    make_store: Callable[[], ActionStateStore],
) -> None:
    """LIM-9: a payload under max_payload_bytes whose native record (base64, 4/3 of it) is over the limit used
    to be written by SQLite and Redis and refused at recovery (the 12.5 MB of issue 28 at the default
    limit). Now the store refuses the write, naming the call and the limit; the memory store keeps records
    unencoded and replays it."""
    SIZE[:] = [LIMIT - 100]
    store = make_store()
    crash = FaultInjector([CrashAt(Phase.AFTER_RECORD)], must_fire=False)
    if isinstance(store, InMemoryStore):
        result = Runner(Big, store, injector=crash).run([("k", 1)])
        assert result.outputs == {"k": [LIMIT - 100]} and crash.fired  # recorded, crashed, replayed
        return
    with pytest.raises(StoreFailedError) as info:
        Runner(Big, store, injector=crash).run([("k", 1)])
    error = info.value
    assert error.operation == "put_call_results" and error.location.call_index == 0
    assert isinstance(error.cause, WriteLimitError) and f"max_payload_bytes={LIMIT}" in str(error)
    assert not crash.fired, "the record was acknowledged"


def test_records_at_the_limit_are_written_and_read_back(make_store: Callable[[], ActionStateStore]) -> None:
    """LIM-9: the write limit is the read limit, not below it: the largest payload a native record holds is
    written, and recovery replays it."""
    SIZE[:] = [(LIMIT - 200) * 3 // 4]
    crash = FaultInjector([CrashAt(Phase.AFTER_RECORD)])
    result = Runner(Big, make_store(), injector=crash).run([("k", 1)])
    assert result.outputs == {"k": [SIZE[0]]} and crash.fired and result.failovers == 1


def test_an_action_state_recovery_could_not_read_is_refused_at_put(make_store: Callable[[], ActionStateStore]) -> None:
    """LIM-9: a state whose header is over the record limit (large memory updates) is refused by ``put``
    with its location, and the store keeps what it held."""
    store = make_store()
    ref = _ref()
    store.put(ref, ActionState(task_event=ref.event))
    big = ActionState(task_event=ref.event, short_term_memory_updates=[MemoryUpdate("m", "y" * LIMIT)])
    with pytest.raises(WriteLimitError) as info:
        store.put(ref, big)
    assert (info.value.key, info.value.seq, info.value.action) == ("k", 0, "work")
    assert "max_payload_bytes" in str(info.value)
    kept = store.get(ref)
    assert kept is not None and kept.short_term_memory_updates == []


def _ref() -> Any:
    from conformance.store_suite import ref

    return ref("k", 0)


def test_codecs_refuse_what_they_could_not_read() -> None:
    """LIM-9: both codecs refuse at write the payload their decoder would refuse; at the limit they write."""
    with pytest.raises(WriteLimitError, match=f"max_payload_bytes={LIMIT}"):
        CloudpickleCodec().encode_result(b"x" * LIMIT)
    with pytest.raises(WriteLimitError, match=f"max_payload_bytes={LIMIT}"):
        JavaStyleCodec().encode_result("x" * LIMIT)
    with pytest.raises(WriteLimitError, match="max_int_digits"):
        CloudpickleCodec().encode_result(10**5000)
    with pytest.raises(WriteLimitError, match="max_container_len=10"):
        CloudpickleCodec(limits=_limits(max_container_len=10)).encode_result(list(range(11)))
    payload = CloudpickleCodec().encode_result(b"x" * (LIMIT - 100))
    assert CloudpickleCodec().decode_result(payload) == b"x" * (LIMIT - 100)


def _limits(**changes: Any) -> Any:
    from dataclasses import replace

    from reference_runtime import decode_limits

    return replace(decode_limits(), **changes)


def test_pickles_are_budgeted_by_what_they_build() -> None:
    """LIM-2: the memory budget counts what each opcode builds; a 10 MB bytes or text result (once refused
    as 'may use more than max_memory_bytes' past 700 KB) is read, a pickle of 100 000 empty lists is not."""
    set_decode_limits(max_payload_bytes=16 * MB)
    codec = CloudpickleCodec()
    for value in (b"x" * (10 * MB), "y" * (10 * MB), "é" * (4 * MB)):
        assert codec.decode_result(codec.encode_result(value)) == value
    lists = b"\x80\x05]" + b"]a" * 400_000 + b"."
    with pytest.raises(PayloadLimitError, match="max_memory_bytes"):
        codec.decode_result(lists)


# -- bounded JSON (LIM-10) ------------------------------------------------------------------------------
def _peak(decode: Callable[[bytes], Any], data: bytes) -> tuple[BaseException | None, int]:
    tracemalloc.start()
    try:
        decode(data)
        error: BaseException | None = None
    except Exception as exc:
        error = exc
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return error, peak


def test_json_of_nested_empty_lists_is_refused_within_the_budget() -> None:
    """LIM-10: a 15 MB native header of nested empty lists peaked at 774 MB (and 5.7-13 s); a Java-codec
    payload the same. The document's cost is bounded before it is parsed."""
    set_decode_limits(max_payload_bytes=16 * MB)
    lists = "[" + ",".join(["[[]]"] * 3_000_000) + "]"
    header = (
        '{"v":1,"taskEvent":null,"sensory":[],"shortTerm":[["a",' + lists + ',false]],"outputs":[],"completed":false}'
    ).encode()
    assert len(header) > 14 * MB
    error, peak = _peak(lambda d: decode_state(d, Location("k", 1, "a")), header)
    assert isinstance(error, RecordLimitError) and "max_memory_bytes" in str(error) and error.key == "k"
    assert peak < 96 * MB, peak
    error, peak = _peak(JavaStyleCodec().decode_result, lists.encode())
    assert isinstance(error, PayloadLimitError) and "max_memory_bytes" in str(error)
    assert peak < 96 * MB, peak


def test_a_large_call_record_within_the_budget_is_read() -> None:
    """LIM-10: the budget is what parsing costs, not the size: a call record of 12 MB (a 9 MB payload) reads."""
    set_decode_limits(max_payload_bytes=16 * MB)
    record = CallResult.succeeded("f", "d", b"z" * (9 * MB))
    body = encode_call_result(record, _ref(), 0)
    error, peak = _peak(lambda d: decode_call_result(d, Location("k", 0, "a", 0)), body)
    assert error is None and peak < 96 * MB


class Receipt:
    """A result class nothing allow-lists."""

    def __init__(self, n: int) -> None:
        self.n = n


def receipt(n: int) -> Receipt:
    return Receipt(n)


class Receipts(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(receipt, event.attributes["input"]).n))


def test_a_result_the_restricted_loader_refuses_is_refused_when_recorded() -> None:
    """PAY-9: a result of a class the default codec's loader does not admit used to be recorded, and only a
    recovery found it unreadable (UntrustedPayloadError): the crash-free run passed. It is refused at once,
    naming the class and the fix; allow-listed, it records and replays."""
    with pytest.raises(ResultEncodeError, match=r"test_write_limits\.Receipt.*allowed_classes") as info:
        Runner(Receipts).run([("k", 3)])
    assert "call_index=0" in str(info.value)
    codec = CloudpickleCodec(allowed_classes=[f"{__name__}.Receipt"])
    crash = FaultInjector([CrashAt(Phase.AFTER_RECORD)])
    assert Runner(Receipts, codec=codec, injector=crash).run([("k", 3)]).outputs == {"k": [3]}
