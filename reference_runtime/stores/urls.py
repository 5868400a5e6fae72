"""Store URLs (spec KSTORE-6, KSTORE-7, STORE-10): ``memory:``, ``sqlite:PATH``, ``redis://HOST:PORT/DB``,
``kafka://HOST:PORT/TOPIC[?partitions=N&timeout=S&format=F]`` (``format`` is ``native``, the default, or
``flink-agents``: Flink Agents' own topic format, spec WIRE-1).

:func:`parse_store_url` is the one parser every entry point uses (``open_store``, the stores' own
``from_url``, the pytest plugin's ``--durable-store``, ``durable certify --store``, the conformance kit's
``factory_from_url``): whatever the text, it returns a :class:`StoreUrl` or raises
:class:`~reference_runtime.errors.StoreUrlError` quoting the URL. :func:`check_store` goes one step
further without opening a store: the client package is installed (else the ``pip install`` line) and
the server answers a TCP connection within ``timeout`` seconds.
"""

from __future__ import annotations

import importlib.util
import re
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..errors import StoreError, StoreUrlError
from .base import ActionStateStore

SCHEMES = ("memory:", "sqlite:PATH", "redis://HOST:PORT/DB", "kafka://HOST:PORT/TOPIC")
TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_DIGITS = re.compile(r"^[0-9]{1,10}$")
#: Redis numbers its databases with a C int.
MAX_REDIS_DB = 2**31 - 1
#: scheme -> (module to import, extra that installs it)
EXTRAS = {"redis": ("redis", "redis"), "kafka": ("confluent_kafka", "kafka")}


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store URL. ``path`` is the SQLite file (empty: a temporary one) or the Kafka topic."""

    text: str
    scheme: str
    host: str = ""
    port: int = 0
    path: str = ""
    db: int = 0
    partitions: int | None = None
    timeout: float | None = None
    format: str | None = None

    @property
    def bootstrap(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 literal
        return f"{host}:{self.port}"

    @property
    def server(self) -> bool:
        return self.scheme in EXTRAS


def _bad(url: str, why: str) -> StoreUrlError:
    return StoreUrlError(f"store URL {url!r}: {why}")


def parse_store_url(url: object) -> StoreUrl:
    """Check and split ``url`` without touching the network; every problem is a :class:`StoreUrlError`
    that quotes the URL and says what is expected."""
    if not isinstance(url, str):
        raise StoreUrlError(
            f"store URL must be a string, got {type(url).__name__}; expected one of {', '.join(SCHEMES)}"
        )
    if not url:
        raise StoreUrlError(f"store URL is empty; expected one of {', '.join(SCHEMES)}")
    if "\x00" in url:
        raise _bad(url, "contains a NUL character")
    if url in ("memory:", "memory"):
        return StoreUrl(url, "memory")
    if url.startswith("sqlite:"):
        path = url[len("sqlite:") :]
        return StoreUrl(url, "sqlite", path=path[2:] if path.startswith("//") else path)
    scheme = url.partition(":")[0]
    if scheme not in EXTRAS:
        raise _bad(url, f"unknown scheme; expected one of {', '.join(SCHEMES)}")
    if not url.isascii():
        bad = next(c for c in url if not c.isascii())
        raise _bad(url, f"character {bad!r} at position {url.index(bad)} is not ASCII; type the URL in ASCII")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise _bad(url, f"{exc}; expected {scheme}://HOST:PORT/…") from None
    if parts.username is not None or parts.password is not None or parts.fragment:
        raise _bad(url, "credentials and fragments are not supported")
    if not parts.hostname:
        raise _bad(url, f"no host; expected {scheme}://HOST:PORT/…")
    if scheme == "redis":
        if parts.query:
            raise _bad(url, "takes no options; expected redis://HOST:PORT/DB")
        db = parts.path.strip("/") or "0"
        if not _DIGITS.match(db) or int(db) > MAX_REDIS_DB:
            raise _bad(url, f"the database must be a number from 0 to {MAX_REDIS_DB} (redis://HOST:PORT/DB)")
        return StoreUrl(url, "redis", parts.hostname, 6379 if port is None else port, db=int(db))
    if port is None:
        raise _bad(url, "no port; expected kafka://HOST:PORT/TOPIC")
    topic = parts.path[1:] if parts.path.startswith("/") else ""
    if not TOPIC.match(topic) or topic in (".", ".."):
        raise _bad(url, "the path must be one topic name of letters, digits, '.', '_' or '-' (kafka://HOST:PORT/TOPIC)")
    partitions, timeout, fmt = _kafka_options(url, parts.query)
    return StoreUrl(url, "kafka", parts.hostname, port, path=topic, partitions=partitions, timeout=timeout, format=fmt)


def _kafka_options(url: str, query: str) -> tuple[int | None, float | None, str | None]:
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise _bad(url, f"bad query: {exc}") from None
    values: dict[str, str] = {}
    for name, given in fields.items():
        if name not in ("partitions", "timeout", "format"):
            raise _bad(url, f"unknown option {name!r} (known: partitions, timeout, format)")
        if len(given) != 1:
            raise _bad(url, f"{name} given {len(given)} times")
        values[name] = given[0]
    partitions = timeout = None
    if "partitions" in values:
        if not _DIGITS.match(values["partitions"]) or not 1 <= int(values["partitions"]) <= 100_000:
            raise _bad(url, "bad partitions: expected a whole number from 1 to 100000")
        partitions = int(values["partitions"])
    if "timeout" in values:
        try:
            timeout = float(values["timeout"])
        except ValueError:
            timeout = -1.0
        if not 0 < timeout <= 3600:
            raise _bad(url, "bad timeout: expected seconds, more than 0 and at most 3600")
    fmt = values.get("format")
    if fmt is not None:
        from .kafka_flink_format import FORMATS

        if fmt not in FORMATS:
            raise _bad(url, f"bad format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return partitions, timeout, fmt


def require_client(parsed: StoreUrl) -> None:
    """Raise :class:`StoreError` with the install line when the client package of ``parsed`` is missing."""
    if parsed.scheme in EXTRAS:
        module, extra = EXTRAS[parsed.scheme]
        if importlib.util.find_spec(module) is None:
            raise StoreError(
                f"store URL {parsed.text!r} needs the {module} package: pip install 'pytest-durable[{extra}]'"
            )


def check_store(url: str, *, timeout: float = 5.0) -> StoreUrl:
    """Parse ``url`` and check, without opening a store, that it can be opened: the client package is
    installed, a SQLite path is not a directory, a server accepts a TCP connection within ``timeout``
    seconds. Raises :class:`StoreUrlError` or :class:`StoreError` naming the URL and the fix."""
    parsed = parse_store_url(url)
    if parsed.scheme == "sqlite" and parsed.path and Path(parsed.path).is_dir():
        raise StoreError(f"store URL {url!r}: {parsed.path} is a directory; sqlite:PATH names one database file")
    if parsed.scheme == "sqlite" and parsed.path and not Path(parsed.path).parent.is_dir():
        # A mistyped path must not leave a tree of new directories and an empty database behind.
        raise StoreError(
            f"store URL {url!r}: the directory {Path(parsed.path).parent} does not exist; "
            "create it or name a file in an existing directory"
        )
    if not parsed.server:
        return parsed
    require_client(parsed)
    try:
        with socket.create_connection((parsed.host, parsed.port), timeout=timeout):
            pass
    except OSError as exc:
        raise StoreError(f"cannot reach store {url}: {exc} (is the server running?)") from None
    if parsed.scheme == "redis":
        # A PING on the chosen database also catches a database number the server does not have.
        from .redis import RedisStore

        RedisStore.from_url(url, timeout=timeout).close()
    return parsed


def open_store(url: str, *, timeout: float = 5.0, isolated: bool = False) -> ActionStateStore:
    """Open the store ``url`` names. ``isolated`` gives a fresh, empty store on shared storage (a unique
    Redis namespace, Kafka topic or SQLite table prefix in the one file), as the test fixtures need."""
    parsed = parse_store_url(url)
    if parsed.scheme == "memory":
        from .memory import InMemoryStore

        return InMemoryStore()
    if parsed.scheme == "sqlite":
        from .sqlite import SqliteStore

        if not parsed.path:
            raise _bad(url, "sqlite: needs a file path (sqlite:PATH)")
        return SqliteStore(parsed.path, namespace=unique_namespace() if isolated else "")
    require_client(parsed)
    if parsed.scheme == "redis":
        from .redis import RedisStore

        return RedisStore.from_url(url, timeout=timeout, namespace=unique_namespace() if isolated else "durable")
    from .kafka import KafkaStore
    from .kafka_flink_format import NATIVE

    if isolated:
        topic = f"{parsed.path}-{uuid.uuid4().hex[:12]}"
        return KafkaStore(
            parsed.bootstrap,
            topic,
            partitions=parsed.partitions or 4,
            timeout=parsed.timeout or timeout,
            format=parsed.format or NATIVE,
        )
    return KafkaStore.from_url(url, timeout=parsed.timeout or timeout)


def unique_namespace() -> str:
    """A fresh namespace for an isolated store (a Redis key prefix, a SQLite table prefix)."""
    return f"durable_{uuid.uuid4().hex[:12]}"
