"""The Jackson JSON writer and reader need neither deep Python recursion nor a change to the process-wide
recursion limit (SER-9), and keep the nesting limit (LIM-3, LIM-8)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_runtime.errors import WireFormatError
from reference_runtime.serde import jackson
from reference_runtime.serde.java import java_double, utf16_order

ROOT = Path(__file__).resolve().parents[2]


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


# A thread with a low recursion limit reads and writes documents nested to the limit; the limit is never
# set by the serde (a recorder replaces sys.setrecursionlimit) and is still 200 when the work is done.
_SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from reference_runtime.serde import jackson
    from tests.serde.test_jackson_nesting import nested

    sys.setrecursionlimit(200)
    calls = []
    original = sys.setrecursionlimit
    sys.setrecursionlimit = lambda n: (calls.append(n), original(n))
    errors = []

    def work():
        try:
            for depth in (jackson.MAX_NESTING, 500, 64, 65, 3):
                value = nested(depth)
                text = jackson.dumps(value)
                # compared as text: == on the values would itself recurse once per level
                assert jackson.dumps(jackson.loads(text.encode())) == text, depth
                assert jackson.jackson_sorted_json(value) == text, depth
        except BaseException as exc:
            errors.append(repr(exc)[:300])

    def far_down(frames, depth):
        # A document well within the limit read and written with most of the thread's stack already used:
        # the C parser runs out of room and the explicit-stack parser takes over.
        if frames:
            return far_down(frames - 1, depth)
        text = jackson.dumps(nested(depth))
        return jackson.dumps(jackson.loads(text)) == text

    def deep_caller():
        try:
            assert far_down(120, 90)
        except BaseException as exc:
            errors.append(repr(exc)[:300])

    threads = [threading.Thread(target=work) for _ in range(4)] + [threading.Thread(target=deep_caller)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(errors, calls, sys.getrecursionlimit())
    """
)


def test_deep_documents_work_under_a_low_recursion_limit_and_leave_it_untouched() -> None:
    """SER-9: depth MAX_NESTING is written and read in threads under sys.setrecursionlimit(200); the
    serde never calls sys.setrecursionlimit and the process limit is unchanged afterwards."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[] [] 200", done.stdout[-2000:]


def test_nesting_beyond_the_limit_is_a_typed_error_both_ways() -> None:
    """SER-9, LIM-3: one level past MAX_NESTING is refused by the reader (WireFormatError with the offset)
    and by the writer (ValueError), and a self-referencing value is refused instead of looping."""
    too_deep = nested(jackson.MAX_NESTING + 1)
    with pytest.raises(ValueError, match="nests deeper than 1000 levels"):
        jackson.dumps(too_deep)
    with pytest.raises(ValueError, match="event attribute JSON nests deeper than 1000"):
        jackson.jackson_sorted_json(too_deep)
    text = "[" * (jackson.MAX_NESTING + 1) + "]" * (jackson.MAX_NESTING + 1)
    with pytest.raises(WireFormatError, match="nests deeper than 1000") as info:
        jackson.loads(text)
    assert info.value.offset == jackson.MAX_NESTING
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="refers to itself"):
        jackson.dumps(loop)


def _recursive_reference(v: Any, sort_keys: bool) -> str:
    """The writer as it was before the explicit stack (recursive), to compare byte for byte."""
    if v is None or isinstance(v, bool):
        return {None: "null", True: "true", False: "false"}[v]
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, str):
        return jackson.jackson_string(v)
    if isinstance(v, list | tuple):
        return "[" + ",".join(_recursive_reference(x, sort_keys) for x in v) + "]"
    pairs = [(str(k), x) for k, x in v.items()]
    if sort_keys:
        pairs.sort(key=lambda kv: utf16_order(kv[0]))
    return "{" + ",".join(f"{jackson.jackson_string(k)}:{_recursive_reference(x, sort_keys)}" for k, x in pairs) + "}"


_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_values, st.booleans())
def test_the_stack_writer_writes_the_bytes_of_the_recursive_one(value: Any, sort_keys: bool) -> None:
    """SER-2, SER-9: same text as the recursive writer for any plain value, map keys sorted or not."""
    assert jackson.jackson_json(value, sort_keys=sort_keys) == _recursive_reference(value, sort_keys)


_json_texts = st.recursive(
    _scalars.map(lambda v: json.dumps(v) if not (isinstance(v, float) and math.isinf(v)) else "1e999"),
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda xs: "[" + " , ".join(xs) + "]")
        | st.lists(st.tuples(st.text(max_size=3), inner), max_size=3).map(
            lambda kv: "{" + ",".join(f"{json.dumps(k)} :{v}" for k, v in kv) + "}"
        )
    ),
    max_leaves=20,
)
_noise = st.sampled_from(["", " ", "]", "}", ",", ":", '"', "[", "{", "\\", "-", "1", "NaN", "\n", "e", "\x01"])


def _outcome(parse: Any, text: str) -> tuple[Any, ...]:
    start = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        value = parse(text, start)
    except json.JSONDecodeError as exc:
        return ("error", exc.msg, exc.pos)
    except ValueError as exc:
        return ("error", str(exc))
    return ("value", repr(value), json.dumps(value))


@settings(max_examples=500, deadline=None)
@given(_json_texts, st.lists(st.tuples(st.integers(0, 200), _noise), max_size=3))
def test_the_stack_reader_reads_as_the_stdlib_decoder(text: str, edits: list[tuple[int, str]]) -> None:
    """SER-8, SER-9: the explicit-stack parser used for deep documents returns the stdlib decoder's value,
    or its error message at the same offset, for valid and damaged documents alike."""
    for at, piece in edits:
        at %= len(text) + 1
        text = text[:at] + piece + text[at + 1 :]
    c_parser = jackson._DECODER.raw_decode
    assert _outcome(jackson._parse_stacked, text) == _outcome(lambda s, i: c_parser(s, i)[0], text)
