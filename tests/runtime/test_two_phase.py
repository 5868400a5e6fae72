"""Two-phase-commit calls: results, identity, recording failures and options (TPC-4..TPC-8)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest

from reference_runtime import (
    Agent,
    CallResult,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    JavaStyleCodec,
    NondeterminismError,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
    current_call,
)
from reference_runtime.durable import ResultEncodeError
from reference_runtime.records import StateRef
from reference_runtime.retry import Backoff, RetryPolicy
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.two_phase import TwoPhaseCommitError

STATE: dict[str, str] = {}
CALLS: Counter[str] = Counter()
VISIBLE: Counter[str] = Counter()


class Payment:
    """commit returns a receipt that differs from prepare's token, so a wrong result is visible."""

    def __init__(self, amount: int, *, fail_commit: bool = False, fail_abort: bool = False, result: Any = None) -> None:
        self.amount = amount
        self.fail_commit = fail_commit
        self.fail_abort = fail_abort
        self.result = result

    def prepare(self) -> str:
        CALLS["prepare"] += 1
        txn = f"txn:{current_call().idempotency_key}"
        STATE.setdefault(txn, "prepared")
        return txn

    def commit(self, txn: str) -> Any:
        CALLS["commit"] += 1
        if self.fail_commit:
            raise RuntimeError("participant refused")
        if STATE[txn] != "committed":  # idempotent for one txn
            STATE[txn] = "committed"
            VISIBLE[txn] += self.amount
        return self.result if self.result is not None else f"receipt:{txn}"

    def abort(self, txn: str) -> None:
        CALLS["abort"] += 1
        if self.fail_abort:
            raise ValueError("abort lost the connection")
        STATE[txn] = "aborted"


class CheckedPayment(Payment):
    def is_committed(self, txn: str) -> bool:
        CALLS["is_committed"] += 1
        return STATE.get(txn) == "committed"

    def commit_result(self, txn: str) -> str:
        return f"receipt:{txn}"


class HandlePayment(Payment):
    """State that differs on every run: a lock (pickled through str(), with its address) and a counter."""

    def __init__(self, amount: int) -> None:
        super().__init__(amount)
        self.lock = threading.Lock()
        self.prepared_times = 0

    def prepare(self) -> str:
        self.prepared_times += 1
        return super().prepare()


SHARED = Payment(5)  # one object reused by every execution, its state moving each time it is used


def shared() -> Payment:
    SHARED.__dict__["uses"] = SHARED.__dict__.get("uses", 0) + 1
    return SHARED


def agent(make: Any, **options: Any) -> type[Agent]:
    class Paying(Agent):
        @action(InputEvent)
        @staticmethod
        def pay(event: Event, ctx: RunnerContext) -> None:
            try:
                ctx.send_event(OutputEvent(ctx.durable_execute(make(), **options)))
            except RuntimeError as exc:
                notes = getattr(exc, "__notes__", [])
                ctx.send_event(
                    OutputEvent(f"failed: {exc}; abort_error={getattr(exc, 'abort_error', None)!r}; {notes}")
                )

    return Paying


class LoggingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[int, str]] = []

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        self.writes.extend((index + n, r.function_id) for n, r in enumerate(results))
        super().put_call_results(ref, index, results)


def run(agent_cls: type[Agent], *crashes: CrashAt, store: InMemoryStore | None = None, **options: Any) -> Any:
    STATE.clear()
    CALLS.clear()
    VISIBLE.clear()
    return Runner(
        agent_cls, InMemoryStore() if store is None else store, injector=FaultInjector(list(crashes)), **options
    ).run([("k", 5)])


@pytest.mark.parametrize("op", [CheckedPayment, Payment])
def test_a_reconciled_commit_returns_what_commit_returned(op: type[Payment]) -> None:
    """TPC-4: after a crash between commit's effect and its record, the call returns commit's receipt (read
    back through commit_result, or commit run again), never prepare's token; the transfer is visible once."""
    free = run(agent(lambda: op(5)))
    crashed = run(agent(lambda: op(5)), CrashAt(Phase.AFTER_EFFECT, call_index=1))
    assert crashed.failovers == 1
    assert crashed.outputs == free.outputs == {"k": ["receipt:txn:k/0/pay/0"]}
    assert list(VISIBLE.values()) == [5]
    assert CALLS["prepare"] == 1


