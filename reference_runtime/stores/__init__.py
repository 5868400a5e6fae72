"""Action-state stores: the :class:`ActionStateStore` protocol, the built-in stores, and the one scheme
registry every store URL goes through (spec STORE-10, STORE-17..STORE-20).

``open_store("sqlite:run.db")`` opens a store by URL; ``register_scheme(StoreScheme(...))`` or an entry
point in the group ``pytest_durable.stores`` adds a scheme (docs/stores.md, "Writing a store").

The stores that need a client library (``RedisStore``, ``KafkaStore``, ``FlinkAgentsKafkaStore``) are
imported on first use, so importing this package imports neither ``redis`` nor ``confluent_kafka``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import ActionStateStore, Capability, RecoveryMarker
from .factory import CAPABILITIES, StoreFactory, store_factory
from .memory import InMemoryStore
from .registry import ENTRY_POINT_GROUP, get_scheme, known_schemes, register_scheme, unregister_scheme
from .scheme import InspectedState, StoreScheme, StoreUrl
from .sqlite import SqliteStore
from .urls import check_store, open_store, parse_store_url

if TYPE_CHECKING:
    from .kafka import KafkaStore
    from .kafka_flink import FlinkAgentsKafkaStore
    from .redis import RedisStore

_LAZY = {"RedisStore": "redis", "KafkaStore": "kafka", "FlinkAgentsKafkaStore": "kafka_flink"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reference_runtime.stores' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "CAPABILITIES",
    "ENTRY_POINT_GROUP",
    "ActionStateStore",
    "Capability",
    "FlinkAgentsKafkaStore",
    "InMemoryStore",
    "InspectedState",
    "KafkaStore",
    "RecoveryMarker",
    "RedisStore",
    "SqliteStore",
    "StoreFactory",
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
