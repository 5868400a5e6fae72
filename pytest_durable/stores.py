"""Fresh stores for test runs, and removing them afterwards (spec STORE-10, STORE-11).

:class:`Stores` makes an empty, isolated store per run for a store URL and, at :meth:`Stores.cleanup`,
deletes what those stores wrote: the tables of each one in a shared SQLite file, the keys of each Redis
namespace, each Kafka topic. ``sqlite:`` without a path uses one file in a temporary directory that the
caller owns and removes.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from reference_runtime.errors import StoreError, StoreUrlError
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.urls import check_store, open_store, parse_store_url, unique_namespace

from .loading import CommandError

#: Seconds a server gets to accept a connection before a command gives up on it.
PROBE_TIMEOUT = 5.0


class Stores:
    """A callable making a fresh isolated store of ``url`` per call; ``tmp`` gives the directory for the
    SQLite file of ``sqlite:`` (called at most once, when the first store is made).

    Only the names of what was made (table prefixes, Redis namespaces, Kafka topics) are kept, not the
    stores: a test exploring hundreds of schedules must not hold hundreds of open connections."""

    def __init__(self, url: str, tmp: Callable[[], Path] | None = None) -> None:
        self.url = url
        self.parsed = parse_store_url(url)
        self._tmp = tmp
        self._file: Path | None = Path(self.parsed.path) if self.parsed.path else None
        #: Table prefixes, namespaces or topics made since the last cleanup.
        self.made: list[str] = []

    def __call__(self) -> ActionStateStore:
        store: ActionStateStore
        if self.parsed.scheme == "memory":
            from reference_runtime.stores.memory import InMemoryStore

            return InMemoryStore()
        if self.parsed.scheme == "sqlite":
            from reference_runtime.stores.sqlite import SqliteStore

            if self._file is None:
                if self._tmp is None:
                    raise StoreUrlError(f"store URL {self.url!r}: sqlite: needs a file path (sqlite:PATH)")
                self._file = self._tmp() / "durable.db"
            store = SqliteStore(self._file, namespace=unique_namespace())
            self.made.append(store.namespace)
        else:
            store = open_store(self.url, isolated=True)
            self.made.append(store.topic if self.parsed.scheme == "kafka" else store.namespace)  # type: ignore[attr-defined]
        return store

    def cleanup(self) -> None:
        """Delete every store made so far: its SQLite tables, Redis keys or Kafka topic."""
        made, self.made = self.made, []
        if not made:
            return
        if self.parsed.scheme == "sqlite":
            from reference_runtime.stores.sqlite import drop_namespaces

            assert self._file is not None
            drop_namespaces(self._file, made)
        elif self.parsed.scheme == "redis":
            from reference_runtime.stores.redis import RedisStore, delete_namespaces

            server = RedisStore.from_url(self.url, timeout=PROBE_TIMEOUT)
            try:
                delete_namespaces(server.client, made, self.url)
            finally:
                server.close()
        else:
            from reference_runtime.stores.kafka_topics import delete_topics

            delete_topics(self.parsed.bootstrap, made, self.parsed.timeout or 10.0)


def checked_url(url: str, option: str) -> str:
    """``url`` if it can be opened (parsed, client installed, server answering within
    :data:`PROBE_TIMEOUT`); else a :class:`CommandError` naming ``option``, the URL and the fix."""
    try:
        check_store(url, timeout=PROBE_TIMEOUT)
    except (StoreUrlError, StoreError) as exc:
        raise CommandError(f"{option}: {exc}") from None
    return url


@contextmanager
def temporary_dir(prefix: str = "durable-") -> Iterator[Callable[[], Path]]:
    """A maker of one temporary directory, created on first use and removed when the block ends."""
    made: list[Path] = []

    def tmp() -> Path:
        if not made:
            made.append(Path(tempfile.mkdtemp(prefix=prefix)))
        return made[0]

    try:
        yield tmp
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
