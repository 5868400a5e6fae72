"""Conformance kit: certify an action-state store (or runner) against docs/spec.md.

A backend author writes one test file::

    import pytest
    from conformance import StoreConformance, StoreFactory

    pytest_plugins = ["conformance.plugin"]

    class TestMyStore(StoreConformance):
        @pytest.fixture(scope="session")
        def durable_store_factory(self):
            return StoreFactory(MyStore, reopen=MyStore.reopen, capabilities={"core", "restart"})

and a runner author subclasses :class:`RunnerConformance` and overrides ``durable_runner_factory``
(see docs/conformance/howto.md).
"""

SUITE_VERSION = "0.1.0"

from .factory import CAPABILITIES, StoreFactory, factory_from_url  # noqa: E402
from .runner_factory import RUNNER_CAPABILITIES, RunFunction, RunnerFactory  # noqa: E402
from .runner_suite import RunnerConformance  # noqa: E402
from .store_suite import StoreConformance  # noqa: E402

__all__ = [
    "CAPABILITIES",
    "RUNNER_CAPABILITIES",
    "SUITE_VERSION",
    "RunFunction",
    "RunnerConformance",
    "RunnerFactory",
    "StoreConformance",
    "StoreFactory",
    "factory_from_url",
]
