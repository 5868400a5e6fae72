"""Checks of the file paths given to ``durable certify`` and the kit's plugin, made before any check runs
(spec KIT-6): a report or known-failures file that cannot be written or read is one line naming the
option, the path and the fix, not a traceback after the whole run.

Each function returns that line, or None when the path is usable; the caller raises its own error type
(``CommandError`` for the CLI, ``pytest.UsageError`` for the plugin).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import known_failures as kf


def output_problem(option: str, value: str, path: Path, *, twin: str | None = None) -> str | None:
    """Why ``path`` (given as ``option value``) cannot be written, or None. ``twin`` is the suffix of a
    second file written next to it (the report's ``.md``), checked the same way."""
    where = f"{option} {value}"
    for target in (path, path.with_suffix(twin)) if twin else (path,):
        if target.is_dir():
            return f"{where}: {target} is a directory; name a file"
    parent = path.parent
    if not parent.exists():
        return f"{where}: the directory {parent} does not exist; create it or name a file in an existing directory"
    if not parent.is_dir():
        return f"{where}: {parent} is not a directory; name a file in an existing directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{where}: the directory {parent} is not writable; name a file in a directory you can write"
    for target in (path, path.with_suffix(twin)) if twin else (path,):
        if target.exists() and not os.access(target, os.W_OK):
            return f"{where}: {target} exists and is not writable; name another file or change its permissions"
    return None


def read_known_failures(option: str, value: str, path: Path, *, write_option: str) -> list[kf.KnownFailure]:
    """The known failures in ``path`` (given as ``option value``): it must exist, be readable and parse, or
    :class:`~conformance.known_failures.KnownFailuresError` says why, naming the option and the fix.
    ``write_option`` is the option that writes one."""
    where = f"{option} {value}"
    if not path.exists():
        raise kf.KnownFailuresError(
            f"{where}: cannot read the known-failures file {path}: it does not exist; fix the path, or write "
            f"one from a run with {write_option} FILE"
        )
    if path.is_dir():
        raise kf.KnownFailuresError(
            f"{where}: cannot read the known-failures file {path}: it is a directory; name a file"
        )
    try:
        return kf.load(path)
    except kf.KnownFailuresError as exc:
        raise kf.KnownFailuresError(f"{where}: {exc}") from None


def known_failures_problem(option: str, value: str, path: Path, *, write_option: str) -> str | None:
    """Why the known-failures file ``path`` cannot be used (:func:`read_known_failures`), or None."""
    try:
        read_known_failures(option, value, path, write_option=write_option)
    except kf.KnownFailuresError as exc:
        return str(exc)
    return None