@pytest.mark.parametrize("mismatch", ["lenient", "strict"])
@pytest.mark.parametrize("make", [lambda: HandlePayment(5), shared], ids=["handle", "shared"])
@pytest.mark.parametrize("call", [0, 1])
def test_identity_does_not_depend_on_the_operations_state(make: Any, call: int, mismatch: str) -> None:
    """TPC-5, TPC-2: an operation holding a lock (digested through its address) or reused with changing state
    is the same two-phase call after a crash: nothing prepares or commits twice, in either mismatch mode."""
    result = run(agent(make), CrashAt(Phase.AFTER_RECORD, call_index=call), mismatch=mismatch)
    assert result.failovers == 1
    assert result.outputs == {"k": ["receipt:txn:k/0/pay/0"]}
    assert CALLS["prepare"] == 1 and CALLS["commit"] == 1


def test_the_idempotency_key_tells_two_operations_apart() -> None:
    """TPC-5: an operation's idempotency_key is its identity, so a different one at the same place is a
    different call (strict mode stops)."""
    keys = iter(["order-1", "order-2"])

    class Keyed(Payment):
        def __init__(self) -> None:
            super().__init__(5)
            self.idempotency_key = next(keys)

    store = InMemoryStore()
    with pytest.raises(NondeterminismError):
        run(agent(Keyed), CrashAt(Phase.AFTER_RECORD, call_index=0), store=store, mismatch="strict")


def test_an_unrecordable_commit_result_is_raised_and_never_aborted() -> None:
    """TPC-6, DE-13: a commit result the codec cannot encode fails the call with ResultEncodeError; the
    committed transaction is not aborted and nothing is written over the commit's slot."""
    store = LoggingStore()
    with pytest.raises(ResultEncodeError) as info:
        run(agent(lambda: CheckedPayment(5, result=Decimal("1.5"))), store=store, codec=JavaStyleCodec())
    assert CALLS["abort"] == 0
    assert list(STATE.values()) == ["committed"]
    assert [fid.rsplit("#", 1)[1] for _, fid in store.writes] == ["prepare", "commit"]  # PENDING only
    assert "not aborted (TPC-6)" in "".join(info.value.__notes__)


def test_the_reconciler_switch_applies_to_two_phase_commits() -> None:
    """TPC-7, DE-14: with reconcilers off, a commit crashed after its effect runs commit again instead of
    asking is_committed."""
    crash = CrashAt(Phase.AFTER_EFFECT, call_index=1)
    result = run(agent(lambda: CheckedPayment(5)), crash, config={"durable-execution.reconcilers": False})
    assert CALLS["is_committed"] == 0 and CALLS["commit"] == 2
    assert result.outputs == {"k": ["receipt:txn:k/0/pay/0"]}
    run(agent(lambda: CheckedPayment(5)), crash)
    assert CALLS["is_committed"] == 1 and CALLS["commit"] == 1


def test_retry_applies_to_two_phase_commits() -> None:
    """TPC-7, RETRY-1: retry= retries a failing prepare or commit."""
    failures = {"left": 2}

    class Flaky(Payment):
        def commit(self, txn: str) -> Any:
            if failures["left"]:
                failures["left"] -= 1
                raise ConnectionError("transient")
            return super().commit(txn)

    policy = RetryPolicy(max_attempts=3, backoff=Backoff(initial=0.0, jitter=0.0), retry_on=(ConnectionError,))
    result = run(agent(lambda: Flaky(5), retry=policy))
    assert result.outputs == {"k": ["receipt:txn:k/0/pay/0"]}
    assert CALLS["abort"] == 0


@pytest.mark.parametrize("options", [{"reconciler": lambda: None}], ids=["reconciler"])
def test_options_a_two_phase_call_cannot_honour_are_rejected(options: dict[str, Any]) -> None:
    """TPC-7: reconciler= and call arguments are refused with an error saying what to do instead."""
    with pytest.raises(TwoPhaseCommitError, match="reconciles its commit itself"):
        run(agent(lambda: Payment(5), **options))

    class WithArgs(Agent):
        @action(InputEvent)
        @staticmethod
        def pay(event: Event, ctx: RunnerContext) -> None:
            ctx.durable_execute(Payment(5), 42, note="x")

    with pytest.raises(TwoPhaseCommitError, match=r"42, note=\): a two-phase operation takes no call arguments"):
        run(WithArgs)
    assert CALLS["prepare"] == 0

    class Unkeyable(Payment):
        idempotency_key = object()

    with pytest.raises(TwoPhaseCommitError, match=r"Unkeyable.idempotency_key is <object .*must be plain data"):
        run(agent(lambda: Unkeyable(5)))


