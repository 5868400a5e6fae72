"""Client errors the Kafka client recovers from by itself (a dropped connection: "Broker transport failure")
do not fail a replay or an offset read; a broker that stays away still fails within the timeout, and any
other error still fails at once (KSTORE-10, KSTORE-7).

Under load, a connection the consumer had open could drop while a fetch was in flight; librdkafka then hands
the replay an error event and reconnects. The replay used to stop there ("replay failed: ... Broker
transport failure"), which the conformance kit's model-based test reported as a flaky store."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.store_suite import ref
from reference_runtime.errors import StoreError
from reference_runtime.records import ActionState

ck = pytest.importorskip("confluent_kafka")

FORMATS = ["native", "flink-agents"]


class ErrorEvent:
    """What ``Consumer.consume()`` returns for a client error: a message with no partition and an error."""

    def __init__(self, err: Any) -> None:
        self._err = err

    def error(self) -> Any:
        return self._err

    def partition(self) -> int:
        return -1

    def offset(self) -> int:
        return -1


class InjectingConsumer:
    """The store's consumer, with ``errors`` handed out first: each consume() returns the next one as an
    error event before the real messages, each watermark read raises the next one first. ``forever``
    repeats the last error on every call."""

    def __init__(self, real: Any, errors: list[Any], *, forever: bool = False) -> None:
        self.real = real
        self.consume_errors = list(errors)
        self.watermark_errors = list(errors)
        self.forever = forever

    def _next(self, queue: list[Any]) -> Any:
        if not queue:
            return None
        return queue[0] if self.forever else queue.pop(0)

    def consume(self, *args: Any, **kwargs: Any) -> list[Any]:
        err = self._next(self.consume_errors)
        return [ErrorEvent(err)] if err is not None else self.real.consume(*args, **kwargs)

    def get_watermark_offsets(self, *args: Any, **kwargs: Any) -> Any:
        err = self._next(self.watermark_errors)
        if err is not None:
            raise ck.KafkaException(err)
        return self.real.get_watermark_offsets(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def transport_failure(*, fatal: bool = False) -> Any:
    return ck.KafkaError(ck.KafkaError._TRANSPORT, "Broker transport failure", fatal=fatal)


@pytest.fixture(params=FORMATS)
def store(request: pytest.FixtureRequest, tansu: str) -> Iterator[Any]:
    from reference_runtime.stores.kafka import KafkaStore
    from reference_runtime.stores.kafka_flink import FlinkAgentsKafkaStore

    cls = KafkaStore if request.param == "native" else FlinkAgentsKafkaStore
    s = cls(tansu, f"durable-transient-{uuid.uuid4().hex[:12]}", timeout=2.0)
    for key in ("a", "b", "c"):
        s.put(ref(key, 0), ActionState())
    yield s
    s._consumer = getattr(s._consumer, "real", s._consumer)
    s.close()


def test_a_dropped_connection_during_a_rebuild_is_recovered_from(store: Any) -> None:
    """KSTORE-10: two transport failures in the replay's stream and in its offset reads: the rebuild goes on
    (the client reconnects) and every state is read back; the error is kept as the last client error."""
    marker = store.get_recovery_marker()
    store._consumer = InjectingConsumer(store._consumer, [transport_failure(), transport_failure()])
    store.rebuild_state([marker])
    assert all(store.get(ref(key, 0)) is not None for key in ("a", "b", "c"))
    assert "Broker transport failure" in str(store._last_error)
    assert store._consumer.consume_errors == [] and store._consumer.watermark_errors == []  # both were met


def test_a_broker_that_stays_away_still_fails_within_the_timeout(store: Any) -> None:
    """KSTORE-10, KSTORE-7: transport failures that never stop fail the rebuild after the store's timeout,
    naming the URL and the last client error; the states read before are kept."""
    store._consumer = InjectingConsumer(store._consumer, [transport_failure()], forever=True)
    with pytest.raises(StoreError, match="Broker transport failure") as info:
        store.rebuild_state([])
    assert store.url in str(info.value)
    assert store.get(ref("a", 0)) is not None


@pytest.mark.parametrize(
    "err",
    [
        transport_failure(fatal=True),
        ck.KafkaError(ck.KafkaError.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed"),
    ],
    ids=["fatal transport failure", "authorization"],
)
def test_any_other_client_error_fails_the_rebuild_at_once(store: Any, err: Any) -> None:
    """KSTORE-10: a fatal error, or one the client does not recover from, is not waited out: the rebuild
    fails on it, naming it."""
    store._consumer = InjectingConsumer(store._consumer, [err], forever=True)
    with pytest.raises(StoreError, match=str(err.str())):
        store.rebuild_state([])
