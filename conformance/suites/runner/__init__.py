"""The runner suite :func:`conformance.certify` runs."""
