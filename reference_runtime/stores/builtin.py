"""The built-in store schemes (spec KSTORE-6, STORE-17): ``memory:``, ``sqlite:PATH``,
``redis://HOST:PORT/DB`` and ``kafka://HOST:PORT/TOPIC``.

Each scheme's URL parser lives with its store (``memory.py``, ``sqlite.py``, ``redis_url.py``,
``kafka_url.py``); this module joins them to the stores. The store modules are imported only when a store is
opened, so registering these schemes imports no client library.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from .base import ActionStateStore, Capability
from .kafka_url import USAGE as KAFKA_USAGE
from .kafka_url import parse_kafka_url
from .memory import InMemoryStore, parse_memory_url
from .redis_url import USAGE as REDIS_USAGE
from .redis_url import parse_redis_url
from .scheme import InspectedState, Scratch, StoreScheme, StoreUrl
from .sqlite import SqliteStore, check_sqlite_url, drop_namespaces, parse_sqlite_url, read_states, require_path

if TYPE_CHECKING:
    from .kafka import KafkaStore

#: What every built-in store claims under ``durable certify``.
_BASE = frozenset({Capability.CORE, Capability.RESTART, Capability.CONCURRENT_WRITERS})


def unique_namespace() -> str:
    """A fresh namespace for an isolated store (a Redis key prefix, a SQLite table prefix)."""
    return f"durable_{uuid.uuid4().hex[:12]}"


# -- memory: ------------------------------------------------------------------------------------------------


def _memory_inspect(parsed: StoreUrl, timeout: float, namespace: str) -> Iterator[InspectedState]:
    raise StoreError("memory: lives inside the process that made it; inspect a sqlite:, redis:// or kafka:// store")


MEMORY = StoreScheme(
    name="memory",
    usage="memory:",
    parse=parse_memory_url,
    open=lambda parsed, timeout: InMemoryStore(),
    isolated=lambda parsed, timeout, scratch: (InMemoryStore(), ""),
    # The store object is the data: a restart in the same process keeps it.
    reopen=lambda store: store,
    inspect=_memory_inspect,
    capabilities=_BASE,
)

# -- sqlite:PATH ------------------------------------------------------------------------------------------

#: Separates the file from the table prefix in an isolated SQLite store's handle (prefixes have no '#').
_AT = "#"


def _sqlite_isolated(parsed: StoreUrl, timeout: float, scratch: Scratch) -> tuple[ActionStateStore, str]:
    path = Path(parsed.path) if parsed.path else scratch() / "durable.db"
    store = SqliteStore(path, namespace=unique_namespace(), timeout=timeout)
    return store, f"{path}{_AT}{store.namespace}"


def _sqlite_cleanup(parsed: StoreUrl, handles: list[str], timeout: float) -> None:
    by_file: dict[str, list[str]] = {}
    for handle in handles:
        path, _, namespace = handle.rpartition(_AT)
        by_file.setdefault(path, []).append(namespace)
    for path, namespaces in by_file.items():
        drop_namespaces(path, namespaces)


def _sqlite_reopen(store: ActionStateStore) -> ActionStateStore:
    assert isinstance(store, SqliteStore)
    store.close()
    return SqliteStore(store.path, namespace=store.namespace)


SQLITE = StoreScheme(
    name="sqlite",
    usage="sqlite:PATH",
    parse=parse_sqlite_url,
    open=lambda parsed, timeout: SqliteStore(require_path(parsed), timeout=timeout),
    isolated=_sqlite_isolated,
    cleanup=_sqlite_cleanup,
    reopen=_sqlite_reopen,
    check=lambda parsed, timeout: check_sqlite_url(parsed),
    inspect=lambda parsed, timeout, namespace: read_states(require_path(parsed)),
    capabilities=_BASE | {Capability.MID_WRITE_KILL},
)

# -- redis://HOST:PORT/DB -----------------------------------------------------------------------------------


def _redis_open(parsed: StoreUrl, timeout: float, namespace: str = "durable") -> ActionStateStore:
    from .redis import RedisStore

    return RedisStore.from_url(parsed.text, timeout=timeout, namespace=namespace)


def _redis_isolated(parsed: StoreUrl, timeout: float, scratch: Scratch) -> tuple[ActionStateStore, str]:
    namespace = unique_namespace()
    return _redis_open(parsed, timeout, namespace), namespace


def _redis_cleanup(parsed: StoreUrl, handles: list[str], timeout: float) -> None:
    from .redis import RedisStore, delete_namespaces

    server = RedisStore.from_url(parsed.text, timeout=timeout)
    try:
        delete_namespaces(server.client, handles, parsed.text)
    finally:
        server.close()


def _reopen_client(store: ActionStateStore) -> ActionStateStore:
    """A new client over the same namespace or topic, rebuilt from the start: a process restart."""
    again: ActionStateStore = store.reopen()  # type: ignore[attr-defined]
    store.close()
    return again


def _redis_check(parsed: StoreUrl, timeout: float) -> None:
    # A PING on the chosen database also catches a database number the server does not have.
    _redis_open(parsed, timeout).close()


def _redis_inspect(parsed: StoreUrl, timeout: float, namespace: str) -> Iterator[InspectedState]:
    from .redis import read_states as read_redis

    return read_redis(parsed.text, namespace, timeout)


REDIS = StoreScheme(
    name="redis",
    usage=REDIS_USAGE,
    parse=parse_redis_url,
    open=_redis_open,
    isolated=_redis_isolated,
    cleanup=_redis_cleanup,
    reopen=_reopen_client,
    client="redis",
    extra="redis",
    server=True,
    check=_redis_check,
    inspect=_redis_inspect,
    # A Kafka client cannot start in a forked child of a process that used one; Redis's can.
    capabilities=_BASE | {Capability.MID_WRITE_KILL},
)

# -- kafka://HOST:PORT/TOPIC --------------------------------------------------------------------------------


def _kafka_class(parsed: StoreUrl) -> type[KafkaStore]:
    """The store class of the URL's topic format (WIRE-1): native or Flink Agents'."""
    from .kafka_flink_format import FLINK_AGENTS

    if parsed.format == FLINK_AGENTS:
        from .kafka_flink import FlinkAgentsKafkaStore

        return FlinkAgentsKafkaStore
    from .kafka import KafkaStore

    return KafkaStore


def _kafka_open(parsed: StoreUrl, timeout: float) -> ActionStateStore:
    return _kafka_class(parsed).from_url(parsed.text, timeout=parsed.timeout or timeout)


def _kafka_isolated(parsed: StoreUrl, timeout: float, scratch: Scratch) -> tuple[ActionStateStore, str]:
    from .kafka_flink_format import NATIVE

    store = _kafka_class(parsed)(
        parsed.bootstrap,
        f"{parsed.path}-{uuid.uuid4().hex[:12]}",
        partitions=parsed.partitions or 4,
        timeout=parsed.timeout or timeout,
        format=parsed.format or NATIVE,
        **_flink_options(parsed),
    )
    return store, store.topic


def _flink_options(parsed: StoreUrl) -> dict[str, Any]:
    """The engine version a Flink Agents URL names (WIRE-12), for the store class that takes it."""
    return {"version": parsed.options["version"]} if "version" in parsed.options else {}


def _kafka_cleanup(parsed: StoreUrl, handles: list[str], timeout: float) -> None:
    from .kafka_topics import delete_topics

    delete_topics(parsed.bootstrap, handles, parsed.timeout or max(timeout, 10.0))


def _kafka_inspect(parsed: StoreUrl, timeout: float, namespace: str) -> Iterator[InspectedState]:
    store = _kafka_class(parsed).from_url(parsed.text, timeout=timeout, read_only=True)
    try:
        store.rebuild_state([])
        yield from store.inspect_states()
    finally:
        store.close()


KAFKA = StoreScheme(
    name="kafka",
    usage=f"{KAFKA_USAGE}[?format=flink-agents]",
    parse=parse_kafka_url,
    open=_kafka_open,
    isolated=_kafka_isolated,
    cleanup=_kafka_cleanup,
    reopen=_reopen_client,
    client="confluent_kafka",
    extra="kafka",
    server=True,
    inspect=_kafka_inspect,
    capabilities=_BASE,
)

#: The schemes every process knows, in the order error messages list them.
BUILTIN = (MEMORY, SQLITE, REDIS, KAFKA)
