"""A sweep's recoveries replay planned calls without the full replay path's checks (spec COST-8), and only
where the full path would replay them to the same value and journal entry.

Each test records a crash-free run of an agent, runs one recovery that plans its replays, then a second
recovery from the same store with something changed (an argument's type, the function, a record, the
thread, the decode limits) once with the plan and once without: both must end the same way."""

from __future__ import annotations

import enum
import pickle
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action, durable
from reference_runtime.exploration import snapshot_start as snap
from reference_runtime.faults import Phase
from reference_runtime.limits import set_decode_limits
from reference_runtime.records import CallResult
from reference_runtime.retry import RetryPolicy
from reference_runtime.stores.memory import InMemoryStore

CALLS = 12


def step(*xs: Any, **kw: Any) -> Any:
    return xs[0] if len(xs) == 1 and not kw else repr((xs, kw))


def step_copy(*xs: Any, **kw: Any) -> Any:  # another function object under another name
    return xs[0] if len(xs) == 1 and not kw else repr((xs, kw))


class Small(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


#: How the agent makes its call at each index; tests swap it between recoveries.
MAKE: dict[str, Callable[[RunnerContext, int], Any]] = {}


def nothing() -> str:
    return "n" * 300  # a payload longer than the action state (test_other_decode_limits_get_a_plan_of_their_own)


def boom(x: int) -> int:
    raise ValueError(f"boom {x}")


def _plain(ctx: RunnerContext, i: int) -> Any:
    """Index 4k: one int; 4k + 1: several plain arguments; 4k + 2: none; 4k + 3: a call that fails."""
    kind = i % 4
    if kind == 0:
        return ctx.durable_execute(step, i)
    if kind == 1:
        return ctx.durable_execute(step, f"s{i}", b"b", None, i)
    if kind == 2:
        return ctx.durable_execute(nothing)
    return ctx.durable_execute(boom, i)


def _call(ctx: RunnerContext, i: int) -> Any:
    try:
        return MAKE.get("call", _plain)(ctx, i)
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


class Planned(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent([_call(ctx, i) for i in range(event.attributes["input"])]))


INPUTS = [("k", CALLS)]


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    MAKE.clear()


def _reference() -> snap.Reference:
    ref = snap.record(Planned, INPUTS, InMemoryStore, None, {})
    snap.prepare(ref, None)
    return ref


def _store_at_last_call(ref: snap.Reference) -> InMemoryStore:
    """The store as a crash before the last call left it: every earlier call recorded."""
    last = max(i for i, p in enumerate(ref.trace) if p.phase is Phase.BEFORE_CALL)
    store = InMemoryStore()
    ref.log.replay(store, ref.mark_at(last).store)
    return store


def _recover(ref: snap.Reference, store: InMemoryStore, plan: bool, mode: str = "lenient") -> Any:
    """A recovery's outputs and journal, or the error it raised."""
    runner = Runner(Planned, store, mismatch=mode)
    runner.fail_over()
    with ref.replaying(plan):
        try:
            result = runner.run(INPUTS)
        except Exception as exc:
            return ("raised", type(exc).__name__, str(exc))
    return (result.outputs, [tuple(e[:5]) for e in result.journal])


def _planned_replays(ref: snap.Reference, store_at: Callable[[], InMemoryStore]) -> tuple[Any, int]:
    """Run one recovery to fill the plan, then another, counting the calls that did not replay from the plan:
    through the full path (``execute``) or, a call made for the first time, straight to ``new_call``."""
    _recover(ref, store_at(), True)
    full = 0
    originals = {name: getattr(durable.ActionExecution, name) for name in ("execute", "new_call")}

    def counting(original: Callable[..., Any]) -> Callable[..., Any]:
        def count(self: durable.ActionExecution, *args: Any, **kwargs: Any) -> Any:
            nonlocal full
            full += 1
            return original(self, *args, **kwargs)

        return count

    for name, original in originals.items():
        setattr(durable.ActionExecution, name, counting(original))
    try:
        return _recover(ref, store_at(), True), full
    finally:
        for name, original in originals.items():
            setattr(durable.ActionExecution, name, original)


def test_a_second_recovery_replays_every_plain_call_from_the_plan() -> None:
    """COST-8: after one recovery planned them, a second one takes no planned call through the full replay
    path (only the failed calls, which are never planned, and the crashed call), and ends as the recovery
    without a plan does, journal entries included."""
    ref = _reference()
    planned, full = _planned_replays(ref, lambda: _store_at_last_call(ref))
    failed = len(range(3, CALLS - 1, 4))  # failures are never planned; the last call runs
    assert full == failed + 1
    assert planned == _recover(ref, _store_at_last_call(ref), False)


#: Per case, the call index whose call is made otherwise in the second recovery, and how it is made.
ODD_CALLS: dict[str, tuple[int, Callable[[RunnerContext], Any]]] = {
    "a bool for an int": (4, lambda ctx: ctx.durable_execute(step, True)),
    "an IntEnum for an int": (4, lambda ctx: ctx.durable_execute(step, Small.ONE)),
    "a float for an int": (4, lambda ctx: ctx.durable_execute(step, 4.0)),
    "a str subclass": (5, lambda ctx: ctx.durable_execute(step, Text("s5"), b"b", None, 5)),
    "a bytearray for bytes": (5, lambda ctx: ctx.durable_execute(step, "s5", bytearray(b"b"), None, 5)),
    "a bool among several": (1, lambda ctx: ctx.durable_execute(step, "s1", b"b", None, True)),
    "an argument for none": (6, lambda ctx: ctx.durable_execute(nothing, None)),
    "a keyword argument": (4, lambda ctx: ctx.durable_execute(step, x=4)),
    "another function object": (4, lambda ctx: ctx.durable_execute(step_copy, 4)),
    "the same function id": (4, lambda ctx: ctx.durable_execute(step, 4, durable_id=f"{__name__}.step")),
    "another function id": (4, lambda ctx: ctx.durable_execute(step, 4, durable_id="another.id")),
    "a retry policy": (4, lambda ctx: ctx.durable_execute(step, 4, retry=RetryPolicy(max_attempts=2))),
    "a reconciler": (4, lambda ctx: ctx.durable_execute(step, 4, reconciler=nothing)),
    "other values": (4, lambda ctx: ctx.durable_execute(step, 5)),
}
MISMATCHED = {"a bool for an int", "other values", "another function id"}


@pytest.mark.parametrize("mode", ["lenient", "strict"])
@pytest.mark.parametrize("name", list(ODD_CALLS))
def test_a_call_that_differs_from_the_planned_one_takes_the_full_path(name: str, mode: str) -> None:
    """COST-8, IDN-2, DE-7, DE-8: a call equal to the planned one in value but not in type (a bool, an
    IntEnum, a float, a str subclass, a bytearray), made another way (a keyword, another function, an
    option) or with other values, replays, mismatches or re-executes exactly as without a plan."""
    ref = _reference()
    _recover(ref, _store_at_last_call(ref), True)
    index, make = ODD_CALLS[name]
    MAKE["call"] = lambda ctx, i: make(ctx) if i == index else _plain(ctx, i)
    with_plan = _recover(ref, _store_at_last_call(ref), True, mode)
    assert with_plan == _recover(ref, _store_at_last_call(ref), False, mode)
    if name in MISMATCHED:  # a mismatch: raised, or the call runs again (DE-7, DE-8)
        if mode == "strict":
            assert with_plan[0] == "raised" and with_plan[1] == "NondeterminismError"
        else:
            assert any(e[0].call_index == 4 and e[4] == "executed" for e in with_plan[1])


def test_a_record_that_differs_from_the_planned_one_is_read_from_the_store() -> None:
    """COST-8: the plan holds a record's value only for that record: a store whose record at a planned index
    holds another value (same function and digest) replays that value, as without a plan."""
    ref = _reference()
    _recover(ref, _store_at_last_call(ref), True)

    def tampered() -> InMemoryStore:
        store = _store_at_last_call(ref)
        (entry,) = store._entries.values()
        old = entry.calls[4]
        entry.calls[4] = CallResult(old.function_id, old.args_digest, pickle.dumps(99, protocol=5), None, old.status)
        return store

    with_plan = _recover(ref, tampered(), True)
    assert with_plan == _recover(ref, tampered(), False)
    assert with_plan[0]["k"][0][4] == 99


def test_a_call_from_another_thread_is_refused_as_without_a_plan() -> None:
    """COST-8, DE-11: a planned call made from a thread other than the runner's is refused, as it is without
    a plan."""
    ref = _reference()
    _recover(ref, _store_at_last_call(ref), True)

    def from_thread(ctx: RunnerContext, i: int) -> Any:
        if i != 4:
            return _plain(ctx, i)
        box: list[Any] = []

        def run() -> None:
            try:
                box.append(ctx.durable_execute(step, i))
            except Exception as exc:
                box.append(exc)

        t = threading.Thread(target=run)
        t.start()
        t.join()
        if isinstance(box[0], Exception):
            raise box[0]
        return box[0]

    MAKE["call"] = from_thread
    with_plan = _recover(ref, _store_at_last_call(ref), True)
    assert with_plan == _recover(ref, _store_at_last_call(ref), False)
    assert with_plan[0] == "raised"


def test_other_decode_limits_get_a_plan_of_their_own() -> None:
    """COST-8: planned values were decoded under the limits then in force; under stricter ones a recovery
    decodes again and refuses what they refuse, as without a plan."""
    ref = _reference()
    _recover(ref, _store_at_last_call(ref), True)
    previous = set_decode_limits(max_payload_bytes=290)  # the state (about 250 bytes) in, "n" * 300 out
    try:
        with_plan = _recover(ref, _store_at_last_call(ref), True)
        assert with_plan == _recover(ref, _store_at_last_call(ref), False)
    finally:
        set_decode_limits(previous)
    assert with_plan[0] == "raised" and with_plan[1] == "PayloadLimitError"
