"""Valid records of every format, taken from real runs of the runtime where one exists, as fuzzing seeds."""

from __future__ import annotations

import base64
import datetime
import decimal
import fractions
import uuid
from collections.abc import Sequence
from functools import cache
from typing import Any

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.codecs import CloudpickleCodec, JavaStyleCodec, RecordBinding
from reference_runtime.faults import CrashAt, Phase
from reference_runtime.records import ActionState, CallResult, StateRef
from reference_runtime.stores.forwarding import ForwardingStore
from reference_runtime.stores.kafka_native_format import encode_frame
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import encode_call_result, encode_state
from tests.runtime import agents
from tests.vectors import cases

VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    1.5,
    float("inf"),
    "",
    "text",
    "ünï€ødé",
    b"\x00\xff",
    [1, [2, [3]]],
    {"a": {"b": [1, "x", None]}, "c": b"bytes"},
    list(range(40)),
]


def effect(n: int) -> Any:
    return VALUES[n % len(VALUES)]


class Busy(Agent):
    """Writes every kind of memory value, sends events with nested attributes, records results."""

    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        n = event.attributes["input"]
        value = ctx.durable_execute(effect, n)
        ctx.short_term_memory.set(f"v{n}", value)
        ctx.short_term_memory.new_object(f"obj{n}")
        ctx.sensory_memory.set("seen", [n, str(n)])
        ctx.send_event(Event("custom", {"value": value, "n": n}))

    @action("custom")
    @staticmethod
    def after(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(event.attributes["n"]))


class _Capture(ForwardingStore):
    def __init__(self) -> None:
        super().__init__(InMemoryStore())
        self.headers: list[bytes] = []
        self.calls: list[bytes] = []
        self.frames: list[bytes] = []

    def put(self, ref: StateRef, state: ActionState) -> None:
        header = encode_state(state)
        calls = [encode_call_result(r) for r in state.call_results]
        self.headers.append(header)
        self.calls.extend(calls)
        self.frames.append(encode_frame(ref.key, ref.seq, ref.action.name, header, calls))
        super().put(ref, state)

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        self.calls.extend(encode_call_result(r) for r in results)
        super().put_call_results(ref, index, results)


@cache
def native() -> tuple[list[bytes], list[bytes], list[bytes]]:
    """Native headers, call results and Kafka frames written by real runs (signed ones included)."""
    store = _Capture()
    for agent in (agents.ThreeCalls, agents.Chained, Busy):
        Runner(agent, store, checkpoint_every=1).run([(f"k{i}", i) for i in range(6)])
    Runner(Busy, store, codec=CloudpickleCodec(hmac_key=b"k")).run([("signed", 3)])
    return store.headers, store.calls, store.frames


def payload_values() -> list[Any]:
    return [
        *VALUES,
        (1, 2),
        {1, 2},
        frozenset({3}),
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        datetime.timedelta(days=2),
        decimal.Decimal("1.25"),
        fractions.Fraction(1, 3),
        uuid.UUID(int=7),
        ValueError("boom"),
        KeyError("k"),
        RuntimeError("x", 1),
    ]


@cache
def pickles() -> list[bytes]:
    codec = CloudpickleCodec()
    out = [codec.encode_result(v) for v in payload_values()]
    out += [codec.encode_exception(e) for e in (ValueError("v"), OSError(2, "missing"), TimeoutError())]
    return out


BINDING = RecordBinding("k", 1, "act", 0, "fid", "digest", "result")


@cache
def signed_pickles() -> list[bytes]:
    codec = CloudpickleCodec(hmac_key=b"fuzz-key")
    return [codec.encode_result(v, binding=BINDING) for v in payload_values()[:12]]


@cache
def java_payloads() -> list[bytes]:
    codec = JavaStyleCodec()
    out = [codec.encode_result(v) for v in ([1, "x", None], {"a": [1.5, True]}, "text", 12)]
    out += [codec.encode_exception(e) for e in (ValueError("v"), KeyError("k"), RuntimeError())]
    return out


def java_records() -> list[bytes]:
    return [c["json"].encode("utf-8") for c in cases("actionstate_serialize.jsonl")] + [
        c["json"].encode("utf-8") for c in cases("legacy_020.jsonl")
    ]


def kryo_payloads() -> list[bytes]:
    return [base64.b64decode(c["payload_b64"]) for c in cases("kryo_values.jsonl")]


def kafka_keys() -> list[str]:
    return ["S|k-0-work", "T|k-0-work", "C|k-0-work|0", "C|k|0|17", "S|a|b", "C|x|123456"]


def selectors() -> list[str]:
    out = []
    for phase in Phase:
        out.append(CrashAt(phase).text())
        out.append(CrashAt(phase, key="order-1", seq=3, call_index=2, nth=2).text())
        out.append(CrashAt(phase, action="handle").text())
    return out
