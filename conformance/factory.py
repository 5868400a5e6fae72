"""What a backend author hands the kit: a factory of fresh stores, optionally able to reopen one."""

from __future__ import annotations

import os
import shutil
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
        cleanup: Callable[[], None] | None = None,
    ) -> None:
        unknown = set(capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {CAPABILITIES}")
        self.new = new
        self.reopen = reopen
        self.capabilities = frozenset(capabilities) | {"core"}
        self.name = name
        self._cleanup = cleanup

    def cleanup(self) -> None:
        """Delete what the stores of this factory wrote (a no-op unless the factory was given a
        ``cleanup``); ``durable certify`` calls it when the run ends."""
        if self._cleanup is not None:
            self._cleanup()

    def detected(self) -> frozenset[str]:
        """Capabilities the kit can observe without trusting the declaration."""
        found = {"core", "concurrent_writers"} if "concurrent_writers" in self.capabilities else {"core"}
        if self.reopen is not None:
            found.add("restart")
            if "mid_write_kill" in self.capabilities and hasattr(os, "fork"):
                found.add("mid_write_kill")
        return frozenset(found)


def factory_from_url(url: str, workdir: Path | None = None) -> StoreFactory:
    """A factory for a store URL (parsed by the one store-URL parser: a malformed URL raises
    ``StoreUrlError``). Every store it makes is isolated: a table prefix of its own in the one SQLite
    file, a Redis namespace, a Kafka topic. ``sqlite:`` without a path puts the file in ``workdir`` or in
    a temporary directory. :meth:`StoreFactory.cleanup` deletes all of it (spec STORE-11)."""
    from reference_runtime.stores.urls import open_store, parse_store_url, unique_namespace

    parsed = parse_store_url(url)
    caps = {"core", "restart", "concurrent_writers"}
    if parsed.scheme == "memory":
        from reference_runtime.stores.memory import InMemoryStore

        return StoreFactory(InMemoryStore, reopen=lambda s: s, capabilities=caps, name="memory:")
    made: list[ActionStateStore] = []
    scratch: list[Path] = []

    def cleanup() -> None:
        while made:
            store = made.pop()
            destroy = getattr(store, "destroy", None)
            destroy() if destroy is not None else store.close()
        for path in scratch:
            shutil.rmtree(path, ignore_errors=True)
        scratch.clear()

    if parsed.scheme == "sqlite":
        from reference_runtime.stores.sqlite import SqliteStore

        def database() -> Path:
            if parsed.path:
                return Path(parsed.path)
            if workdir is not None:
                workdir.mkdir(parents=True, exist_ok=True)
                return workdir / "stores.db"
            if not scratch:
                scratch.append(Path(tempfile.mkdtemp(prefix="durable-certify-")))
            return scratch[0] / "stores.db"

        def new() -> ActionStateStore:
            path = database()
            made.append(SqliteStore(path, namespace=unique_namespace()))
            return made[-1]

        def reopen(store: ActionStateStore) -> ActionStateStore:
            assert isinstance(store, SqliteStore)
            store.close()
            return SqliteStore(store.path, namespace=store.namespace)

        return StoreFactory(new, reopen=reopen, capabilities=caps | {"mid_write_kill"}, name="sqlite:", cleanup=cleanup)

    def fresh() -> ActionStateStore:
        made.append(open_store(url, isolated=True))
        return made[-1]

    def reopen_same(store: ActionStateStore) -> ActionStateStore:
        # A new client over the same namespace/topic, rebuilt from the start: a process restart.
        again = store.reopen()  # type: ignore[attr-defined]
        assert isinstance(again, ActionStateStore)
        store.close()
        return again

    if parsed.scheme == "redis":
        # A Kafka client cannot start in a forked child of a process that used one; Redis's can.
        caps = caps | {"mid_write_kill"}
    return StoreFactory(fresh, reopen=reopen_same, capabilities=caps, name=f"{parsed.scheme}:", cleanup=cleanup)
