"""Every decoder, fed arbitrary and mutated input, returns a value or raises one typed error that says
where it failed (SER-8). The fast variants run by default; the ``slow`` ones run 10 000 examples each."""

from __future__ import annotations

import base64
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
from tests.fuzz.strategies import field_swaps, mutated
from tests.vectors import cases

SEEDS_JSON = [c["json"].encode("utf-8") for c in cases("actionstate_serialize.jsonl")] + [
    c["json"].encode("utf-8") for c in cases("legacy_020.jsonl")
]
SEEDS_KRYO = [base64.b64decode(c["payload_b64"]) for c in cases("kryo_values.jsonl")]
LOC = Location("k", 3, "act", 1)


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
    "actionstate": (read_action_state, st.binary(max_size=64) | mutated(SEEDS_JSON) | field_swaps(SEEDS_JSON[:48])),
    "legacy_020": (read_legacy_020, mutated(SEEDS_JSON) | field_swaps(SEEDS_JSON[:48])),
    "native_state": (lambda b: decode_state(b, LOC), st.binary(max_size=64) | mutated(SEEDS_JSON)),
    "native_call": (lambda b: decode_call_result(b, LOC), st.binary(max_size=64) | mutated(SEEDS_JSON)),
    "cloudpickle_result": (_CLOUDPICKLE.decode_result, st.binary(max_size=64)),
    "java_exception": (_JAVA.decode_exception, st.binary(max_size=64) | mutated(SEEDS_JSON)),
    "kafka_flink_value": (decode_value, st.binary(max_size=64) | mutated(SEEDS_JSON) | field_swaps(SEEDS_JSON[:48])),
}


def fuzz(name: str, examples: int) -> None:
    decode, strategy = DECODERS[name]

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(strategy)
    def run(data: bytes) -> None:
        check(decode, data)

    run()


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoder_fuzz_fast(name: str) -> None:
    """SER-8: 300 examples per decoder on every run."""
    fuzz(name, 300)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoder_fuzz_10k(name: str) -> None:
    """SER-8: 10 000 examples per decoder."""
    fuzz(name, 10_000)


def test_a_list_of_nulls_round_trips_and_its_length_is_bounded() -> None:
    """SER-8, LIM-8: a Kryo list whose elements are all null writes one (null) class byte for them all, so it
    reads back whatever its length (the store's model check found ``[None, None]`` refused), and a length
    over ``max_container_len`` is one typed error."""
    from reference_runtime.errors import KryoDecodeError
    from reference_runtime.limits import decode_limits

    for value in ([None, None], [None] * 1000, [1, None], ["a", None, "b"]):
        assert kryo.to_python(kryo.decode(kryo.encode(kryo.from_python(value)))) == value
    one = kryo.encode(kryo.from_python([None]))
    head = one[: one.rindex(kryo._varint_flag(True, 2))]  # the list's class, before its length
    too_many = decode_limits().max_container_len + 1
    with pytest.raises(KryoDecodeError, match="max_container_len"):
        kryo.decode(head + kryo._varint_flag(True, too_many + 1) + b"\x00")
