"""The kit's check decorators ``clause`` and ``capability``.

They record the spec clause ids and the capability on the check function itself, not as pytest markers:
the check modules are imported by an adopter's test module before its ``pytest_plugins`` line is read, so
a ``pytest.mark.clause`` taken at import time would fail under ``--strict-markers``. The plugin
(:mod:`conformance.plugin`, which registers the markers) turns them into real ``clause``/``capability``
markers when each check is collected; checks written with ``@pytest.mark.clause`` directly work as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

CLAUSES_ATTR = "durable_conformance_clauses"
CAPABILITY_ATTR = "durable_conformance_capability"


def clause(*ids: str) -> Callable[[F], F]:
    """Cite spec clause ``ids`` (e.g. ``"STORE-3"``); may be stacked."""

    def mark(fn: F) -> F:
        # Decorators apply bottom-up; prepend so the clauses read in source order.
        setattr(fn, CLAUSES_ATTR, (*ids, *getattr(fn, CLAUSES_ATTR, ())))
        return fn

    return mark


def capability(name: str) -> Callable[[F], F]:
    """The capability (``core``, ``restart``, ``runner``, …) a check needs."""

    def mark(fn: F) -> F:
        setattr(fn, CAPABILITY_ATTR, name)
        return fn

    return mark


def clauses_of(node: Any) -> tuple[str, ...]:
    """Clause ids a collected check cites, from the decorator or from ``clause`` markers."""
    found = list(getattr(getattr(node, "function", None), CLAUSES_ATTR, ()))
    for m in node.iter_markers("clause"):
        found.extend(str(a) for a in m.args if str(a) not in found)
    return tuple(dict.fromkeys(found))


def capability_of(node: Any) -> str | None:
    """The capability a collected check needs, or None."""
    name = getattr(getattr(node, "function", None), CAPABILITY_ATTR, None)
    if name is not None:
        return str(name)
    m = node.get_closest_marker("capability")
    return None if m is None else str(m.args[0])
