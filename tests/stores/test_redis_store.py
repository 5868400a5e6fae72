"""The Redis store on fakeredis and on a real redis-server started by the suite (KSTORE-2, KSTORE-6,
KSTORE-7, STORE-*), and certified by the conformance kit."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
import redis

from conformance import StoreConformance, StoreFactory
from reference_runtime.errors import CorruptRecordError, StoreError, StoreUrlError
from reference_runtime.events import InputEvent
from reference_runtime.records import ActionRef, ActionState, CallResult, StateRef
from reference_runtime.stores.redis import RedisStore
from reference_runtime.stores.urls import open_store
from tests.stores.redis_server import free_port

ACTION = ActionRef("act", "m", "A.act", ("_input_event",))
NAMES = itertools.count()


def ref(key: str = "k", seq: int = 0) -> StateRef:
    return StateRef(key, seq, ACTION, InputEvent(seq), f"{key}_{seq}_act")


@pytest.fixture(params=["fakeredis", "real"])
def client(request: pytest.FixtureRequest) -> Iterator[redis.Redis[bytes]]:
    if request.param == "fakeredis":
        yield fakeredis.FakeRedis()
        return
    url = request.getfixturevalue("real_redis")
    c = redis.Redis.from_url(url)
    yield c
    c.close()


@pytest.fixture
def store(client: redis.Redis[bytes]) -> RedisStore:
    return RedisStore(client, namespace=f"t{next(NAMES)}-{time.monotonic_ns()}")


def test_put_get_and_call_deltas(store: RedisStore) -> None:
    """STORE-1, STORE-5, KSTORE-2: a state and its call results round-trip; slots overwrite or append."""
    r = ref()
    store.put(r, ActionState(task_event=r.event))
    store.put_call_results(r, 0, [CallResult.pending("f", "d")])
    store.put_call_results(r, 0, [CallResult.succeeded("f", "d", b"1"), CallResult.succeeded("g", "e", b"2")])
    got = store.get(r)
    assert got is not None and got.task_event == r.event
    assert [(c.function_id, c.result_payload) for c in got.call_results] == [("f", b"1"), ("g", b"2")]
    store.truncate_call_results(r, 1)
    got = store.get(r)
    assert got is not None and [c.function_id for c in got.call_results] == ["f"]


def test_gap_and_missing_state_are_refused_with_location(store: RedisStore) -> None:
    """STORE-5: a write that would leave a gap, or has no state, fails naming key, seq, action, index."""
    r = ref()
    with pytest.raises(StoreError, match=r"no action state.*key='k', seq=0, action='act', call_index=0"):
        store.put_call_results(r, 0, [CallResult.succeeded("f", "d", b"")])
    store.put(r, ActionState())
    with pytest.raises(StoreError, match="gap after 0 records"):
        store.put_call_results(r, 2, [CallResult.succeeded("f", "d", b"")])


def test_miss_hides_later_states_and_prune_drops_earlier(store: RedisStore) -> None:
    """STORE-3, STORE-4: a miss removes larger sequence numbers of the key; prune drops seq <= n."""
    for seq in (0, 1, 3):
        store.put(ref(seq=seq), ActionState())
    assert store.get(ref(seq=2)) is None
    assert store.get(ref(seq=3)) is None, "seq 3 belongs to an execution that diverged at seq 2"
    store.prune_state("k", 0)
    assert store.get(ref(seq=1)) is not None
    assert store.get(ref(seq=0)) is None


def test_a_new_client_sees_everything(store: RedisStore) -> None:
    """STORE-6: a reopened store (a process restart) reads what was written; the marker counts writes."""
    r = ref()
    store.put(r, ActionState(call_results=[CallResult.failed("f", "d", b"x")]))
    marker = store.get_recovery_marker()
    again = RedisStore(store.client, namespace=store.namespace)
    again.rebuild_state([marker])
    got = again.get(r)
    assert got is not None and got.call_results[0].exception_payload == b"x"
    assert marker["writes"] >= 1


def test_corrupt_bytes_name_the_location(store: RedisStore) -> None:
    """STORE-7: a record planted with garbage is a CorruptRecordError naming key, seq and action."""
    r = ref()
    store.put(r, ActionState())
    store.client.hset(f"{store.namespace}:state:{r.state_key}", "header", b"{not json")
    with pytest.raises(CorruptRecordError, match="key='k', seq=0, action='act'"):
        store.get(r)
    store.client.hset(f"{store.namespace}:state:{r.state_key}", "header", b"{}")
    store.client.rpush(f"{store.namespace}:calls:{r.state_key}", b"\xff\xfe")
    with pytest.raises(CorruptRecordError):
        store.get(r)


def test_unreachable_server_fails_fast_naming_the_url() -> None:
    """KSTORE-7: a closed port fails within the timeout with the URL in the message."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    start = time.monotonic()
    with pytest.raises(StoreError, match=url.replace(".", r"\.")):
        open_store(url, timeout=1.0)
    assert time.monotonic() - start < 6


@pytest.mark.parametrize(
    "url", ["redis://host:notaport/0", "redis:///0", "redis://h:1/db", "ftp://x", "kafka://h:1/", "sqlite:", ""]
)
def test_malformed_urls_are_refused(url: str) -> None:
    """KSTORE-6: malformed store URLs raise StoreUrlError quoting the URL."""
    with pytest.raises(StoreUrlError):
        open_store(url)


def test_open_store_by_url_on_a_real_server(real_redis: str) -> None:
    """KSTORE-6: redis://HOST:PORT/DB opens the store; isolated stores do not see each other."""
    a = open_store(real_redis, isolated=True)
    b = open_store(real_redis, isolated=True)
    a.put(ref(), ActionState())
    assert a.get(ref()) is not None and b.get(ref()) is None
    a.close()
    b.close()


def test_a_dropped_connection_is_retried_once_on_a_fresh_one(real_redis: str) -> None:
    """FAIL-2/KSTORE-2: when the server drops the store's connection, the write is retried once on a new
    connection (the store's scripts are idempotent) and lands exactly once."""
    store = open_store(real_redis, isolated=True)
    r = ref()
    store.put(r, ActionState(task_event=r.event))
    store.client.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    store.put_call_results(r, 0, [CallResult.succeeded("f", "d", b"1")])
    got = store.get(r)
    assert got is not None and [c.result_payload for c in got.call_results] == [b"1"]
    store.close()


class TestRedisConformance(StoreConformance):
    """CONF-1: the kit certifies the Redis store (fakeredis server, one namespace per store)."""

    @pytest.fixture(scope="session")
    @classmethod
    def durable_store_factory(cls) -> StoreFactory:
        server = fakeredis.FakeServer()

        def new() -> Any:
            return RedisStore(fakeredis.FakeRedis(server=server), namespace=f"c{next(NAMES)}")

        def reopen(s: Any) -> Any:
            return RedisStore(fakeredis.FakeRedis(server=server), namespace=s.namespace)

        return StoreFactory(
            new, reopen=reopen, capabilities={"core", "restart", "concurrent_writers"}, name="redis:fakeredis"
        )


def test_a_server_that_lost_its_scripts_still_takes_every_write(store: RedisStore) -> None:
    """KSTORE-2/COST-3: writes go out as one EVALSHA each; after SCRIPT FLUSH (a restarted server) the
    store loads the script again instead of failing."""
    store.put(ref(), ActionState(task_event=InputEvent(1)))
    store.client.script_flush()
    store.put_call_results(ref(), 0, [CallResult("f", "d", b"x")])
    store.client.script_flush()
    got = store.get(ref())
    assert got is not None and [c.result_payload for c in got.call_results] == [b"x"]
