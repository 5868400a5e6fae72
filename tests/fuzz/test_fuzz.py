"""Every decoder and parser that reads untrusted input, fuzzed from valid records of its own format plus
mutations, spliced resource bombs and (for pickles) opcode soup. Each input must give a value or one of
the decoder's typed errors — located where the decoder knows the location — within MAX_SECONDS and
MAX_BYTES (spec LIM-1, LIM-8). A quick run of a few hundred inputs per target runs by default; the
``slow`` run feeds 10 000 per target (130 000 in all) and prints its figures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.codecs import CloudpickleCodec, JavaStyleCodec
from reference_runtime.durable import ActionExecution
from reference_runtime.errors import CorruptRecordError, InvalidValueError, Location, PayloadDecodeError
from reference_runtime.faults import CrashAt, ScheduleSyntaxError
from reference_runtime.records import ActionRef, ActionState, CallResult, StateRef
from reference_runtime.serde import jackson, kryo
from reference_runtime.serde.actionstate import read_action_state
from reference_runtime.serde.legacy import read_legacy_020
from reference_runtime.stores.kafka_native_format import decode_frame, parse_record_key
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import decode_call_result, decode_state

from . import seeds
from .harness import Meter, Target, metered, run
from .mutator import Mutator
from .strategies import field_swaps, hostile_values, mutated, opcode_soup, spliced

LOC = Location("k", 3, "act", 1)
REF = StateRef("k", 1, ActionRef("act", "m", "A.act", ("_input_event",)), InputEvent(1), "sk")


def _replay(codec: Any, status: str) -> Callable[[bytes], Any]:
    """Decode a payload the way recovery does: as the record at call index 0, which locates errors."""
    ex = ActionExecution(REF, InMemoryStore(), codec, ActionState())

    def decode(data: bytes) -> Any:
        record = (
            CallResult("fid", "digest", None, data, None)
            if status == "FAILED"
            else CallResult("fid", "digest", data, None, None)
        )
        return ex.decode(record, 0)

    return decode


def _frame(data: bytes) -> Any:
    """What the Kafka store does with an S record: split the frame, then decode header and calls."""
    try:
        key, seq, action, header, calls = decode_frame(data)
    except ValueError as exc:  # decode_frame's contract: the store turns the reason into a located error
        raise CorruptRecordError(f"unreadable action state record: {exc}", LOC) from exc
    decode_state(header, Location(key, seq, action))
    for i, c in enumerate(calls):
        decode_call_result(c, Location(key, seq, action, i))


def _key(text: str) -> Any:
    parsed = parse_record_key(text)
    assert parsed is None or (parsed[0] in "SCT" and (parsed[2] is None or parsed[2] >= 0))


class Store(Agent):
    """Takes a hostile value as input, writes it to memory and sends it in an event attribute."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        ctx.short_term_memory.set("v", value)
        ctx.send_event(OutputEvent({"echo": value}))


def _api(value: Any) -> Any:
    try:
        return Runner(Store).run([("key", value), (value if isinstance(value, str) else "k2", 1)])
    except Exception as exc:
        # Through memory and send_event the value check surfaces as the action's failure, with its cause.
        if isinstance(exc.__cause__, InvalidValueError):
            raise exc.__cause__ from None
        raise


