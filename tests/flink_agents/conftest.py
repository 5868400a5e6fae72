"""The flink_agents compatibility tests run only where the real package is installed (the venv that
scripts/flink-agents-venv.sh makes); elsewhere they are skipped with the reason. With
DURABLE_REQUIRE_FLINK_AGENTS=1 (set by .ci/run) a missing package or any skip fails the session instead."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REQUIRED = os.environ.get("DURABLE_REQUIRE_FLINK_AGENTS") == "1"
AVAILABLE = importlib.util.find_spec("flink_agents") is not None
REASON = "flink_agents is not installed: run scripts/flink-agents-venv.sh and this directory with its python"

if not AVAILABLE:
    if REQUIRED:
        raise pytest.UsageError(f"DURABLE_REQUIRE_FLINK_AGENTS=1 but {REASON}")
    # Nothing else here may be imported without flink_agents; test_availability.py reports the skip.
    collect_ignore_glob = ["test_fa_*.py"]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not REQUIRED or session.config.rootpath != Path(__file__).resolve().parents[2]:
        return  # a pytester session inside a test is not the compatibility run
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {})
    skipped, passed = len(stats.get("skipped", [])), len(stats.get("passed", []))
    if skipped or not passed:
        print(f"\nDURABLE_REQUIRE_FLINK_AGENTS=1: {passed} passed, {skipped} skipped; every test must run")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
