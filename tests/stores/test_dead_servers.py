"""Servers that die, stall or lose their data under a run (spec FAIL-1, FAIL-2, FAIL-4). The time bounds
themselves are measured by ``benchmarks``-style scripts, not asserted here; these tests check that the
failure is one StoreFailedError naming the store and the operation, raised after one failed attempt."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import fakeredis
import pytest

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.errors import StoreDataLostError, StoreFailedError
from reference_runtime.stores.redis import RedisStore

from .redis_server import PrivateRedis

HOOK: list[Callable[[], None]] = []
#: Every call ``step`` ran, in order (tests of lost data check that nothing recorded runs again).
RAN: list[tuple[str, int]] = []


def step(key: str, n: int) -> int:
    RAN.append((key, n))
    if HOOK and n == 3:
        HOOK.pop()()  # the server dies while the run is in the middle of its inputs
    return n


class Steps(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(step, ctx.key, event.attributes["input"])))


@pytest.fixture
def private_redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server of this test's own, so it can be killed or paused; yields (url, process)."""
    try:
        server = PrivateRedis()
    except LookupError as exc:
        pytest.skip(str(exc))
    try:
        yield server.url, server.proc
    finally:
        server.stop()


@pytest.mark.parametrize("how", ["kill", "pause"])
def test_dead_or_stalled_redis_stops_the_run_with_one_error(
    private_redis: tuple[str, subprocess.Popen[bytes]], how: str
) -> None:
    """FAIL-1/FAIL-2: the run stops at the first failed store operation, naming the store, the operation
    and the cause; no other key is driven after it."""
    url, proc = private_redis
    store = RedisStore.from_url(url, timeout=0.5, namespace=uuid.uuid4().hex)
    HOOK[:] = [lambda: os.kill(proc.pid, signal.SIGKILL if how == "kill" else signal.SIGSTOP)]
    inputs = [(f"k{i}", i) for i in range(40)]
    with pytest.raises(StoreFailedError) as info:
        Runner(Steps, store).run(inputs)
    error = info.value
    assert error.store == url and error.operation in ("put_call_results", "put", "get")
    assert "the run stopped at the first store failure" in str(error)
    HOOK.clear()


@pytest.mark.parametrize("server", ["fakeredis", "real"])
def test_redis_that_lost_its_data_is_refused_on_recovery(server: str, request: pytest.FixtureRequest) -> None:
    """FAIL-4: a Redis restarted without persistence (here: flushed) comes back empty; recovering from it
    would run completed durable calls again, so rebuild_state refuses with StoreDataLostError."""
    if server == "real":
        client: Any = RedisStore.from_url(request.getfixturevalue("real_redis")).client
    else:
        client = fakeredis.FakeRedis()
    store = RedisStore(client, namespace=uuid.uuid4().hex)
    runner = Runner(Steps, store, checkpoint_every=2)
    runner.run([("a", 1), ("b", 2), ("a", 3), ("b", 4)])
    marker = runner.checkpoints[-1].markers[0]
    assert set(marker) == {"writes", "epoch"}
    store.rebuild_state([marker])  # intact data: accepted
    for name in client.scan_iter(f"{store.namespace}:*"):
        client.delete(name)
    with pytest.raises(StoreDataLostError, match=r"lost data.*appendonly yes"):
        runner.fail_over()
    # A marker taken on the emptied server starts a new epoch, which later recoveries accept.
    fresh = RedisStore(client, namespace=store.namespace)
    fresh.rebuild_state([fresh.get_recovery_marker()])


def test_redis_marker_without_epoch_checks_the_write_counter() -> None:
    """FAIL-4: markers of older versions carry only the write counter, which must not go backwards."""
    store = RedisStore(fakeredis.FakeRedis(), namespace="old")
    with pytest.raises(StoreDataLostError):
        store.rebuild_state([{"writes": 5}])
    store.rebuild_state([{"writes": 0}])


def test_dead_kafka_broker_stops_the_run_with_one_error() -> None:
    """FAIL-1/FAIL-2: a broker that dies mid-run is one StoreFailedError naming the topic's URL."""
    from .tansu import start_tansu

    started = start_tansu()
    if started is None:
        pytest.skip("Tansu broker unavailable")
    bootstrap, stop = started
    from reference_runtime.stores.kafka import KafkaStore

    store = KafkaStore(bootstrap, f"durable-{uuid.uuid4().hex[:16]}", timeout=2.0)
    HOOK[:] = [stop]
    try:
        with pytest.raises(StoreFailedError) as info:
            Runner(Steps, store).run([(f"k{i}", i) for i in range(20)])
        assert info.value.store == store.url
    finally:
        HOOK.clear()
        stop()
        with contextlib.suppress(Exception):
            store.close()
