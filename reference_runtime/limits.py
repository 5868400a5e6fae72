"""Resource limits for decoding untrusted store contents (spec LIM-*).

Every decoder that reads bytes from a store (payload codecs, native records) checks these before it
builds anything big, so a hostile or corrupt record costs bounded time and memory and fails as a typed,
located error. The defaults fit any record this runtime writes for ordinary results; raise them with
:func:`set_decode_limits` (process-wide) or per codec (``CloudpickleCodec(limits=...)``).
"""

from __future__ import annotations

import functools
import json
import re
import reprlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "DecodeLimits",
    "decode_limits",
    "json_cost",
    "json_over_budget",
    "parse_json",
    "parses_within",
    "safe_repr",
    "set_decode_limits",
]


@dataclass(frozen=True)
class DecodeLimits:
    """Bounds applied while decoding one record or payload.

    ``max_payload_bytes``: the largest payload or record accepted at all.
    ``max_depth``: how deeply lists, dicts, tuples and sets may nest.
    ``max_int_digits``: the most decimal digits of an integer (JSON) or its binary size equivalent (pickle).
    ``max_container_len``: the most items one container may hold, including what an allow-listed
    callable such as ``list(range(n))`` would build.
    ``max_memory_bytes``: the memory budget of one decode: what a pickle's opcodes may build (memo indexes,
    objects built by allow-listed callables such as ``bytearray(n)``) and what a JSON document's values may
    cost, counted before they are built.
    """

    max_payload_bytes: int = 16 * 1024 * 1024
    max_depth: int = 200
    max_int_digits: int = 4300
    max_container_len: int = 1_000_000
    max_memory_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("max_payload_bytes", "max_depth", "max_int_digits", "max_container_len", "max_memory_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"DecodeLimits.{name} must be a positive int, got {value!r}")


_current = DecodeLimits()
_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = _REPR.maxother = 60


def decode_limits() -> DecodeLimits:
    """The process-wide limits used by decoders that were not given their own."""
    return _current


def set_decode_limits(limits: DecodeLimits | None = None, **changes: Any) -> DecodeLimits:
    """Replace the process-wide limits (``None``: the defaults), or change some fields:
    ``set_decode_limits(max_payload_bytes=64 << 20)``. Returns the previous limits."""
    global _current
    previous = _current
    base = limits if limits is not None else (DecodeLimits() if not changes else _current)
    _current = replace(base, **changes) if changes else base
    return previous


def safe_repr(value: Any, limit: int = 80) -> str:
    """``repr`` for error messages that never raises (huge ints, self-referencing or deep values, broken
    ``__repr__``) and never grows past ``limit`` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"<int of {value.bit_length()} bits>"
    if isinstance(value, str | bytes | bytearray) and len(value) > limit:
        value = value[:limit]
    try:
        text = _REPR.repr(value)
    except Exception:  # the value is untrusted: a repr that fails must not hide the real error
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_depth(value: Any, limit: int) -> int | None:
    """The depth of a parsed JSON value if it exceeds ``limit`` (iteratively), else None."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return depth
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return None


#: What one JSON container or item (each ``[``, ``{``, ``,`` and ``:`` outside strings) may cost once parsed
#: and decoded into values, and what one character may cost (the text, its parsed strings, base64 decoded):
#: measured at most 98 bytes per item (``[[],[],…]`` read as a native record) and 2.8 per ASCII character.
_JSON_ITEM_BYTES = 128
_JSON_ASCII_CHAR_BYTES = 3
_JSON_CHAR_BYTES = 8
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def json_cost(text: str) -> int:
    """An upper bound of the memory parsing ``text`` and decoding its values costs (spec LIM-10)."""
    per_char = _JSON_ASCII_CHAR_BYTES if text.isascii() else _JSON_CHAR_BYTES
    skeleton = _JSON_STRING.sub("", text) if '"' in text else text
    items = skeleton.count("[") + skeleton.count("{") + skeleton.count(",") + skeleton.count(":")
    return len(text) * per_char + (items + 1) * _JSON_ITEM_BYTES


def json_over_budget(text: str | bytes, limits: DecodeLimits) -> int | None:
    """``json_cost(text)`` if it exceeds ``max_memory_bytes``, else None; counts nothing for a text too
    short to exceed it (bytes are decoded as UTF-8 only then)."""
    if len(text) * (_JSON_CHAR_BYTES + _JSON_ITEM_BYTES) <= limits.max_memory_bytes:
        return None
    cost = json_cost(text if isinstance(text, str) else text.decode("utf-8", "replace"))
    return cost if cost > limits.max_memory_bytes else None


@functools.cache
def _digit_run(digits: int) -> re.Pattern[bytes]:
    return re.compile(rb"[0-9]{%d}" % (digits + 1))


def parses_within(data: bytes, limits: DecodeLimits, max_depth: int | None = None) -> bool:
    """True when :func:`parse_json` cannot refuse ``data`` on a limit, decided without parsing (a bracket per
    level, no run of digits longer than an integer may be): a writer runs the reader's own checks only on
    the documents this does not clear (spec LIM-9). ``max_depth`` is a decoder's tighter cap, if any."""
    if len(data) > limits.max_payload_bytes:
        return False
    digits = min(limits.max_int_digits, sys.get_int_max_str_digits() or limits.max_int_digits)
    if len(data) > digits and _digit_run(digits).search(data):
        return False
    depth = limits.max_depth if max_depth is None else min(limits.max_depth, max_depth)
    if data.count(b"[") + data.count(b"{") > depth:
        return False
    return json_over_budget(data, limits) is None


def parse_json(
    data: bytes, limits: DecodeLimits, fail: Callable[[str], Exception], what: str, max_depth: int | None = None
) -> Any:
    """``json.loads`` of untrusted UTF-8 bytes within ``limits``; every failure is ``fail(message)``.

    The bracket count is a cheap upper bound of the nesting depth: only documents with more brackets than
    ``max_depth`` (or the document nesting ``max_depth`` given, for a record whose values sit inside framing)
    are walked. Integers longer than ``max_int_digits`` are refused before they are built, and
    a document whose parsed values may cost more than ``max_memory_bytes`` (:func:`json_cost`) before
    anything is parsed (LIM-10).
    """
    if len(data) > limits.max_payload_bytes:
        raise fail(f"{what} of {len(data)} bytes exceeds max_payload_bytes={limits.max_payload_bytes}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"{what} is not UTF-8 (byte offset {exc.start})") from None
    cost = json_over_budget(text, limits)
    if cost is not None:
        raise fail(
            f"{what} of {len(data)} bytes may use {cost} bytes once parsed, more than "
            f"max_memory_bytes={limits.max_memory_bytes}"
        )
    depth = limits.max_depth if max_depth is None else max_depth
    interpreter_digits = sys.get_int_max_str_digits()
    digits = limits.max_int_digits
    parse_int = None
    if interpreter_digits == 0 or digits < interpreter_digits:

        def parse_int(token: str) -> int:
            if len(token.lstrip("-")) > digits:
                raise ValueError(f"an integer of {len(token)} digits exceeds max_int_digits={digits}")
            return int(token)

    try:
        value = json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise fail(f"{what} is not JSON (offset {exc.pos}: {exc.msg})") from None
    except RecursionError:
        raise fail(f"{what} nests deeper than max_depth={depth}") from None
    except ValueError as exc:  # an integer beyond the interpreter's or our digit limit
        raise fail(f"{what} holds an integer beyond max_int_digits={digits} ({safe_repr(str(exc), 120)})") from None
    if (
        isinstance(value, dict | list)
        and text.count("[") + text.count("{") > depth
        and _json_depth(value, depth) is not None
    ):
        raise fail(f"{what} nests deeper than max_depth={depth}")
    return value
