"""What a backend author hands the kit: a factory of fresh stores, optionally able to reopen one."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from reference_runtime.stores.base import ActionStateStore

#: Capabilities a store can declare. ``core`` is every store's baseline; ``mid_write_kill`` claims the
#: store's data outlives a SIGKILLed process and ``reopen`` works in a forked child and on a closed store.
CAPABILITIES = ("core", "restart", "concurrent_writers", "mid_write_kill")


class StoreFactory:
    """Makes empty, isolated stores. ``reopen`` returns a new store object over the same data (a process
    restart) or is None when the backend cannot do that; ``capabilities`` is what the backend claims."""

    def __init__(
        self,
        new: Callable[[], ActionStateStore],
        *,
        reopen: Callable[[ActionStateStore], ActionStateStore] | None = None,
        capabilities: frozenset[str] | set[str] = frozenset({"core"}),
        name: str = "store",
    ) -> None:
        unknown = set(capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {CAPABILITIES}")
        self.new = new
        self.reopen = reopen
        self.capabilities = frozenset(capabilities) | {"core"}
        self.name = name

    def detected(self) -> frozenset[str]:
        """Capabilities the kit can observe without trusting the declaration."""
        found = {"core", "concurrent_writers"} if "concurrent_writers" in self.capabilities else {"core"}
        if self.reopen is not None:
            found.add("restart")
            if "mid_write_kill" in self.capabilities and hasattr(os, "fork"):
                found.add("mid_write_kill")
        return frozenset(found)


def factory_from_url(url: str, workdir: Path | None = None) -> StoreFactory:
    """A factory for a store URL. ``sqlite:`` makes one file per store under ``workdir`` (or the URL's
    directory), so every check starts from an empty store."""
    if url == "memory:" or url == "memory":
        from reference_runtime.stores.memory import InMemoryStore

        return StoreFactory(InMemoryStore, reopen=lambda s: s, capabilities={"core", "restart",
                                                                              "concurrent_writers"},
                            name="memory:")
    if url.startswith("sqlite:"):
        from reference_runtime.stores.sqlite import SqliteStore

        base = Path(url[len("sqlite:"):] or (workdir or Path(tempfile.mkdtemp(prefix="durable-certify-"))))
        base.mkdir(parents=True, exist_ok=True)
        counter = itertools.count()

        def new() -> ActionStateStore:
            return SqliteStore(base / f"store-{next(counter)}.db")

        def reopen(store: ActionStateStore) -> ActionStateStore:
            path = store.path  # type: ignore[attr-defined]
            store.close()
            return SqliteStore(path)

        return StoreFactory(new, reopen=reopen,
                            capabilities={"core", "restart", "concurrent_writers", "mid_write_kill"},
                            name="sqlite:")
    from reference_runtime.stores.urls import open_store, parse_store_url

    parsed = parse_store_url(url)

    def fresh() -> ActionStateStore:
        return open_store(url, isolated=True)

    def reopen_same(store: ActionStateStore) -> ActionStateStore:
        # A new client over the same namespace/topic, rebuilt from the start: a process restart.
        again = store.reopen()  # type: ignore[attr-defined]
        assert isinstance(again, ActionStateStore)
        store.close()
        return again

    caps = {"core", "restart", "concurrent_writers"}
    if parsed.scheme.startswith("redis"):
        # A Kafka client cannot start in a forked child of a process that used one; Redis's can.
        caps.add("mid_write_kill")
    return StoreFactory(fresh, reopen=reopen_same, capabilities=caps, name=f"{parsed.scheme}:")
