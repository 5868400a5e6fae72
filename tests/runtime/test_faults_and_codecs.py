"""Fault points (FLT-*), payload codecs (PAY-*) and remaining durable-call clauses."""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle
import pytest

from reference_runtime import (
    Agent,
    CloudpickleCodec,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    JavaStyleCodec,
    MemoryRef,
    OutputEvent,
    Phase,
    RemoteCallError,
    Runner,
    RunnerContext,
    SimulatedCrash,
    UntrustedPayloadError,
    action,
)
from reference_runtime.durable import ResultEncodeError
from reference_runtime.errors import PayloadDecodeError
from reference_runtime.faults import FaultPoint
from reference_runtime.stores.memory import InMemoryStore

from . import agents


def test_every_phase_is_reached_by_a_run_with_checkpoints() -> None:
    """FLT-1: all named phases occur, in a meaningful order for one call."""
    injector = FaultInjector()
    Runner(agents.WithReconciler, injector=injector, checkpoint_every=1).run([("k", 1)])
    Runner(agents.Chained, injector=injector).run([("k", 1)])
    phases = {p.phase for p in injector.trace}
    assert phases == set(Phase)
    first_call = [p.phase for p in injector.trace if p.call_index == 0][:4]
    assert first_call == [Phase.BEFORE_CALL, Phase.AFTER_PENDING, Phase.AFTER_EFFECT, Phase.AFTER_RECORD]


def test_selection_by_fields_and_nth_match() -> None:
    """FLT-2: selectors match on any subset of fields; nth picks a later match."""
    injector = FaultInjector([CrashAt(Phase.AFTER_RECORD, key="b", nth=2)])
    Runner(agents.ThreeCalls, injector=injector).run([("a", 1), ("b", 1)])
    (fired,) = injector.fired
    assert (fired.key, fired.call_index, fired.phase) == ("b", 1, Phase.AFTER_RECORD)
    assert CrashAt.parse("call3:after-effect") == CrashAt(Phase.AFTER_EFFECT, call_index=3)
    assert CrashAt.parse("work:before-complete") == CrashAt(Phase.BEFORE_COMPLETE, action="work")
    point = FaultPoint(Phase.AFTER_EFFECT, "k", 0, "work", 3, "f")
    assert CrashAt.parse(point.label()).matches(point)


