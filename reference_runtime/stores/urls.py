"""Store URLs (spec KSTORE-6, KSTORE-7): ``memory:``, ``sqlite:PATH``, ``redis://HOST:PORT/DB``,
``kafka://HOST:PORT/TOPIC``. Malformed URLs raise :class:`~reference_runtime.errors.StoreUrlError`;
unreachable servers raise :class:`~reference_runtime.errors.StoreError` within ``timeout`` seconds, naming
the URL and the cause."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import StoreUrlError
from .base import ActionStateStore

SCHEMES = ("memory:", "sqlite:PATH", "redis://HOST:PORT/DB", "kafka://HOST:PORT/TOPIC")
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store URL."""

    scheme: str
    host: str = ""
    port: int = 0
    path: str = ""
    db: int = 0

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def parse_store_url(url: str) -> StoreUrl:
    """Check and split ``url``; every problem is a :class:`StoreUrlError` that quotes the URL."""
    if not isinstance(url, str) or not url:
        raise StoreUrlError(f"store URL {url!r} is empty; expected one of {', '.join(SCHEMES)}")
    if url in ("memory:", "memory"):
        return StoreUrl("memory")
    if url.startswith("sqlite:"):
        path = url[len("sqlite:"):]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise StoreUrlError(f"store URL {url!r}: sqlite: needs a file path (sqlite:PATH)")
        return StoreUrl("sqlite", path=path)
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "kafka"):
        raise StoreUrlError(f"store URL {url!r}: unknown scheme; expected one of {', '.join(SCHEMES)}")
    try:
        port = parts.port
    except ValueError as exc:
        raise StoreUrlError(f"store URL {url!r}: bad port ({exc})") from None
    if not parts.hostname:
        raise StoreUrlError(f"store URL {url!r}: no host")
    if port is None:
        port = 6379 if parts.scheme == "redis" else 9092
    rest = parts.path.strip("/")
    if parts.scheme == "redis":
        if rest and not rest.isdigit():
            raise StoreUrlError(f"store URL {url!r}: the database must be a number (redis://HOST:PORT/DB)")
        return StoreUrl("redis", parts.hostname, port, db=int(rest or 0))
    if not _TOPIC.match(rest):
        raise StoreUrlError(f"store URL {url!r}: needs a topic name of letters, digits, '.', '_' or '-' "
                            "(kafka://HOST:PORT/TOPIC)")
    return StoreUrl("kafka", parts.hostname, port, path=rest)


def open_store(url: str, *, timeout: float = 5.0, isolated: bool = False) -> ActionStateStore:
    """Open the store ``url`` names. ``isolated`` gives a fresh, empty store on shared servers (a unique
    Redis namespace or Kafka topic), as the test fixtures need."""
    parsed = parse_store_url(url)
    if parsed.scheme == "memory":
        from .memory import InMemoryStore

        return InMemoryStore()
    if parsed.scheme == "sqlite":
        from .sqlite import SqliteStore

        path = Path(parsed.path)
        if isolated:
            path.mkdir(parents=True, exist_ok=True)
            path = path / f"{uuid.uuid4().hex}.db"
        return SqliteStore(path)
    suffix = uuid.uuid4().hex[:12]
    if parsed.scheme == "redis":
        from .redis import RedisStore

        store = RedisStore.from_url(f"redis://{parsed.bootstrap}/{parsed.db}", timeout=timeout,
                                    namespace=f"durable-{suffix}" if isolated else "durable")
        return store
    from .kafka import KafkaStore

    topic = f"{parsed.path}-{suffix}" if isolated else parsed.path
    query = urlsplit(url).query  # ?format=…, ?partitions=… are the Kafka store's own options
    return KafkaStore.from_url(f"kafka://{parsed.bootstrap}/{topic}" + (f"?{query}" if query else ""),
                               timeout=timeout)
