"""RUN-19: the async pool's threads are kept between runs, and a pool serves one run at a time.

Tools here record the thread they ran on; the batch agent and its tool are test_batch's.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, ClassVar

from reference_runtime import (
    Agent,
    CrashAt,
    DurableCall,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
    pool,
)
from reference_runtime.stores.memory import InMemoryStore

from . import test_batch

SEEN: list[threading.Thread] = []  # thread objects, not idents: an ident is reused once its thread ends


def where(n: int) -> int:
    SEEN.append(threading.current_thread())
    return n


class OneCall(Agent):
    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(where, event.attributes["input"])))


def test_a_run_gives_its_threads_to_the_next_run() -> None:
    """The second runner's work runs on a thread that was there before it started: none is started."""
    SEEN.clear()
    assert Runner(OneCall, InMemoryStore()).run([("k", 1)]).outputs == {"k": [1]}
    before = set(threading.enumerate())
    assert Runner(OneCall, InMemoryStore()).run([("k", 2)]).outputs == {"k": [2]}
    second = SEEN[-1]
    assert second.name.startswith("durable-async")
    assert second in before


def test_a_crash_leaves_no_work_running_into_the_recovery() -> None:
    """Slot 0 crashes after its effect while slot 2 still sleeps: the recovery starts only once slot 2's
    work has ended, and nothing runs while the runner fails over."""
    test_batch.reset({0: 0.0, 1: 0.0, 2: 0.2})
    injector = FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=0)])
    runner = Runner(test_batch.Batch, InMemoryStore(), injector=injector)
    at_failover: list[tuple[int, dict[int, int]]] = []
    original = runner.fail_over

    def fail_over() -> None:
        at_failover.append((test_batch.ACTIVE["now"], dict(test_batch.RUNS)))
        original()

    runner.fail_over = fail_over  # type: ignore[method-assign]
    result = runner.run([("k", [0, 1, 2])])
    assert injector.fired
    assert result.outputs == {"k": [[0, 100, 200]]}
    [(running, finished)] = at_failover
    assert running == 0
    assert finished.get(2) == 1, "slot 2's work ended before the recovery began"


class Meet(Agent):
    """One call that waits for the other runner's call to be running too."""

    BARRIER: ClassVar[threading.Barrier] = threading.Barrier(2, timeout=5)

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        done = await ctx.durable_execute_all_async([DurableCall(Meet.meet, (event.attributes["input"],))])
        ctx.send_event(OutputEvent(done[0].value))

    @staticmethod
    def meet(n: int) -> int:
        Meet.BARRIER.wait()
        return n


def test_runs_at_once_never_share_a_pool() -> None:
    """Two runners on one thread each, running at once: each call waits for the other's to be running.
    Had the runs shared a one-thread pool, the second call could not start until the first ended."""
    Meet.BARRIER.reset()
    results: dict[int, Any] = {}

    def run(n: int) -> None:
        runner = Runner(Meet, InMemoryStore(), config={"num-async-threads": 1})
        results[n] = runner.run([("k", n)]).outputs

    threads = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == {1: {"k": [1]}, 2: {"k": [2]}}


def test_a_forked_child_starts_its_own_threads() -> None:
    """A child forked after a run has none of its parent's threads: it must not be lent a pool whose
    threads it does not have (its work would never run)."""
    SEEN.clear()
    Runner(OneCall, InMemoryStore()).run([("k", 1)])
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only when its own run completes
        signal.alarm(10)
        ok = False
        try:
            ok = Runner(OneCall, InMemoryStore()).run([("k", 2)]).outputs == {"k": [2]}
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child's run did not finish")
    assert os.waitstatus_to_exitcode(status) == 0


def test_drop_idle_makes_the_next_run_start_threads() -> None:
    SEEN.clear()
    Runner(OneCall, InMemoryStore()).run([("k", 1)])
    pool.drop_idle()
    before = set(threading.enumerate())
    Runner(OneCall, InMemoryStore()).run([("k", 2)])
    first, second = SEEN
    assert second not in before
    assert not first.is_alive()
