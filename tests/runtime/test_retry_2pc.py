"""Retry policies (RETRY-1..RETRY-4) and two-phase-commit calls (TPC-1..TPC-3), under crashes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from reference_runtime import (
    Agent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
    current_call,
)
from reference_runtime.clock import RESTART_SECONDS, VirtualClock
from reference_runtime.retry import Backoff, RetryPolicy
from reference_runtime.stores.memory import InMemoryStore

from .crashing_clock import CrashingBackoffClock

ATTEMPTS: list[int] = []
FAILURES = {"left": 0}


def flaky(x: int) -> int:
    ATTEMPTS.append(current_call().attempt)
    if FAILURES["left"] > 0:
        FAILURES["left"] -= 1
        raise ConnectionError(f"transient {FAILURES['left']}")
    return x * 2


def broken(x: int) -> int:
    ATTEMPTS.append(current_call().attempt)
    raise TypeError("not transient")


POLICY = RetryPolicy(
    max_attempts=4, backoff=Backoff(initial=1.0, multiplier=2.0, jitter=0.0), retry_on=(ConnectionError,)
)


class Retrying(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        func = broken if event.attributes["input"] == "broken" else flaky
        try:
            ctx.send_event(OutputEvent(ctx.durable_execute(func, 21, retry=POLICY)))
        except Exception as exc:
            ctx.send_event(OutputEvent(f"{type(exc).__name__}: {exc}"))


def run(inputs: Any, failures: int, crash: CrashAt | None = None) -> tuple[Any, VirtualClock]:
    ATTEMPTS.clear()
    FAILURES["left"] = failures
    clock = VirtualClock()
    result = Runner(Retrying, InMemoryStore(), clock=clock, injector=FaultInjector([crash] if crash else [])).run(
        [("k", inputs)]
    )
    return result, clock


def test_transient_failures_are_retried_with_backoff_on_the_clock() -> None:
    """RETRY-1, RETRY-3, RETRY-4: two failures, then success; sleeps 1 s and 2 s of virtual time; the
    function sees attempts 1, 2, 3."""
    result, clock = run(0, failures=2)
    assert result.outputs == {"k": [42]}
    assert ATTEMPTS == [1, 2, 3]
    assert clock.now() == pytest.approx(3.0)


def test_exhausted_retries_record_the_last_failure() -> None:
    """RETRY-1, RETRY-2: after max_attempts the last exception is the recorded outcome."""
    result, clock = run(0, failures=10)
    assert result.outputs == {"k": ["ConnectionError: transient 6"]}
    assert ATTEMPTS == [1, 2, 3, 4]
    assert clock.now() == pytest.approx(1 + 2 + 4)


def test_exceptions_outside_retry_on_are_not_retried() -> None:
    """RETRY-1: only the listed exception types are retried."""
    result, clock = run("broken", failures=0)
    assert result.outputs == {"k": ["TypeError: not transient"]}
    assert ATTEMPTS == [1]
    assert clock.now() == 0


def test_only_the_final_outcome_is_recorded_and_replay_neither_retries_nor_sleeps() -> None:
    """RETRY-2: a crash after the record replays the final outcome: no new attempt, no more sleeping."""
    result, clock = run(0, failures=2, crash=CrashAt(Phase.AFTER_RECORD))
    assert result.failovers == 1
    assert result.outputs == {"k": [42]}
    assert ATTEMPTS == [1, 2, 3], "the recorded success is replayed, not retried"
    assert clock.sleeps == [1.0, 2.0], "the replay does not sleep"
    assert clock.now() == pytest.approx(3.0 + RESTART_SECONDS), "only the failover moved the clock (PLG-13)"
    assert [e.source for e in result.journal] == ["executed", "replayed"]


def test_backoff_jitter_is_deterministic_and_bounded() -> None:
    """RETRY-3: jittered delays stay within ±jitter of the exponential base and repeat for the same call."""
    backoff = Backoff(initial=0.5, multiplier=3.0, maximum=10.0, jitter=0.25)
    for attempt in range(1, 8):
        base = min(10.0, 0.5 * 3.0 ** (attempt - 1))
        d = backoff.delay(attempt, "k/0/work/0")
        assert base * 0.75 <= d <= base * 1.25
        assert d == backoff.delay(attempt, "k/0/work/0")
    with pytest.raises(ValueError):
        Backoff(jitter=2)
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


# -- two-phase commit -----------------------------------------------------------------------------------

LEDGER: Counter[str] = Counter()  # what the participant made visible, per transaction
PREPARED: dict[str, str] = {}
FAIL_COMMIT = {"on": False}


@dataclass
class Transfer:
    """A participant: prepare stages a transfer under a txn id; commit makes it visible exactly once."""

    amount: int
    log: list[str] = field(default_factory=list)

    def prepare(self) -> str:
        txn = f"txn-{current_call().idempotency_key}"
        PREPARED[txn] = "prepared"
        return txn

    def commit(self, txn: str) -> str:
        if FAIL_COMMIT["on"]:
            raise RuntimeError("participant refused")
        if PREPARED.get(txn) != "committed":  # idempotent for one txn id
            LEDGER[txn] += self.amount
            PREPARED[txn] = "committed"
        return txn

    def abort(self, txn: str) -> None:
        PREPARED[txn] = "aborted"

    def is_committed(self, txn: str) -> bool:
        return PREPARED.get(txn) == "committed"


class Paying(Agent):
    CALLS: ClassVar[Counter[str]] = Counter()

    @action(InputEvent)
    @staticmethod
    def pay(event: Event, ctx: RunnerContext) -> None:
        try:
            ctx.send_event(OutputEvent(ctx.durable_execute(Transfer(event.attributes["input"]))))
        except RuntimeError as exc:
            ctx.send_event(OutputEvent(f"failed: {exc}"))


def pay(crash: CrashAt | None = None) -> Any:
    LEDGER.clear()
    PREPARED.clear()
    return Runner(Paying, InMemoryStore(), injector=FaultInjector([crash] if crash else [])).run([("k", 5)])


def test_prepare_is_recorded_before_commit() -> None:
    """TPC-1: the prepare record exists before commit starts (a crash before commit sees it)."""
    result = pay(CrashAt(Phase.BEFORE_CALL, call_index=1))
    fids = [(e.function_id, e.source) for e in result.journal]
    assert fids[0] == ("tests.runtime.test_retry_2pc.Transfer#prepare", "executed")
    assert ("tests.runtime.test_retry_2pc.Transfer#prepare", "replayed") in fids
    assert sum(LEDGER.values()) == 5


@pytest.mark.parametrize("phase", [Phase.BEFORE_CALL, Phase.AFTER_PENDING, Phase.AFTER_EFFECT, Phase.AFTER_RECORD])
def test_crash_between_prepare_and_commit_commits_exactly_once(phase: Phase) -> None:
    """TPC-2: wherever the crash hits the commit call, the transfer is visible exactly once."""
    result = pay(CrashAt(phase, call_index=1))
    assert result.failovers == 1
    assert list(LEDGER.values()) == [5]
    (txn,) = LEDGER
    assert result.outputs == {"k": [txn]}
    assert PREPARED[txn] == "committed"


def test_failed_commit_aborts_with_the_prepared_value() -> None:
    """TPC-3: a failing commit calls abort with prepare's result and raises the failure."""
    FAIL_COMMIT["on"] = True
    try:
        result = pay()
    finally:
        FAIL_COMMIT["on"] = False
    assert result.outputs == {"k": ["failed: participant refused"]}
    assert list(PREPARED.values()) == ["aborted"]
    assert not LEDGER
    assert [e.function_id.rsplit("#", 1)[1] for e in result.journal] == ["prepare", "commit", "abort"]


