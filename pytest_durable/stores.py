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
    SQLite file of ``sqlite:`` (called at most once, when the first store is made)."""

    def __init__(self, url: str, tmp: Callable[[], Path] | None = None) -> None:
        self.url = url
        self.parsed = parse_store_url(url)
        self._tmp = tmp
        self._file: Path | None = Path(self.parsed.path) if self.parsed.path else None
        self.made: list[ActionStateStore] = []

    def __call__(self) -> ActionStateStore:
        if self.parsed.scheme == "sqlite":
            from reference_runtime.stores.sqlite import SqliteStore

            if self._file is None:
                if self._tmp is None:
                    raise StoreUrlError(f"store URL {self.url!r}: sqlite: needs a file path (sqlite:PATH)")
                self._file = self._tmp() / "durable.db"
            self._file.parent.mkdir(parents=True, exist_ok=True)
            store: ActionStateStore = SqliteStore(self._file, namespace=unique_namespace())
        else:
            store = open_store(self.url, isolated=True)
        self.made.append(store)
        return store

    def cleanup(self) -> None:
        """Delete every store made so far (its tables, keys or topic); raise the first failure after
        trying them all."""
        made, self.made = self.made, []
        failures = []
        for store in made:
            destroy = getattr(store, "destroy", None)
            try:
                destroy() if destroy is not None else store.close()
            except StoreError as exc:
                failures.append(exc)
        if failures:
            raise failures[0]


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
