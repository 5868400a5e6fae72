"""The suites :func:`conformance.certify` runs, one fixed directory per kind of backend (``store/``,
``runner/``). Each holds ``test_certify.py`` (``class TestCertify`` subclassing the kit's suite) and a
``pytest.ini`` of its own, so that no configuration of the caller applies (no ``pytest.ini``,
``pyproject.toml`` or ``conftest.py`` above an editable install) and node ids read
``test_certify.py::TestCertify::<check>``. The backend reaches the checks through the certify plugin's
fixtures, never through source."""
