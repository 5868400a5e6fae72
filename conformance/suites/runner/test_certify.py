"""The runner suite ``durable certify`` runs: every runner check, against the runner handed to
:func:`conformance.certify`."""

import pytest

from conformance.certification import backend_of
from conformance.runner_calls import RunnerConformance
from conformance.runner_factory import RunnerFactory


@pytest.fixture(scope="session")
def durable_runner_factory(request: pytest.FixtureRequest) -> RunnerFactory:
    """The certified runner."""
    factory = backend_of(request.config).factory
    assert isinstance(factory, RunnerFactory)
    return factory


class TestCertify(RunnerConformance):
    """The kit's runner checks, against the certified runner."""