# -- retry semantics under crashes, validation, large attempt numbers ----------------------------------


def test_attempts_are_not_durable_a_crash_during_backoff_restarts_at_attempt_1() -> None:
    """RETRY-5, DE-19: attempts are not recorded, so a crash during the backoff after attempt 2 restarts the
    retries at attempt 1 on recovery (at-least-once per execution attempt); the final outcome is recorded once,
    and the crashed attempt journals the call in flight: its attempts ran."""
    ATTEMPTS.clear()
    FAILURES["left"] = 4
    policy = RetryPolicy(max_attempts=3, backoff=Backoff(initial=1.0, jitter=0.0), retry_on=(ConnectionError,))

    class Once(Agent):
        @action(InputEvent)
        @staticmethod
        def work(event: Event, ctx: RunnerContext) -> None:
            ctx.send_event(OutputEvent(ctx.durable_execute(flaky, 21, retry=policy)))

    result = Runner(Once, InMemoryStore(), clock=CrashingBackoffClock(crash_on_sleep=2)).run([("k", 0)])
    assert result.failovers == 1
    assert ATTEMPTS == [1, 2, 1, 2, 3]
    assert result.outputs == {"k": [42]}
    assert [(e.attempt, e.source, e.outcome) for e in result.journal] == [
        (0, "executed", "in flight"),
        (1, "executed", "ok"),
    ]


def test_retry_on_is_validated_when_the_policy_is_made() -> None:
    """RETRY-6: retry_on takes exception classes (one, or a tuple/list of them); anything else is a TypeError
    naming retry_on at construction, never an error at retry time that hides the call's own exception."""
    assert RetryPolicy(retry_on=ConnectionError).retry_on == (ConnectionError,)  # type: ignore[arg-type]
    assert RetryPolicy(retry_on=[ConnectionError, TimeoutError]).retry_on  # type: ignore[arg-type] == (ConnectionError, TimeoutError)
    for bad in (("ConnectionError",), (int,), (), "ConnectionError", None):
        with pytest.raises(TypeError, match=r"RetryPolicy\(retry_on=.*expected an exception class"):
            RetryPolicy(retry_on=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_attempts"):
        RetryPolicy(max_attempts=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        Backoff(maximum=float("inf"))


def test_backoff_is_capped_at_any_attempt_and_the_real_exception_is_recorded() -> None:
    """RETRY-7: attempt 1 025 waits the capped maximum instead of overflowing, and after 1 100 failing
    attempts the recorded outcome is the call's own exception."""
    backoff = Backoff()
    assert backoff.maximum * 0.8 <= backoff.delay(1025, "k/0/work/0") <= backoff.maximum * 1.2
    assert Backoff(jitter=0.0).delay(10**6) == 30.0
    ATTEMPTS.clear()
    FAILURES["left"] = 10**6
    many = RetryPolicy(max_attempts=1100, backoff=Backoff(initial=0.001, jitter=0.0), retry_on=(ConnectionError,))

    class Stubborn(Agent):
        @action(InputEvent)
        @staticmethod
        def work(event: Event, ctx: RunnerContext) -> None:
            try:
                ctx.durable_execute(flaky, 21, retry=many)
            except Exception as exc:
                ctx.send_event(OutputEvent(type(exc).__name__))

    clock = VirtualClock()
    result = Runner(Stubborn, InMemoryStore(), clock=clock).run([("k", 0)])
    assert result.outputs == {"k": ["ConnectionError"]}
    assert len(ATTEMPTS) == 1100
    assert clock.sleeps[-1] == 30.0
