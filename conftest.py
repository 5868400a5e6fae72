"""Loads the conformance kit's plugin for this repository's own suite (pytest only honours pytest_plugins here)."""

pytest_plugins = ["conformance.plugin"]
