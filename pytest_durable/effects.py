"""Declaring side effects by name for ``durable sweep --effect MODULE:NAME`` (spec CLI-1, PLG-3).

The named function or method is replaced, for the duration of the sweep, by a ledger-booked wrapper
(:meth:`Ledger.wrap`), exactly as a test does with ``durable_ledger.wrap``. A module-level function is
also replaced wherever another loaded module imported it by name (``from services import charge``),
since that is where an agent calls it from.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from conformance.loading import CommandError, resolve

from .ledger import Ledger


@contextmanager
def declared(ledger: Ledger, specs: Sequence[str]) -> Iterator[None]:
    """Book every call of each ``MODULE:NAME`` in ``specs`` on ``ledger`` while the block runs."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        for spec in specs:
            owner, name, original = resolve(spec, "--effect")
            if not callable(original):
                raise CommandError(f"--effect {spec!r}: {name} is not callable")
            wrapped = ledger.wrap(original, spec.partition(":")[2])
            holders = [owner]
            if isinstance(owner, type(sys)):
                holders += [m for m in list(sys.modules.values()) if m is not owner and vars(m).get(name) is original]
            for holder in holders:
                undo.append((holder, name, original))
                setattr(holder, name, wrapped)
        yield
    finally:
        for holder, name, original in reversed(undo):
            setattr(holder, name, original)
