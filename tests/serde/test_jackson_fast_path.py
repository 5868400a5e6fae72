"""``jackson_json`` hands plain values to the stdlib's C encoder and keeps its own loop for the rest (floats,
subclasses, non-string keys, ``\\u`` escapes, characters outside the BMP, deep nesting): a state key hashes
an event's attributes with it, on every action execution (benchmark P5). These tests hold the two writers to
the same text, or the same error, for any value (SER-1, SER-9)."""

from __future__ import annotations

import enum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_runtime.serde import jackson


class Level(enum.IntEnum):
    LOW = 1


class Shouting(int):
    def __str__(self) -> str:
        return "LOUD"


class Tag(str):
    pass


_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=8)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    _TEXT,
    st.sampled_from([Level.LOW, Shouting(7), Tag("t"), "\\u0041", "a\nb\tc", "\x7f", "\U0001f600", "\uffff"]),
)
_KEYS = st.one_of(_TEXT, _TEXT, st.integers(-3, 3), st.booleans(), st.none(), st.just(Tag("k")))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_KEYS, inner, max_size=4),
    ),
    max_leaves=20,
)


def _outcome(write: Any) -> tuple[str, str]:
    try:
        return ("text", write())
    except (TypeError, ValueError) as exc:
        return (type(exc).__name__, str(exc))


@settings(max_examples=400)
@given(_VALUES, st.booleans())
def test_any_value_is_written_as_the_loop_writes_it(value: Any, sort_keys: bool) -> None:
    fast = _outcome(lambda: jackson.jackson_json(value, sort_keys=sort_keys))
    loop = _outcome(lambda: jackson._jackson_loop(value, sort_keys, False, "JSON"))
    assert fast == loop


@pytest.mark.parametrize("sort_keys", [False, True])
@pytest.mark.parametrize(
    "value",
    [
        {"\uffff": 1, "\U00010000": 2},  # UTF-16 puts the surrogate pair first, code points the other way
        {"b": 1, "a": {"d": [1, "x"], "c": None}},
        {"k": "a\x01b"},  # Jackson's \u0001 against the stdlib's \u0001: the digits' case differs past 9
        {"k": "\x1f"},
        {"k": "back\\u005c"},
        {True: 1, "True": 2},
        {1: "x", 10: "y", 2: "z"},  # Jackson orders "1" < "10" < "2" as strings
        {"n": 1.0},
        {"n": 1e7},
        {"n": 1e-4},
        {"n": Level.LOW},
        {"n": Shouting(3)},
        (1, (2, [3])),
        [],
        {},
        "top",
        10**4000,
    ],
)
def test_the_edges_between_the_two_writers(value: Any, sort_keys: bool) -> None:
    fast = _outcome(lambda: jackson.jackson_json(value, sort_keys=sort_keys))
    assert fast == _outcome(lambda: jackson._jackson_loop(value, sort_keys, False, "JSON"))


def test_deep_values_and_self_references_take_the_loop() -> None:
    shallow: list[Any] = []
    deep: list[Any] = []
    for _ in range(jackson._FAST_DEPTH - 1):
        shallow = [shallow]
    for _ in range(jackson.MAX_NESTING - 1):
        deep = [deep]  # as deep as a reader takes back
    assert jackson._stdlib_json(shallow, True) is not None
    assert jackson._stdlib_json([shallow], True) is None
    assert jackson.jackson_json(deep) == "[" * jackson.MAX_NESTING + "]" * jackson.MAX_NESTING
    looped: list[Any] = []
    looped.append(looped)
    assert jackson._stdlib_json(looped, False) is None
    with pytest.raises(ValueError, match="nests deeper than 1000 levels"):
        jackson.jackson_json(looped)


def test_an_events_attributes_take_the_fast_path() -> None:
    """The shape a ToolRequestEvent carries: the speed-up benchmark P5 measures is there."""
    calls = [{"id": f"c{i}", "function": {"name": "search", "arguments": {"q": "é", "n": i}}} for i in range(16)]
    attributes = {"model": "m", "tool_calls": calls}
    text = jackson._stdlib_json(attributes, True)
    assert text is not None
    assert text == jackson._jackson_loop(attributes, True, False, "JSON")
    assert text.startswith('{"model":"m","tool_calls":[{"function":{"arguments":{"n":0,"q":"é"}')
