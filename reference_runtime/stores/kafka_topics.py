"""Topic administration and the reachability probe of the Kafka stores (client I/O; KSTORE-3, KSTORE-7)."""

from __future__ import annotations

import importlib
import logging
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import StoreError

_LOG = logging.getLogger("reference_runtime.stores.kafka")


def probe(bootstrap: str, timeout: float) -> str | None:
    """Try a TCP connection to each bootstrap server; None if one answers, else why none did. A refused
    connection fails at once, before any client waits out its metadata timeout (KSTORE-7)."""
    reasons = []
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return None
        except (OSError, ValueError) as exc:
            reasons.append(f"{server.strip()}: {exc}")
    return "; ".join(reasons)


def delete_topics(bootstrap: str, topics: Sequence[str], timeout: float = 10.0, *, admin: Any = None) -> None:
    """Delete ``topics`` on the broker (what the test fixtures made); raise :class:`StoreError` naming the
    first topic that could not be deleted."""
    if not topics:
        return
    try:
        if admin is None:
            from confluent_kafka import admin as kafka_admin

            config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _LOG}
            admin = kafka_admin.AdminClient(config)
        futures = admin.delete_topics(list(topics), request_timeout=timeout)
        for topic in topics:
            try:
                futures[topic].result(timeout)
            except Exception as exc:  # the admin client raises KafkaException or a future's own errors
                raise StoreError(f"cannot delete topic {topic!r} of Kafka store kafka://{bootstrap}: {exc}") from exc
    except ImportError as exc:
        raise StoreError(f"cannot delete Kafka topics on {bootstrap}: confluent-kafka is not installed") from exc


def ensure_topic(
    admin: Any,
    topic: str,
    partitions: int,
    *,
    url: str,
    timeout: float,
    read_only: bool,
    last_error: Callable[[], str | None],
) -> tuple[int, bool]:
    """Create ``topic`` if it is missing (never when ``read_only``) and wait until it has partitions:
    ``(partition count, compacted)``. An existing topic keeps its partition count."""
    try:
        metadata = admin.list_topics(timeout=timeout)
    except Exception as exc:  # KafkaException: broker down, timed out
        raise StoreError(f"cannot reach Kafka store {url}: {exc} (last client error: {last_error()})") from exc
    compacted = True
    if topic not in metadata.topics:
        if read_only:
            raise StoreError(f"Kafka store {url}: topic {topic!r} does not exist")
        compacted = _create_topic(admin, topic, partitions, url=url, timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:
        try:
            topic_md = admin.list_topics(topic=topic, timeout=timeout).topics.get(topic)
        except Exception as exc:
            raise StoreError(f"cannot read metadata of Kafka store {url}: {exc}") from exc
        if topic_md is not None and topic_md.error is None and topic_md.partitions:
            return len(topic_md.partitions), compacted
        if time.monotonic() > deadline:
            error = topic_md.error if topic_md is not None else "topic missing"
            raise StoreError(f"Kafka store {url}: topic {topic!r} is not available: {error}")
        time.sleep(0.05)


def _create_topic(admin: Any, topic: str, partitions: int, *, url: str, timeout: float) -> bool:
    """Create a compacted topic; if the broker refuses the config, one without it (the store is still
    correct, the log just grows). True when the topic is compacted (or was created concurrently)."""
    from confluent_kafka import KafkaError

    # NewTopic is not in the admin module's typed exports.
    kafka_admin: Any = importlib.import_module("confluent_kafka.admin")

    for config in ({"cleanup.policy": "compact"}, None):
        new = kafka_admin.NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config or {})
        try:
            admin.create_topics([new], request_timeout=timeout)[topic].result(timeout)
            return config is not None
        except Exception as exc:
            err: Any = exc.args[0] if exc.args else None
            code = err.code() if hasattr(err, "code") else None
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                return True  # created concurrently (another process or worker)
            if config is not None and code in (KafkaError.INVALID_CONFIG, KafkaError.POLICY_VIOLATION):
                _LOG.warning(
                    "Kafka store %s: broker refused cleanup.policy=compact (%s); the topic is created without it",
                    url,
                    exc,
                )
                continue
            raise StoreError(f"cannot create topic for Kafka store {url}: {exc}") from exc
    raise AssertionError("unreachable: the second attempt returns or raises")


#: A topic id of all zeros: what a broker without topic ids reports.
_NO_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def topic_id(admin: Any, topic: str, timeout: float, url: str) -> str | None:
    """The id the broker gives ``topic`` (it changes when the topic is deleted and created again), ``""`` when
    the topic does not exist, or None when the broker or client reports no topic ids (FAIL-6)."""
    from confluent_kafka import KafkaError, TopicCollection

    try:
        description = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout)[topic].result(timeout)
    except Exception as exc:  # KafkaException with the broker's error, or a client without DescribeTopics
        err: Any = exc.args[0] if exc.args else None
        code = err.code() if hasattr(err, "code") else None
        if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return ""
        if code in (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION):
            return None
        reason = err.str() if hasattr(err, "str") else str(exc) or type(exc).__name__
        raise StoreError(f"Kafka store {url}: cannot read the id of topic {topic!r}: {reason}") from exc
    found = str(description.topic_id) if description.topic_id is not None else _NO_ID
    return None if found == _NO_ID else found
