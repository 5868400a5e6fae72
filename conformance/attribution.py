"""Who raised an exception that ended a check: the backend, or the kit's own code (spec KIT-9).

A check that fails with an exception instead of an assertion is reported as "the backend raised …" only
when the exception really came out of the backend. The kit's own code — a check reading what the backend
gave back (``next(...)`` over an empty list raises ``StopIteration``), its agents, Hypothesis and pytest
driving it — is told apart by where the exception was raised: the deepest frame of its traceback that is
not in Python's standard library (``json.loads`` raising inside a backend is the backend's error).
"""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path

_KIT = Path(__file__).resolve().parent
#: Frames of these packages are the kit's tooling, not the backend: the kit runs its checks through them.
_TOOLING = ("hypothesis", "_pytest", "pluggy")
_STDLIB = tuple(str(Path(p).resolve()) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})


def in_stdlib(filename: str) -> bool:
    """Whether ``filename`` is a module of Python's standard library (not a third-party package)."""
    resolved = str(Path(filename).resolve())
    return resolved.startswith(_STDLIB) and "site-packages" not in resolved


def is_kit(filename: str) -> bool:
    """Whether ``filename`` is the kit's code or the tooling it runs its checks through (pytest, Hypothesis)."""
    path = Path(filename).resolve()
    if path.is_relative_to(_KIT):
        return True
    return "site-packages" in path.parts and any(part in _TOOLING for part in path.parts)


def where(filename: str, lineno: int | None, name: str) -> str:
    """``file:line (in name)``, the file relative to the repository when it is in it."""
    path = Path(filename).resolve()
    shown = path.relative_to(_KIT.parent) if path.is_relative_to(_KIT.parent) else path.name
    return f"{shown}:{lineno} (in {name})"


def _at(frame: traceback.FrameSummary) -> str:
    return where(frame.filename, frame.lineno, frame.name)


def explain(exc: BaseException) -> str:
    """One sentence saying what was raised and by whom, for a failed check's message."""
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not in_stdlib(f.filename)]
    if not frames:
        return f"the backend raised {what}"
    deepest = frames[-1]
    if not is_kit(deepest.filename):
        return f"the backend raised {what} at {_at(deepest)}"
    backend = [f for f in frames if not is_kit(f.filename)]
    if backend:
        return (
            f"the kit's code raised {what} at {_at(deepest)}, called by the backend at {_at(backend[-1])} "
            "(the backend ran it and let the exception escape)"
        )
    return (
        f"the check itself raised {what} at {_at(deepest)}, not the backend: the check could not use what "
        "the backend gave back (or the kit has a defect)"
    )