def test_a_failing_abort_keeps_the_commit_failure_raised() -> None:
    """TPC-8, TPC-3: when abort raises too, the commit failure is raised and the abort failure is attached."""
    result = run(agent(lambda: Payment(5, fail_commit=True, fail_abort=True)))
    (out,) = result.outputs["k"]
    assert out.startswith("failed: participant refused; abort_error=ValueError('abort lost the connection')")
    assert "also failed: ValueError: abort lost the connection (TPC-8)" in out
    assert CALLS["abort"] == 1


def async_agent(make: Any, **options: Any) -> type[Agent]:
    class AsyncPaying(Agent):
        @action(InputEvent)
        @staticmethod
        async def pay(event: Event, ctx: RunnerContext) -> None:
            try:
                ctx.send_event(OutputEvent(await ctx.durable_execute_async(make(), **options)))
            except RuntimeError as exc:
                ctx.send_event(OutputEvent(f"failed: {exc}; abort_error={getattr(exc, 'abort_error', None)!r}"))

    return AsyncPaying


def test_the_async_path_keeps_the_same_promises() -> None:
    """TPC-4, TPC-5, TPC-7, TPC-8 on durable_execute_async: commit's result after a reconciled crash, the
    same identity after a crash with a lock in the operation, the switch, refused options, abort failures."""
    crashed = run(async_agent(lambda: CheckedPayment(5)), CrashAt(Phase.AFTER_EFFECT, call_index=1))
    assert crashed.outputs == {"k": ["receipt:txn:k/0/pay/0"]} and list(VISIBLE.values()) == [5]
    locked = run(async_agent(lambda: HandlePayment(5)), CrashAt(Phase.AFTER_RECORD, call_index=0), mismatch="strict")
    assert locked.outputs == {"k": ["receipt:txn:k/0/pay/0"]} and CALLS["prepare"] == 1
    run(
        async_agent(lambda: CheckedPayment(5)),
        CrashAt(Phase.AFTER_EFFECT, call_index=1),
        config={"durable-execution.reconcilers": False},
    )
    assert CALLS["is_committed"] == 0 and CALLS["commit"] == 2
    failed = run(async_agent(lambda: Payment(5, fail_commit=True, fail_abort=True)))
    assert failed.outputs == {"k": ["failed: participant refused; abort_error=ValueError('abort lost the connection')"]}
    with pytest.raises(TwoPhaseCommitError, match="reconciles its commit itself"):
        run(async_agent(lambda: Payment(5), reconciler=lambda: None))


@pytest.mark.parametrize(
    "make",
    [
        lambda: CheckedPayment(5),
        lambda: Payment(5, fail_commit=True),
        lambda: Payment(5, fail_commit=True, fail_abort=True),
    ],
    ids=["commits", "aborts", "abort-fails"],
)
def test_sync_and_async_two_phase_calls_are_one_state_machine(make: Any) -> None:
    """DE-17, TPC-3, TPC-8: at every crash point of the synchronous run, durable_execute_async makes the same
    calls, fault points and journal, and ends with the same output and participant state."""

    def observe(agent_cls: type[Agent], crash: CrashAt | None) -> tuple[Any, ...]:
        STATE.clear()
        CALLS.clear()
        VISIBLE.clear()
        injector = FaultInjector([crash] if crash else [])
        result = Runner(agent_cls, InMemoryStore(), injector=injector).run([("k", 5)])
        journal = [(e.attempt, e.call_id.call_index, e.function_id, e.outcome, e.source) for e in result.journal]
        trace = [p.label() for p in injector.trace]
        return result.outputs, trace, journal, dict(CALLS), dict(STATE), dict(VISIBLE), result.failovers

    learn = FaultInjector()
    Runner(agent(make), InMemoryStore(), injector=learn).run([("k", 5)])
    points = list(dict.fromkeys(p for p in learn.trace if p.call_index is not None))
    assert points, "the operation reaches call fault points"
    for crash in [None, *(CrashAt(p.phase, call_index=p.call_index) for p in points)]:
        sync, asynchronous = observe(agent(make), crash), observe(async_agent(make), crash)
        # The sync agent also reports the failure's notes; compare what both report.
        assert [o.split("; [")[0] for o in sync[0]["k"]] == asynchronous[0]["k"], crash
        assert sync[1:] == asynchronous[1:], crash
