"""The kit's guards on its own verdicts: no check can hang (KIT-8), an exception is attributed to whoever
raised it (KIT-9), and a capability is detected by trying it, not read from the declaration (CONF-1)."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest

from conformance import StoreFactory
from conformance.attribution import explain
from conformance.deadline import CheckTimeout, can_interrupt, time_limit
from conformance.runner_suite import writes_after_first_crash
from reference_runtime.stores import Capability
from reference_runtime.stores.memory import InMemoryStore
from tests.conformance.kit_run import run_kit
from tests.conformance.mutants import store_factory

pytest_plugins = ["pytester"]


def raised(fn: Any) -> BaseException:
    try:
        fn()
    except BaseException as exc:
        return exc
    raise AssertionError("expected an exception")


def as_if_in_a_check(exc: BaseException) -> BaseException:
    """``exc`` with the frames of this test module cut from the top of its traceback, as in a check, where
    every frame above the raise is the kit's or pytest's."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return exc.with_traceback(tb)


def backend_code() -> None:
    raise ValueError("the store's own error")


def backend_calling_the_kit() -> None:
    writes_after_first_crash([])


def test_an_exception_of_the_backend_is_the_backend_s() -> None:
    """KIT-9: raised in the backend's code (here a function of this test module): "the backend raised",
    with where."""
    text = explain(raised(backend_code))
    assert text.startswith("the backend raised ValueError: the store's own error at ")
    assert "test_kit_guards.py" in text and "backend_code" in text


def test_a_stop_iteration_of_the_kit_is_the_kit_s() -> None:
    """KIT-9: the kit's own ``next()`` over an empty list (what a check does with what a backend gave back)
    is reported as the check's, not "the backend raised StopIteration"."""
    text = explain(as_if_in_a_check(raised(lambda: writes_after_first_crash([]))))
    assert "the backend raised" not in text
    assert text.startswith("the check itself raised StopIteration at conformance/runner_suite.py:")
    text = explain(raised(backend_calling_the_kit))
    assert text.startswith("the kit's code raised StopIteration at conformance/runner_suite.py:")
    assert "called by the backend at" in text and "backend_calling_the_kit" in text


def test_a_failed_check_names_its_clause_and_who_raised(pytester: pytest.Pytester) -> None:
    """KIT-9 under the plugin: a store whose get raises fails the checks citing STORE-1 with a message that
    names the clause and says the backend raised, where."""
    pytester.makepyfile(
        broken="""
from reference_runtime.stores.memory import InMemoryStore


class GetRaises(InMemoryStore):
    def get(self, ref):
        raise KeyError("lost the index")
"""
    )
    suite = """
import pytest
from conformance import StoreConformance, StoreFactory
from broken import GetRaises


@pytest.fixture(scope="session")
def durable_store_factory():
    return StoreFactory(GetRaises, name="get-raises")


class TestIt(StoreConformance):
    pass
"""
    _, doc = run_kit(pytester, suite, "--durable-clause", "STORE-8", "-q")
    failed = [c for c in doc["checks"] if c["outcome"] == "failed"]
    assert failed and all("STORE-8" in c["reason"] for c in failed)
    assert any("the backend raised KeyError: 'lost the index' at broken.py:" in c["reason"] for c in failed)


@pytest.mark.skipif(not can_interrupt(), reason="needs SIGALRM on the main thread")
def test_a_blocked_call_fails_within_the_limit_and_the_previous_timer_comes_back() -> None:
    """KIT-8: code blocked forever on the main thread (a lock nobody releases) is interrupted when the limit
    passes, with a message naming what was given and where it was blocked; a timer armed before is put back
    with what it had left, and the previous handler with it."""
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, 50.0)
    try:
        lock = threading.Lock()
        lock.acquire()
        started = time.monotonic()
        with pytest.raises(CheckTimeout) as info, time_limit(0.2, "STORE-3 violated: check test_x"):
            lock.acquire()  # never released
        assert 0.15 < time.monotonic() - started < 5
        text = str(info.value)
        assert text.startswith("STORE-3 violated: check test_x did not finish within 0.2 s: blocked in the backend at ")
        assert "test_kit_guards.py" in text
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 40 < left <= 50, left
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_off_the_main_thread_nothing_is_armed() -> None:
    """KIT-8: where the check cannot be interrupted, the limit arms nothing (the kit's own waits stay
    bounded)."""
    seen: list[bool] = []

    def run() -> None:
        seen.append(can_interrupt())
        with time_limit(0.01, "x"):
            time.sleep(0.05)
        seen.append(True)

    t = threading.Thread(target=run)
    t.start()
    t.join(5)
    assert seen == [False, True]


def test_a_backend_that_blocks_forever_fails_certification_within_one_limit(pytester: pytest.Pytester) -> None:
    """KIT-8: a store whose every put blocks forever fails certification — the first check that writes fails
    after the limit naming its clauses and where it blocked, the suite's later checks are skipped naming it —
    instead of hanging the run."""
    suite = """
import threading
import pytest
from conformance import StoreConformance, StoreFactory
from reference_runtime.stores.memory import InMemoryStore


class Stuck(InMemoryStore):
    def put(self, ref, state):
        threading.Event().wait()


@pytest.fixture(scope="session")
def durable_store_factory():
    return StoreFactory(Stuck, name="stuck")


class TestIt(StoreConformance):
    check_timeout = 1.0
"""
    started = time.monotonic()
    result, doc = run_kit(pytester, suite, "-q")
    assert time.monotonic() - started < 60, "the run took as long as one limit per check"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = [(c["outcome"], c["reason"] or "") for c in doc["checks"]]
    failed = [r for o, r in outcomes if o == "failed"]
    assert len(failed) == 1 and "did not finish within 1 s: blocked in the backend at " in failed[0], failed
    assert "violated" in failed[0] and "Stuck.put" in failed[0]
    assert any("the backend hung in" in r for o, r in outcomes if o == "skipped")
    assert doc["level"] != "FULL"


def test_concurrent_writers_is_detected_by_trying_it(tmp_path: Any) -> None:
    """CONF-1: ``detected()`` tries ``concurrent_writers`` on a new store: the in-memory store has it, a
    store that refuses a write while another is in flight does not, whatever both declare."""
    good = StoreFactory(InMemoryStore, capabilities={"core", "concurrent_writers"})
    assert Capability.CONCURRENT_WRITERS in good.detected()
    busy = store_factory("ClaimsConcurrentWriters", tmp_path)
    assert "concurrent_writers" in busy.capabilities
    assert Capability.CONCURRENT_WRITERS not in busy.detected()
    assert Capability.CONCURRENT_WRITERS not in StoreFactory(InMemoryStore).detected()  # tried only when claimed
