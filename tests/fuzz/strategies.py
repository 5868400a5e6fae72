"""Inputs for the fuzzers: seeds of a format with random edits, structure-aware edits of JSON records,
resource bombs spliced into valid records, and hostile Python values for the API."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

BOMBS = [
    b"9" * 5000,
    b"[" * 900 + b"]" * 900,
    b"[" * 100_000,
    b'{"a":' * 3000,
    b"-" + b"1" * 4400,
    b'"\\ud800"',
    b"1e999999",
    b'"' + b"\\u0000" * 2000 + b'"',
]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with a few random edits: flips, truncations, insertions, deletions, duplications."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "delete", "dup"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "dup":
            data[at:at] = data[at : at + draw(st.integers(1, 16))] * draw(st.integers(1, 50))
        elif data:
            del data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


@st.composite
def spliced(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with a resource bomb spliced in at a random offset (often right after a ':' or '[')."""
    data = draw(st.sampled_from(seeds))
    cuts = [i + 1 for i, b in enumerate(data) if b in b":[,"] or [0]
    at = draw(st.sampled_from(cuts))
    return data[:at] + draw(st.sampled_from(BOMBS)) + data[at:]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@st.composite
def field_swaps(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A valid JSON record with one field replaced by an arbitrary JSON value."""
    doc = json.loads(draw(st.sampled_from(seeds)))
    slots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                slots.append((node, k))
                walk(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                slots.append((node, i))
                walk(v)

    walk(doc)
    if slots:
        parent, key = draw(st.sampled_from(slots))
        parent[key] = draw(json_values)
    return json.dumps(doc).encode("utf-8")


# Pickle opcodes with short arguments, in random order: reaches loader states no pickler writes.
_OPS = [
    b"(",
    b".",
    b"0",
    b"1",
    b"2",
    b"N",
    b"}",
    b"a",
    b"b",
    b"d",
    b"]",
    b"e",
    b"l",
    b"R",
    b")",
    b"s",
    b"t",
    b"u",
    b"\x81",
    b"\x85",
    b"\x86",
    b"\x87",
    b"\x88",
    b"\x89",
    b"\x8f",
    b"\x90",
    b"\x91",
    b"\x92",
    b"\x93",
    b"\x94",
    b"K\x05",
    b"M\xff\xff",
    b"J\xff\xff\xff\x7f",
    b"h\x00",
    b"j\x00\x00\x00\x00",
    b"q\x01",
    b"r\x00\xe1\xf5\x05",
    b"\x8c\x08builtins",
    b"\x8c\tbytearray",
    b"\x8c\x05range",
    b"\x8c\x04list",
    b"\x8a\x04\x00\xe1\xf5\x05",
    b"cbuiltins\nbytearray\n",
    b"cfractions\nFraction\n",
    b"cbuiltins\nSystemExit\n",
    b"ccopyreg\n_reconstructor\n",
    b"\x8b\xff\xff\x00\x00",
    b"p99999999999\n",
    b"I123\n",
    b"L" + b"9" * 5000 + b"L\n",
]


@st.composite
def opcode_soup(draw: st.DrawFn) -> bytes:
    ops = draw(st.lists(st.sampled_from(_OPS), min_size=1, max_size=30))
    return b"\x80\x04" + b"".join(ops) + b"."


def _self_ref(draw: st.DrawFn) -> Any:
    loop: list[Any] = [draw(st.integers())]
    loop.append(loop)
    return loop


@st.composite
def hostile_values(draw: st.DrawFn) -> Any:
    """Values user code may hand the runtime: valid trees, and sets, surrogates, cycles, deep nesting,
    huge integers and objects stores cannot hold."""
    kind = draw(st.sampled_from(["tree", "tree", "text", "set", "cycle", "deep", "int", "object", "bytes"]))
    if kind == "tree":
        return draw(json_values)
    if kind == "text":
        return draw(st.text(alphabet=st.characters(exclude_categories=()), max_size=10) | st.just("a\ud800b"))
    if kind == "set":
        return set(draw(st.lists(st.integers(), max_size=4)))
    if kind == "cycle":
        return _self_ref(draw)
    if kind == "deep":
        value: Any = draw(json_values)
        for _ in range(draw(st.sampled_from([150, 199, 201, 1000]))):
            value = [value]
        return value
    if kind == "int":
        return draw(st.sampled_from([10**5000, -(10**4400), 2**64, 10**4299]))
    if kind == "bytes":
        return draw(st.binary(max_size=20))
    return draw(st.sampled_from([object(), 1j, range(3), Exception("x")]))