class Swallower(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        try:
            ctx.durable_execute(agents.step, 1)
        except Exception:  # a careless agent cannot hide a crash
            ctx.send_event(OutputEvent("swallowed"))
            return
        ctx.send_event(OutputEvent("ok"))


def test_simulated_crash_is_not_swallowed_by_except_exception() -> None:
    """FLT-3: SimulatedCrash is a BaseException."""
    assert not issubclass(SimulatedCrash, Exception)
    result = Runner(Swallower, injector=FaultInjector([CrashAt(Phase.AFTER_EFFECT)])).run([("k", 0)])
    assert result.outputs == {"k": ["ok"]} and result.failovers == 1


def test_trace_is_ordered_and_plan_fires_during_recovery() -> None:
    """FLT-4/FLT-5: the trace lists points in order; the second crash fires while recovering."""
    plan = [CrashAt(Phase.AFTER_RECORD, call_index=2), CrashAt(Phase.BEFORE_CALL, call_index=0)]
    injector = FaultInjector(plan)
    result = Runner(agents.ThreeCalls, injector=injector).run([("k", 1)])
    assert [p.phase for p in injector.fired] == [Phase.AFTER_RECORD, Phase.BEFORE_CALL]
    first, second = (next(i for i, q in enumerate(injector.trace) if q is p) for p in injector.fired)
    assert first < second and result.failovers == 2 and injector.pending == 0


def test_cloudpickle_codec_writes_what_flink_writes() -> None:
    """PAY-1: result payload = cloudpickle.dumps(result)."""
    codec = CloudpickleCodec()
    value = {"a": [1, 2.5, "x", None]}
    assert codec.encode_result(value) == cloudpickle.dumps(value)
    assert codec.decode_result(cloudpickle.dumps(value)) == value
    exc = codec.decode_exception(codec.encode_exception(KeyError("k")))
    assert isinstance(exc, KeyError) and exc.args == ("k",)


def test_java_style_codec() -> None:
    """PAY-2: JSON results and {exceptionClass, message} exceptions; unknown classes stay inert."""
    codec = JavaStyleCodec()
    assert codec.encode_result({"x": [1]}) == b'{"x":[1]}'
    assert codec.encode_exception(ValueError("bad")) == b'{"exceptionClass":"ValueError","message":"bad"}'
    assert isinstance(codec.decode_exception(b'{"exceptionClass":"ValueError","message":"m"}'), ValueError)
    remote = codec.decode_exception(b'{"exceptionClass":"java.lang.IllegalStateException","message":"m"}')
    assert isinstance(remote, RemoteCallError) and remote.exception_class == "java.lang.IllegalStateException"


class Point:
    def __init__(self, x: int) -> None:
        self.x = x


def test_arbitrary_classes_need_an_explicit_opt_in() -> None:
    """PAY-3/PAY-4: the restricted loader refuses a user class; allow-list or trusted admit it."""
    payload = pickle.dumps(Point(3))
    with pytest.raises(UntrustedPayloadError, match="Point"):
        CloudpickleCodec().decode_result(payload)
    name = f"{Point.__module__}.{Point.__qualname__}"
    assert CloudpickleCodec(allowed_classes=[name]).decode_result(payload).x == 3
    assert CloudpickleCodec(trusted=True).decode_result(payload).x == 3


@pytest.mark.parametrize(
    "payload",
    [
        b"cos\nsystem\n(S'true'\ntR.",  # protocol 0: GLOBAL
        b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.",  # protocol 2: GLOBAL + REDUCE
        pickle.dumps(Point(3), protocol=5),  # STACK_GLOBAL
        b"\x80\x02\x82\x01.",  # EXT1
    ],
)
def test_payloads_that_can_name_a_global_always_go_through_the_restricted_loader(payload: bytes) -> None:
    """PAY-3: only payloads with no byte that could be a global-naming opcode skip the restricted loader;
    nothing else is loaded by plain pickle."""
    with pytest.raises(PayloadDecodeError):  # plain pickle would run os.system or build a Point
        CloudpickleCodec().decode_result(payload)


@pytest.mark.parametrize("value", [6, "xyz", "a string with c and i", [1, 2.5, None], {"k": (1, b"z")}, 10**30])
def test_plain_payloads_decode_the_same_on_either_path(value: Any) -> None:
    """PAY-3: plain data decodes to the same value whether or not its bytes allow the direct load."""
    assert CloudpickleCodec().decode_result(CloudpickleCodec().encode_result(value)) == value


class Unpicklable(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.durable_execute(agents.step, 1)
        ctx.durable_execute(make_set)


def make_set() -> Any:
    return {1, 2}


def test_results_the_codec_cannot_write_fail_with_location() -> None:
    """DE-13: the Java codec cannot write a set; the error names the call, nothing unreadable is stored."""
    store = InMemoryStore()
    with pytest.raises(ResultEncodeError, match="call_index=1"):
        Runner(Unpicklable, store, codec=JavaStyleCodec()).run([("k", 0)])


class Lazy(Agent):
    LOG: list[str] = []

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        first = ctx.durable_execute_async(Lazy.note, "first")
        second = ctx.durable_execute_async(Lazy.note, "second")
        Lazy.LOG.append("created")
        await second
        await first

    @staticmethod
    def note(what: str) -> str:
        Lazy.LOG.append(what)
        return what


def test_async_calls_start_only_when_awaited_in_await_order() -> None:
    """DE-12: nothing runs before await; call indexes follow await order."""
    Lazy.LOG.clear()
    result = Runner(Lazy).run([("k", 0)])
    assert Lazy.LOG == ["created", "second", "first"]
    first, second = result.journal
    assert first.args_digest != second.args_digest
    assert [e.call_id.call_index for e in result.journal] == [0, 1]


def kw_echo(**kwargs: Any) -> Any:
    return sorted(kwargs)


class Forwarding(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        got = ctx.durable_execute(kw_echo, a=1, reconciler=lambda: None, durable_id="x")
        ctx.send_event(OutputEvent(got))


def test_runtime_keywords_are_not_forwarded() -> None:
    """IDN-8: reconciler and durable_id never reach the function."""
    assert Runner(Forwarding).run([("k", 0)]).outputs == {"k": [["a"]]}


class RefAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ref = ctx.short_term_memory.set("profile.name", "ada")
        assert ref == MemoryRef.create("short_term", "profile.name")
        ctx.send_event(OutputEvent(ref.resolve(ctx)))


def test_memory_refs_resolve() -> None:
    """MEM-12: a MemoryRef resolves to the value it points to."""
    assert Runner(RefAgent).run([("k", 0)]).outputs == {"k": ["ada"]}


def test_completed_state_has_no_call_results_and_keys_do_not_interfere() -> None:
    """STORE-8/STORE-2: completion clears call results; each (key, seq, action) has its own state."""
    store = InMemoryStore()
    runner = Runner(agents.ThreeCalls, store, injector=FaultInjector([CrashAt(Phase.CHECKPOINT)]))
    with pytest.raises(SimulatedCrash):
        runner.inputs.extend([("a", 1), ("b", 1)])
        runner.process()
    assert len(store) == 2
    for entry in store._entries.values():
        assert entry.calls == []
