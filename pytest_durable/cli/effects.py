"""Declaring side effects by name for ``durable sweep --effect MODULE:NAME[@PARAM]`` (spec CLI-1, PLG-3).

The named function or method is replaced, for the duration of the sweep, by a ledger-booked wrapper
(:meth:`Ledger.wrap`), exactly as a test does with ``durable_ledger.wrap``. A module-level function is
also replaced wherever another loaded module imported it by name (``from services import charge``),
since that is where an agent calls it from. ``@PARAM`` says the external system deduplicates on that
argument (an idempotency key): the CLI form of ``wrap(..., dedup=...)``, so an agent that passes a stable
key is not reported for a call its provider would have answered once.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from reference_runtime.exploration.ledger import Ledger

from .args import CommandError, resolve


@contextmanager
def declared(ledger: Ledger, specs: Sequence[str]) -> Iterator[None]:
    """Book every call of each ``MODULE:NAME`` in ``specs`` on ``ledger`` while the block runs."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        for spec in specs:
            target, _, param = spec.partition("@")
            owner, name, original = resolve(target, "--effect")
            if not callable(original):
                raise CommandError(f"--effect {spec!r}: {name} is not callable")
            dedup = _dedup_on(original, param, spec) if param else None
            wrapped = ledger.wrap(original, target.partition(":")[2], dedup=dedup)
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


def _dedup_on(fn: Any, param: str, spec: str) -> Callable[..., object]:
    """The key ``fn``'s provider deduplicates on: the argument named ``param``, however it is passed."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        raise CommandError(
            f"--effect {spec!r}: the signature of {fn!r} cannot be read, so @{param} cannot be found"
        ) from None
    if param not in signature.parameters:
        known = ", ".join(signature.parameters) or "none"
        raise CommandError(f"--effect {spec!r}: {param!r} is not a parameter of it (parameters: {known})")

    def key(*args: Any, **kwargs: Any) -> object:
        try:
            return signature.bind_partial(*args, **kwargs).arguments.get(param)
        except TypeError:  # a call the function itself will refuse: no key to deduplicate on
            return None

    return key
