"""The mutation suite of the conformance kit: broken stores and runners, each with the clause it violates.

``MUTANTS`` maps a mutant's name to a :class:`Mutant`; ``CONTROLS`` names correct backends built the same
way, which must certify FULL. ``test_mutants.py`` certifies every one of them.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from pathlib import Path

from conformance import RunnerFactory, StoreFactory

from . import base, runners, stores


@dataclass(frozen=True)
class Mutant:
    name: str
    clause: str
    kind: str  # "store" or "runner"
    doc: str
    #: The suite's ``check_timeout`` for this mutant (spec KIT-8): short for one that blocks forever.
    timeout: float = 60.0


def _store_classes() -> dict[str, type]:
    return {
        n: c
        for n, c in vars(stores).items()
        if inspect.isclass(c) and c.__module__ == stores.__name__ and getattr(c, "VIOLATES", "")
    }


MUTANTS: dict[str, Mutant] = {
    **{
        n: Mutant(n, c.VIOLATES, "store", (c.__doc__ or "").strip(), getattr(c, "TIMEOUT", 60.0))
        for n, c in _store_classes().items()
    },
    "DeclaresRestartWithoutReopen": Mutant(
        "DeclaresRestartWithoutReopen",
        "CONF-1",
        "store",
        "Claims 'restart' but gives the kit no way to reopen a store.",
    ),
    **{
        n: Mutant(n, c, "runner", (fn.__doc__ or "").strip(), runners.TIMEOUTS.get(n, 60.0))
        for n, (c, fn) in runners.MUTANTS.items()
    },
}

#: Correct backends written like the mutants: each must certify FULL.
CONTROLS = {
    "DictStore": "store",
    "LogStore": "store",
    "FullReplayLog": "store",
    "SqlStore": "store",
    "reference": "runner",
}


def store_factory(name: str, workdir: Path) -> StoreFactory:
    """A factory of the store mutant or control ``name``; SQLite files go under ``workdir``."""
    if name == "DeclaresRestartWithoutReopen":
        return StoreFactory(base.DictStore, capabilities={"core", "restart"}, name=name)
    cls = getattr(stores, name, None) or getattr(base, name)
    caps = {"core", "restart", "concurrent_writers"}
    if issubclass(cls, base.SqlStore):
        numbers = itertools.count()
        caps.add("mid_write_kill")

        def new() -> base.SqlStore:
            return cls(workdir / f"{name}-{next(numbers)}.db")  # type: ignore[no-any-return]

        return StoreFactory(new, reopen=lambda s: s.reopen(), capabilities=caps, name=name)
    return StoreFactory(cls, reopen=lambda s: s.reopen(), capabilities=caps, name=name)


def runner_factory(name: str) -> RunnerFactory:
    """A factory of the runner mutant or control ``name``."""
    if name == "reference":
        return RunnerFactory.reference(name=name)
    _, run = runners.MUTANTS[name]
    return RunnerFactory(run, capabilities={"runner", "runner_async", "runner_batch"}, name=name)
