"""The store suite ``durable certify`` runs: every store check, against the backend handed to
:func:`conformance.certify`."""

from collections.abc import Iterator

import pytest

from conformance.certification import backend_of
from conformance.store_suite import StoreConformance
from reference_runtime.stores.factory import StoreFactory


@pytest.fixture(scope="session")
def durable_store_factory(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    """The certified store's factory; what its stores wrote is deleted when the run ends (STORE-11)."""
    factory = backend_of(request.config).factory
    assert isinstance(factory, StoreFactory)
    yield factory
    factory.cleanup()


class TestCertify(StoreConformance):
    """The kit's store checks, against the certified backend."""
