"""Tagged values (``serde/tagged.py``): the encoder walks without naming places, and names the culprit's place
on a second walk only when there is one (benchmark P5); what it writes and what it refuses are the same."""

from __future__ import annotations

import base64
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_runtime.errors import Location
from reference_runtime.limits import safe_repr
from reference_runtime.serde.tagged import decode_value, encode_value

_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.floats() | st.binary(max_size=4)
#: Values that may hold something a record cannot: a set, a non-string dict key.
_VALUES = st.recursive(
    _SCALARS | st.frozensets(st.integers(), max_size=2),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3) | st.integers(0, 3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _reference(value: Any, path: str) -> Any:
    """The encoder as it was before it stopped naming places on its first walk (a path built per value)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, list | tuple):
        return [_reference(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"cannot store a non-string dict key {safe_repr(k)} at {path}")
            out[k] = _reference(v, f"{path}[{k!r}]")
        return {"$map": out}
    raise TypeError(f"cannot store a {type(value).__name__} at {path}")


def _outcome(encode: Any, value: Any) -> tuple[str, Any]:
    try:
        return ("ok", encode(value, "attributes"))
    except TypeError as exc:
        return ("refused", str(exc))


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_encoding_writes_and_refuses_as_the_walk_that_names_every_place(value: Any) -> None:
    assert repr(_outcome(encode_value, value)) == repr(_outcome(_reference, value))


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_what_is_written_reads_back(value: Any) -> None:
    kind, encoded = _outcome(encode_value, value)
    if kind == "ok":
        back = decode_value(encoded, "$", Location("k", 0, "a"))
        assert _same(back, value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, tuple):
        b = list(b)
    if isinstance(b, bytearray):
        b = bytes(b)
    if isinstance(b, float) and math.isnan(b):
        return isinstance(a, float) and math.isnan(a)
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"a": [1, {"b": {1, 2}}]}, "cannot store a set at attributes['a'][1]['b']"),
        ({"a": {3: 1}}, "cannot store a non-string dict key 3 at attributes['a']"),
        ([1, (2, object())], "cannot store a object at attributes[1][1]"),
    ],
)
def test_a_refusal_names_the_place_of_the_culprit(value: Any, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        encode_value(value, "attributes")
    assert str(caught.value) == message
