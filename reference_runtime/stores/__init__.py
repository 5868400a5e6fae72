"""Action-state stores: the :class:`ActionStateStore` protocol, the built-in stores, and the one scheme
registry every store URL goes through (spec STORE-10, STORE-17..STORE-20).

``open_store("sqlite:run.db")`` opens a store by URL; ``register_scheme(StoreScheme(...))`` or an entry
point in the group ``pytest_durable.stores`` adds a scheme (docs/stores.md, "Writing a store").

Every name but the protocol and :class:`Capability` is imported on first use, so importing this package
imports neither ``redis`` nor ``confluent_kafka`` (nor the registry).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import ActionStateStore, Capability, RecoveryMarker

if TYPE_CHECKING:
    from .factory import CAPABILITIES, StoreFactory, store_factory
    from .faulty import FaultyStore, StoreFault
    from .kafka import KafkaStore
    from .kafka_flink import FlinkAgentsKafkaStore
    from .memory import InMemoryStore
    from .redis import RedisStore
    from .registry import ENTRY_POINT_GROUP, get_scheme, known_schemes, register_scheme, unregister_scheme
    from .scheme import InspectedState, StoreScheme, StoreUrl
    from .sqlite import SqliteStore
    from .urls import check_store, open_store, parse_store_url

# Imported on first use: the runtime imports this package for the protocol alone, and the registry, the
# store modules and their client libraries cost import time a run on the memory store never needs.
_LAZY = {
    "CAPABILITIES": "factory",
    "StoreFactory": "factory",
    "store_factory": "factory",
    "FaultyStore": "faulty",
    "StoreFault": "faulty",
    "KafkaStore": "kafka",
    "FlinkAgentsKafkaStore": "kafka_flink",
    "InMemoryStore": "memory",
    "RedisStore": "redis",
    "ENTRY_POINT_GROUP": "registry",
    "get_scheme": "registry",
    "known_schemes": "registry",
    "register_scheme": "registry",
    "unregister_scheme": "registry",
    "InspectedState": "scheme",
    "StoreScheme": "scheme",
    "StoreUrl": "scheme",
    "SqliteStore": "sqlite",
    "check_store": "urls",
    "open_store": "urls",
    "parse_store_url": "urls",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reference_runtime.stores' has no attribute {name!r}")
    # Not cached: a nested in-process pytest run (pytester) drops the modules it imported when it ends, and
    # the next lookup must give the class of the module imported then (as conformance does).
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "CAPABILITIES",
    "ENTRY_POINT_GROUP",
    "ActionStateStore",
    "Capability",
    "FaultyStore",
    "FlinkAgentsKafkaStore",
    "InMemoryStore",
    "InspectedState",
    "KafkaStore",
    "RecoveryMarker",
    "RedisStore",
    "SqliteStore",
    "StoreFactory",
    "StoreFault",
    "StoreScheme",
    "StoreUrl",
    "check_store",
    "get_scheme",
    "known_schemes",
    "open_store",
    "parse_store_url",
    "register_scheme",
    "store_factory",
    "unregister_scheme",
]
