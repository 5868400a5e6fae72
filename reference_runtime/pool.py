"""The async pool a run's durable work runs on, with its threads kept between runs.

Starting a thread costs 0.1-0.2 ms on a busy machine, so a batch of 16 tools on a pool made for the run
spends 2-3 ms starting threads before its last tool starts (benchmark P5). A Flink Agents operator keeps
its async executor for its lifetime; here a run borrows an idle pool and gives it back when it ends.

A pool serves one run at a time, so runs stay isolated as they were with a pool each: a run that ends
(normally or by a simulated crash) waits for all its work, as ``shutdown(wait=True)`` did, before its pool
can be lent again. Nothing of one run is left running into the next, and concurrent runs never share
threads. Work a crashed attempt handed to the pool runs to its end even if no thread had taken it yet, so
the journal's ``in flight`` calls all ran, whatever the threads' timing (spec DE-19).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

#: Idle pools kept per thread count: enough for a few runners used at once; more are shut down.
KEEP = 2


class RunPool(ThreadPoolExecutor):
    """A :class:`~concurrent.futures.ThreadPoolExecutor` that knows the work of the run it serves."""

    def __init__(self, threads: int) -> None:
        super().__init__(threads, thread_name_prefix="durable-async")
        self.threads = threads
        self._work: list[Future[Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        self._work.append(future)
        return future

    def end_run(self) -> None:
        """Wait for the run's work to finish, what a crashed attempt left in the queue included."""
        work, self._work = self._work, []
        wait(work)


_idle: dict[int, list[RunPool]] = {}
_lock = threading.Lock()


def borrow(threads: int) -> RunPool:
    """An idle pool of ``threads`` threads, or a new one."""
    with _lock:
        idle = _idle.get(threads)
        if idle:
            return idle.pop()
    return RunPool(threads)


def give_back(pool: RunPool) -> None:
    """End the run ``pool`` served (see :meth:`RunPool.end_run`) and keep it for the next run."""
    pool.end_run()
    with _lock:
        idle = _idle.setdefault(pool.threads, [])
        if len(idle) < KEEP:
            idle.append(pool)
            return
    pool.shutdown(wait=False)  # idle: every thread it has is waiting for work, so none is left running


def drop_idle() -> None:
    """Shut down every idle pool, so the next run starts its threads afresh (benchmark P5's cold row)."""
    with _lock:
        pools = [p for idle in _idle.values() for p in idle]
        _idle.clear()
    for pool in pools:
        pool.shutdown(wait=True)


def _forget_after_fork() -> None:
    # A forked child has none of its parent's threads: a pool lent there would take work and never run it.
    # The lock may have been held by a thread the child does not have.
    global _lock
    _idle.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
