"""No kit check can hang (spec KIT-8).

Every wait the kit makes itself is bounded (thread joins, barriers, pipes, the probes of
:meth:`~reference_runtime.stores.StoreFactory.detected`). A backend call can still block forever — a
``put`` waiting on a lock nobody releases — so each check runs under a time limit: on the main thread of
a platform with ``SIGALRM`` an interval timer interrupts the check when the limit passes and it fails with
:class:`CheckTimeout`, naming its clauses and the backend frame it was blocked in. The suites' limit is
their ``check_timeout`` class attribute (:data:`CHECK_TIMEOUT` seconds unless a subclass sets another).

A backend that hung once is left in a state nothing can vouch for (a thread still blocked in it, a lock
held), and one that blocks in every call would cost the limit once per check: after a check of a suite
timed out, the suite's later checks in that pytest run (on that xdist worker) are skipped, naming the
check that hung.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from .attribution import in_stdlib, is_kit, where
from .marks import clauses_of

#: Seconds a check may take, setup and teardown included, before it fails as hung. A correct in-process
#: store's slowest check takes about a second; the limit leaves room for remote stores and loaded machines.
CHECK_TIMEOUT = 120.0
#: Seconds the rest of a check gets once its limit has fired: a backend that hung in the check may hang
#: again when its store is closed in teardown, which then fails too instead of hanging.
GRACE = 10.0


class CheckTimeout(BaseException):
    """A check ran past its time limit. A ``BaseException``, like ``KeyboardInterrupt``: a backend that
    catches ``Exception`` and retries cannot swallow it and hang on."""


def blocked_in(frame: FrameType | None) -> str:
    """Where the running code was: its innermost frame outside the kit and the standard library (the
    backend), else the innermost frame at all."""
    first = None
    while frame is not None:
        code = frame.f_code
        here = where(code.co_filename, frame.f_lineno, code.co_qualname)
        if first is None:
            first = here
        if not is_kit(code.co_filename) and not in_stdlib(code.co_filename):
            return f"in the backend at {here}"
        frame = frame.f_back
    return f"in the kit at {first}" if first else "nowhere Python can see"


def check_name(node: Any) -> str:
    """How a time-limit failure names a pytest item: the clauses it cites, then its name (KIT-1, KIT-8)."""
    clauses = clauses_of(node)
    return f"{', '.join(clauses)} violated: check {node.name}" if clauses else f"check {node.name}"


#: Per pytest run: suites (their class's node id) a check of which timed out -> the name of that check.
HUNG = pytest.StashKey[dict[str, str]]()


@contextlib.contextmanager
def guarded_check(node: Any, seconds: float) -> Iterator[None]:
    """What the suites' autouse fixture wraps each check in: skip it when an earlier check of its suite hung
    in this run (:data:`HUNG`), else run it under :func:`time_limit`, noting a hang."""
    suite = node.parent.nodeid if node.parent is not None else ""
    hung = node.config.stash.setdefault(HUNG, {})
    if suite in hung:
        pytest.skip(f"not run: the backend hung in {hung[suite]} earlier, which failed (KIT-8); fix that first")

    def note() -> None:
        hung.setdefault(suite, node.name)

    with time_limit(seconds, check_name(node), note):
        yield


def can_interrupt() -> bool:
    """Whether :func:`time_limit` can interrupt blocked code here (POSIX, the main thread)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float, message: str, on_expiry: Callable[[], None] | None = None) -> Iterator[None]:
    """Raise :class:`CheckTimeout` (``message``, then how long and where it was blocked) in the current
    thread once ``seconds`` have passed, after calling ``on_expiry``; afterwards each further :data:`GRACE`
    seconds. Nothing is armed where code cannot be interrupted (:func:`can_interrupt`). A timer someone else
    armed (pytest-timeout's signal method) is put back with the time it had left."""
    if not can_interrupt():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        signal.setitimer(signal.ITIMER_REAL, GRACE)
        if on_expiry is not None:
            on_expiry()
        raise CheckTimeout(f"{message} did not finish within {seconds:g} s: blocked {blocked_in(frame)}")

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))