def _targets() -> dict[str, tuple[Target, st.SearchStrategy[Any]]]:
    headers, calls, frames = seeds.native()
    java = seeds.java_records()
    located = (CorruptRecordError,)
    return {
        "native_state": (
            Target(lambda b: decode_state(b, LOC), located, located=True),
            mutated(headers) | spliced(headers) | field_swaps(headers),
        ),
        "native_call": (
            Target(lambda b: decode_call_result(b, LOC), located, located=True),
            mutated(calls) | spliced(calls) | field_swaps(calls),
        ),
        "kafka_frame": (Target(_frame, located, located=True), mutated(frames) | spliced(frames)),
        "kafka_key": (
            Target(_key, ()),
            st.text(max_size=30)
            | st.sampled_from(seeds.kafka_keys()).flatmap(
                lambda k: st.integers(0, len(k)).flatmap(lambda i: st.text(max_size=6).map(lambda t: k[:i] + t + k[i:]))
            ),
        ),
        "java_actionstate": (Target(read_action_state, located), mutated(java) | spliced(java) | field_swaps(java)),
        "java_legacy": (Target(read_legacy_020, located), mutated(java) | field_swaps(java)),
        "kryo": (Target(kryo.decode, located), st.binary(max_size=64) | mutated(seeds.kryo_payloads())),
        "jackson": (Target(jackson.loads, located), mutated(java) | spliced(java)),
        "pickle_result": (
            Target(_replay(CloudpickleCodec(), "SUCCEEDED"), (PayloadDecodeError,), located=True),
            mutated(seeds.pickles()) | opcode_soup(),
        ),
        "pickle_exception": (
            Target(_replay(CloudpickleCodec(), "FAILED"), (PayloadDecodeError,), located=True),
            mutated(seeds.pickles()) | opcode_soup(),
        ),
        "pickle_signed": (
            Target(_replay(CloudpickleCodec(hmac_key=b"fuzz-key"), "SUCCEEDED"), (PayloadDecodeError,), located=True),
            mutated(seeds.signed_pickles()),
        ),
        "java_codec": (
            Target(_replay(JavaStyleCodec(), "FAILED"), (PayloadDecodeError,), located=True),
            mutated(seeds.java_payloads()) | spliced(seeds.java_payloads()),
        ),
        "crash_selector": (
            Target(CrashAt.parse, (ScheduleSyntaxError,)),
            mutated([s.encode() for s in seeds.selectors()]).map(lambda b: b.decode("utf-8", "replace"))
            | st.text(max_size=40),
        ),
        "api_values": (Target(_api, (InvalidValueError,)), hostile_values()),
    }


TARGETS = _targets()


def _slow_inputs(m: Mutator) -> dict[str, Callable[[], Any]]:
    """The slow run's generators: the same kinds of input as the strategies, from the same seeds."""
    headers, calls, frames = seeds.native()
    java, pickles, java_payloads = seeds.java_records(), seeds.pickles(), seeds.java_payloads()
    selectors = seeds.selectors()
    return {
        "native_state": lambda: m.any_of(lambda: m.mutate(headers), lambda: m.splice(headers), lambda: m.swap(headers)),
        "native_call": lambda: m.any_of(lambda: m.mutate(calls), lambda: m.splice(calls), lambda: m.swap(calls)),
        "kafka_frame": lambda: m.any_of(lambda: m.mutate(frames), lambda: m.splice(frames)),
        "kafka_key": lambda: m.text(seeds.kafka_keys()),
        "java_actionstate": lambda: m.any_of(lambda: m.mutate(java), lambda: m.splice(java), lambda: m.swap(java)),
        "java_legacy": lambda: m.any_of(lambda: m.mutate(java), lambda: m.swap(java)),
        "kryo": lambda: m.mutate(seeds.kryo_payloads()),
        "jackson": lambda: m.any_of(lambda: m.mutate(java), lambda: m.splice(java)),
        "pickle_result": lambda: m.any_of(lambda: m.mutate(pickles), m.soup),
        "pickle_exception": lambda: m.any_of(lambda: m.mutate(pickles), m.soup),
        "pickle_signed": lambda: m.mutate(seeds.signed_pickles()),
        "java_codec": lambda: m.any_of(lambda: m.mutate(java_payloads), lambda: m.splice(java_payloads)),
        "crash_selector": lambda: m.text(selectors),
        "api_values": m.hostile,
    }


#: The API target runs a whole agent per input: fewer of them keep the slow run within minutes.
SLOW_EXAMPLES = {"api_values": 3_000}


def _fuzz(name: str, examples: int) -> Meter:
    target, strategy = TARGETS[name]
    with metered(name) as meter:

        @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(strategy)
        def each(data: Any) -> None:
            run(meter, target, data)

        each()
    return meter


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_quick(name: str) -> None:
    """LIM-8: 100 Hypothesis inputs per decoder (40 whole runs for the API) on every run."""
    examples = 40 if name == "api_values" else 100
    meter = _fuzz(name, examples)
    assert meter.inputs >= examples


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_slow(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """LIM-8: 10 000 inputs per decoder (3 000 whole runs for the API; 133 000 in all) from the fast
    mutator, figures printed for the record."""
    examples = SLOW_EXAMPLES.get(name, 10_000)
    target = TARGETS[name][0]
    make = _slow_inputs(Mutator(seed=sorted(TARGETS).index(name)))[name]
    with metered(name) as meter:
        for _ in range(examples):
            data = make()
            try:
                run(meter, target, data)
            except AssertionError as exc:
                raise AssertionError(f"{name}: input {data!r:.300}") from exc
    assert meter.inputs == examples
    with capsys.disabled():
        print("\n" + meter.summary())
