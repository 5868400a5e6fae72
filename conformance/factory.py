"""What a backend author hands the kit: a :class:`StoreFactory` of fresh stores, optionally able to reopen one.

The factory is the runtime's own (``reference_runtime.stores.factory``, spec STORE-20): the pytest plugin and
the kit make their stores with the same one. :func:`factory_from_url` is :func:`store_factory` under the kit's
name, with the SQLite file of ``sqlite:`` in ``workdir`` when given.
"""

from __future__ import annotations

from pathlib import Path

from reference_runtime.stores.base import Capability
from reference_runtime.stores.factory import CAPABILITIES, StoreFactory, store_factory

__all__ = ["CAPABILITIES", "Capability", "StoreFactory", "factory_from_url"]


def factory_from_url(url: str, workdir: Path | None = None) -> StoreFactory:
    """A factory for a store URL of any registered scheme (parsed by the one store-URL parser: a malformed URL
    raises ``StoreUrlError``). Every store it makes is isolated; ``sqlite:`` without a path puts the file in
    ``workdir`` or in a temporary directory. :meth:`StoreFactory.cleanup` deletes all of it (spec STORE-11)."""
    if workdir is None:
        return store_factory(url)

    def directory() -> Path:
        workdir.mkdir(parents=True, exist_ok=True)
        return workdir

    return store_factory(url, directory)
