"""What the kit's package, plugin and checks share about a pytest session, in a module that imports none
of them (spec API-3): which modules hold checks, their registration for assertion rewriting, and the
session's seed.

``pytest`` is imported only when it is already loaded: ``durable certify`` imports the kit before pytest
starts, and loading pytest early would not install its rewriting hook anyway.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

#: Modules whose ``assert`` statements are checks: rewritten by pytest when imported inside a session.
CHECK_MODULES = (
    "conformance.store_suite",
    "conformance.store_regressions",
    "conformance.runner_suite",
    "conformance.runner_calls",
    "conformance.model",
    "conformance.crash",
    "conformance.store_limits",
)

#: Name under which the kit's plugin registers its per-session recorder with pytest's plugin manager.
RECORDER_NAME = "durable-conformance-recorder"


def register_assert_rewrite() -> None:
    """Mark the kit's check modules for pytest's assertion rewriting (those not imported yet; an
    imported module cannot be rewritten any more)."""
    fresh = [m for m in CHECK_MODULES if m not in sys.modules]
    if fresh and "pytest" in sys.modules:
        import pytest

        pytest.register_assert_rewrite(*fresh)


def session_seed(config: pytest.Config) -> int | None:
    """The seed of this run's randomized checks (the same on every xdist worker), or None when the kit's
    plugin is not loaded."""
    recorder = config.pluginmanager.get_plugin(RECORDER_NAME)
    return None if recorder is None else int(recorder.seed)
