"""Conformance kit: certify an action-state store (or runner) against docs/spec.md.

A backend author writes one test file::

    import pytest
    from conformance import StoreConformance, StoreFactory

    pytest_plugins = ["conformance.plugin"]

    class TestMyStore(StoreConformance):
        @pytest.fixture(scope="session")
        def durable_store_factory(self):
            return StoreFactory(MyStore, reopen=MyStore.reopen, capabilities={"core", "restart"})
"""

SUITE_VERSION = "0.1.0"

from .factory import CAPABILITIES, StoreFactory, factory_from_url  # noqa: E402
from .store_suite import StoreConformance  # noqa: E402

__all__ = ["CAPABILITIES", "SUITE_VERSION", "StoreConformance", "StoreFactory", "factory_from_url"]
