"""What every ``durable`` command shares (spec CLI-3, CLI-4): the one argument parser, whose usage errors are one
line, and the readers of command-line input with one-line errors: ``MODULE:NAME`` objects and store URLs."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from reference_runtime.stores import StoreUrl
    from reference_runtime.stores.urls import Need


class CommandError(Exception):
    """Bad command-line input. The message is the one line the command prints before exiting with 2."""


class Parser(argparse.ArgumentParser):
    """The parser of every ``durable`` command: a usage error is one line naming the command and ``--help``
    (raised as :class:`CommandError`, exit status 2), not argparse's usage block."""

    def error(self, message: str) -> NoReturn:
        raise CommandError(f"{self.prog}: {message} (see {self.prog} --help)")


def importable_cwd() -> None:
    """Make the current directory importable, as ``python -m`` does, so ``mypkg:thing`` next to the
    user's shell works."""
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def resolve(spec: str, option: str) -> tuple[Any, str, Any]:
    """``MODULE:NAME`` (NAME may be dotted) as (owner, last attribute name, object)."""
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise CommandError(f"{option} {spec!r}: expected MODULE:NAME (e.g. mypkg.agents:MyAgent)")
    importable_cwd()
    try:
        owner: Any = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise CommandError(
                f"{option} {spec!r}: no module named {exc.name!r} (run from the directory that "
                "contains it, or install it)"
            ) from None
        raise CommandError(f"{option} {spec!r}: importing {module} failed: {exc}") from None
    except Exception as exc:  # the user's module raised while importing
        raise CommandError(f"{option} {spec!r}: importing {module} raised {type(exc).__name__}: {exc}") from None
    parts = name.split(".")
    for part in parts[:-1]:
        owner = _attribute(owner, part, spec, option)
    return owner, parts[-1], _attribute(owner, parts[-1], spec, option)


def _attribute(owner: Any, name: str, spec: str, option: str) -> Any:
    try:
        return getattr(owner, name)
    except AttributeError:
        where = getattr(owner, "__name__", type(owner).__name__)
        raise CommandError(f"{option} {spec!r}: {where} has no attribute {name!r}") from None


def load(spec: str, option: str) -> Any:
    """The object ``MODULE:NAME`` names."""
    return resolve(spec, option)[2]


#: Seconds a server gets to accept a connection before a command gives up on it.
PROBE_TIMEOUT = 5.0


def checked_url(url: str, option: str, *, needs: tuple[Need, ...] = ()) -> StoreUrl:
    """``url`` parsed, if it can be opened (parsed by its scheme, client installed, server answering within
    :data:`PROBE_TIMEOUT`, and ``needs`` met); else a :class:`CommandError` naming ``option``, the URL and the
    fix."""
    from reference_runtime.errors import StoreError
    from reference_runtime.stores import check_store

    try:
        return check_store(url, timeout=PROBE_TIMEOUT, needs=needs)
    except StoreError as exc:
        raise CommandError(f"{option}: {exc}") from None
