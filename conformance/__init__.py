"""Conformance kit: certify an action-state store (or runner) against docs/spec.md.

A backend author writes one test file::

    import pytest
    from conformance import StoreConformance, StoreFactory

    pytest_plugins = ["conformance.plugin"]


    @pytest.fixture(scope="session")
    def durable_store_factory():
        return StoreFactory(MyStore, reopen=MyStore.reopen, capabilities={"core", "restart"})


    class TestMyStore(StoreConformance):
        pass

and a runner author subclasses :class:`RunnerConformance` with a ``durable_runner_factory`` fixture
(see docs/conformance/howto.md). ``certify(backend)`` runs the whole suite against a store URL or a factory
and returns the :class:`Report` (``durable certify`` is its command line).

The names are imported on first use, and the modules holding checks are registered for pytest's
assertion rewriting just before that, so a failed check shows the values it compared, also under
``durable certify`` (which imports this package before pytest starts).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reference_runtime._version import __version__ as SUITE_VERSION  # one version for the distribution

from .session import CHECK_MODULES, register_assert_rewrite

_EXPORTS = {
    "CertifyError": "certification",
    "certify": "certification",
    "Report": "report",
    "CAPABILITIES": "factory",
    "StoreFactory": "factory",
    "factory_from_url": "factory",
    "RUNNER_CAPABILITIES": "runner_factory",
    "RunFunction": "runner_factory",
    "RunnerFactory": "runner_factory",
    "RunnerConformance": "runner_calls",
    "StoreConformance": "store_suite",
}

if TYPE_CHECKING:
    from .certification import CertifyError, certify
    from .factory import CAPABILITIES, StoreFactory, factory_from_url
    from .report import Report
    from .runner_calls import RunnerConformance
    from .runner_factory import RUNNER_CAPABILITIES, RunFunction, RunnerFactory
    from .store_suite import StoreConformance


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    register_assert_rewrite()
    # Not cached here: a nested in-process pytest run (pytester) drops the modules it imported when it ends,
    # and the next run must get the classes of the modules it imports itself.
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "CAPABILITIES",
    "CHECK_MODULES",
    "RUNNER_CAPABILITIES",
    "SUITE_VERSION",
    "CertifyError",
    "Report",
    "RunFunction",
    "RunnerConformance",
    "RunnerFactory",
    "StoreConformance",
    "StoreFactory",
    "certify",
    "factory_from_url",
    "register_assert_rewrite",
]
