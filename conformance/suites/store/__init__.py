"""The store suite :func:`conformance.certify` runs."""
