"""Every decoder, fed arbitrary and mutated input, returns a value or raises one typed error that says
where it failed (SER-8). The fast variants run by default; the ``slow`` ones run 10 000 examples each."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_runtime.codecs import CloudpickleCodec, JavaStyleCodec
from reference_runtime.errors import CorruptRecordError, Location, PayloadDecodeError, WireFormatError
from reference_runtime.serde import jackson, kryo
from reference_runtime.serde.actionstate import read_action_state
from reference_runtime.serde.legacy import read_legacy_020
from reference_runtime.stores.kafka_flink_format import decode_value
from reference_runtime.stores.native import decode_call_result, decode_state
from tests.vectors import cases

SEEDS_JSON = [c["json"].encode("utf-8") for c in cases("actionstate_serialize.jsonl")] + [
    c["json"].encode("utf-8") for c in cases("legacy_020.jsonl")
]
SEEDS_KRYO = [base64.b64decode(c["payload_b64"]) for c in cases("kryo_values.jsonl")]
LOC = Location("k", 3, "act", 1)


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with a few random edits: flips, truncations, insertions, deletions."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif data:
            del data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@st.composite
def field_swaps(draw: st.DrawFn) -> bytes:
    """A valid record with one field replaced by an arbitrary JSON value (wrong types, unknown shapes)."""
    doc = json.loads(draw(st.sampled_from(SEEDS_JSON[:48])))
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((node, k))
                walk(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                paths.append((node, i))
                walk(v)

    walk(doc)
    if paths:
        parent, key = draw(st.sampled_from(paths))
        parent[key] = draw(json_values)
    return json.dumps(doc).encode("utf-8")


def check(decode: Callable[[bytes], Any], data: bytes) -> None:
    try:
        decode(data)
    except WireFormatError as exc:
        assert exc.path, "a wire-format error names the path that failed"
        assert exc.path == "payload" or exc.path.startswith("$")
    except (CorruptRecordError, PayloadDecodeError) as exc:
        assert str(exc)


_CLOUDPICKLE = CloudpickleCodec()
_JAVA = JavaStyleCodec()

DECODERS: dict[str, tuple[Callable[[bytes], Any], st.SearchStrategy[bytes]]] = {
    "kryo": (kryo.decode, st.binary(max_size=64) | mutated(SEEDS_KRYO)),
    "jackson": (jackson.loads, st.binary(max_size=64) | mutated(SEEDS_JSON)),
    "actionstate": (read_action_state, st.binary(max_size=64) | mutated(SEEDS_JSON) | field_swaps()),
    "legacy_020": (read_legacy_020, mutated(SEEDS_JSON) | field_swaps()),
    "native_state": (lambda b: decode_state(b, LOC), st.binary(max_size=64) | mutated(SEEDS_JSON)),
    "native_call": (lambda b: decode_call_result(b, LOC), st.binary(max_size=64) | mutated(SEEDS_JSON)),
    "cloudpickle_result": (_CLOUDPICKLE.decode_result, st.binary(max_size=64)),
    "java_exception": (_JAVA.decode_exception, st.binary(max_size=64) | mutated(SEEDS_JSON)),
    "kafka_flink_value": (decode_value, st.binary(max_size=64) | mutated(SEEDS_JSON) | field_swaps()),
}


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoder_fuzz_fast(name: str) -> None:
    """SER-8: 300 examples per decoder on every run."""
    decode, strategy = DECODERS[name]

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(strategy)
    def run(data: bytes) -> None:
        check(decode, data)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoder_fuzz_10k(name: str) -> None:
    """SER-8: 10 000 examples per decoder."""
    decode, strategy = DECODERS[name]

    @settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(strategy)
    def run(data: bytes) -> None:
        check(decode, data)

    run()
