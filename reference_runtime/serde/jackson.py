"""JSON as Jackson 2.18 writes and reads it for ``ActionStateSerde`` (spec SER-1, SER-2, SER-6, SER-9).

Writing: compact, fields in the caller's order, Jackson's escaping (uppercase ``\\u00XX`` for control
characters, non-BMP characters as escaped surrogate pairs, everything else raw UTF-8) and Java's
``Double.toString`` (JDK 19+ digits). Reading: Jackson's encoding detection (UTF-8 with or without BOM,
UTF-16/32), one JSON value with trailing content ignored, NaN tokens and nesting deeper than 1000 refused.

Neither direction needs more recursion than the caller's thread has, and neither touches the interpreter's
recursion limit (a process-wide setting other threads depend on): the writer walks an explicit stack; the
reader uses the stdlib's C parser, which recurses once per level, while the document fits well within the
recursion limit, and an explicit-stack parser with the same results otherwise (SER-9).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import WireFormatError
from ..limits import decode_limits, json_over_budget
from .java import java_double, utf16_order, utf16_units

MAX_NESTING = 1000

__all__ = ["MAX_NESTING", "dumps", "jackson_json", "jackson_sorted_json", "jackson_string", "loads"]

_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
_END = object()
_STACKED = object()


# -- writing ----------------------------------------------------------------------------------------------


#: A character Jackson writes escaped: a quote, a backslash, a control character, or one outside the BMP.
_ESCAPED = re.compile(r'["\\\x00-\x1f\U00010000-\U0010ffff]')


def jackson_string(s: str) -> str:
    """A JSON string literal escaped as Jackson writes it."""
    if _ESCAPED.search(s) is None:
        # Nothing to escape (function ids, digests, event ids): the text as it is, without the loop below that
        # visits every character (the flink-agents format writes such strings on every durable call, P10).
        return '"' + s + '"'
    return _escape(s)


def _escape(s: str) -> str:
    """:func:`jackson_string` character by character."""
    out = []
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20:
            out.append(_SHORT_ESCAPES.get(ch) or f"\\u{code:04X}")
        elif code > 0xFFFF:
            # Characters outside the BMP appear as escaped surrogate pairs in the vectors.
            hi, lo = utf16_units(ch)
            out.append(f"\\u{hi:04X}\\u{lo:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


#: How deep a value may nest for :func:`_stdlib_json` to write it: the stdlib's C encoder recurses once per
#: level, so only values far from any thread's stack limit go that way (SER-9); deeper ones take the loop.
_FAST_DEPTH = 64
_STR, _INT, _BOOL, _DICT, _LIST, _TUPLE = str, int, bool, dict, list, tuple
#: In the stdlib's output, what Jackson writes otherwise: a ``\u`` escape (the stdlib's hex digits are lower
#: case, Jackson's upper case; a literal backslash before a ``u`` matches too, and merely takes the loop) or a
#: character outside the BMP (Jackson escapes it as a surrogate pair; it also sorts keys by UTF-16 units,
#: which differs from code point order only where such a character is in a key).
_NOT_AS_JACKSON = re.compile(r"[\U00010000-\U0010ffff]|\\u")
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_COMPACT_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, check_circular=False)


def _plain(value: Any) -> bool:
    """Whether ``value`` is made only of ``dict`` (with ``str`` keys), ``list``, ``tuple``, ``str``, ``int``,
    ``bool`` and ``None``, exactly those types, nested less than :data:`_FAST_DEPTH` deep: the values the
    stdlib's encoder writes as Jackson does, save the characters :data:`_NOT_AS_JACKSON` finds. No float
    (Java spells many doubles differently), no subclass (its ``__str__`` or ``items`` may differ), no other
    key type (the stdlib writes ``True`` as ``true``, Jackson's map key is ``"True"``). A self-reference
    reaches the depth limit."""
    stack = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        kind = type(node)
        if kind is _STR or kind is _INT or node is None or kind is _BOOL:
            continue
        if depth >= _FAST_DEPTH:
            return False
        if kind is _DICT:
            for k, v in node.items():
                if type(k) is not _STR:
                    return False
                t = type(v)
                if not (t is _STR or t is _INT or v is None or t is _BOOL):
                    push((v, depth + 1))
        elif kind is _LIST or kind is _TUPLE:
            for v in node:
                t = type(v)
                if not (t is _STR or t is _INT or v is None or t is _BOOL):
                    push((v, depth + 1))
        else:
            return False
    return True


def _stdlib_json(value: Any, sort_keys: bool) -> str | None:
    """:func:`jackson_json`'s text written by the stdlib's C encoder, 3-5x faster on an event's attributes
    (a state key hashes them, benchmark P5), or None where it would not be Jackson's text byte for byte;
    ``tests/serde/test_jackson_fast_path.py`` holds the two writers to the same text."""
    if not _plain(value):
        return None
    try:
        text = (_COMPACT_SORTED if sort_keys else _COMPACT).encode(value)
    except ValueError:
        return None  # an integer past the digit limit: the loop raises it with its own message
    return text if _NOT_AS_JACKSON.search(text) is None else None


def jackson_json(value: Any, *, sort_keys: bool = False, finite_only: bool = False, what: str = "JSON") -> str:
    """Compact JSON of plain data as Jackson writes it: map entries in insertion order, or with
    ``sort_keys`` in UTF-16 order (``ORDER_MAP_ENTRIES_BY_KEYS``); ``finite_only`` refuses NaN and the
    infinities instead of writing Java's spelling of them. Nesting deeper than :data:`MAX_NESTING` (which
    no reader accepts back, and which a self-referencing value reaches) raises ValueError."""
    fast = _stdlib_json(value, sort_keys)
    if fast is not None:
        return fast
    return _jackson_loop(value, sort_keys, finite_only, what)


def _jackson_loop(value: Any, sort_keys: bool, finite_only: bool, what: str) -> str:
    """:func:`jackson_json` item by item, for every value."""
    parts: list[str] = []
    out = parts.append
    # Open containers, innermost last: each is the iterator over its remaining items and whether it is a
    # map (its items are (key, value) pairs). An explicit stack, not recursion (SER-9).
    stack: list[tuple[Iterator[Any], bool]] = []
    item = value
    while True:
        if item is None:
            out("null")
        elif item is True:
            out("true")
        elif item is False:
            out("false")
        elif isinstance(item, int):
            out(str(item))
        elif isinstance(item, float):
            text = java_double(item)
            if finite_only and text in ("NaN", "Infinity", "-Infinity"):
                # Jackson writes non-finite doubles as quoted strings only with a feature we do not use.
                raise ValueError(f"{text} cannot be written as a JSON number")
            out(text)
        elif isinstance(item, str):
            out(jackson_string(item))
        elif isinstance(item, list | tuple | dict):
            if len(stack) >= MAX_NESTING:
                raise ValueError(f"{what} nests deeper than {MAX_NESTING} levels (or refers to itself)")
            items: Iterator[Any]
            if isinstance(item, dict):
                is_map = True
                pairs = [(str(k), x) for k, x in item.items()]
                if sort_keys:
                    pairs.sort(key=lambda kv: utf16_order(kv[0]))
                items = iter(pairs)
            else:
                is_map = False
                items = iter(item)
            first: Any = next(items, _END)
            if first is _END:
                out("{}" if is_map else "[]")
            else:
                stack.append((items, is_map))
                if is_map:
                    out("{" + jackson_string(first[0]) + ":")
                    item = first[1]
                else:
                    out("[")
                    item = first
                continue
        else:
            raise TypeError(f"cannot write a {type(item).__name__} as {what}")
        # The item is written: move on to the next item of the innermost open container, closing those done.
        while stack:
            items, is_map = stack[-1]
            following: Any = next(items, _END)
            if following is not _END:
                if is_map:
                    out("," + jackson_string(following[0]) + ":")
                    item = following[1]
                else:
                    out(",")
                    item = following
                break
            stack.pop()
            out("}" if is_map else "]")
        else:
            return "".join(parts)


def jackson_sorted_json(value: Any) -> str:
    """Compact JSON as Jackson writes a map with ``ORDER_MAP_ENTRIES_BY_KEYS`` (keys in UTF-16 order)."""
    return jackson_json(value, sort_keys=True, what="event attribute JSON")


def dumps(value: Any) -> str:
    """Compact Jackson JSON of plain data; dict entries in insertion order."""
    return jackson_json(value, finite_only=True)


# -- reading ----------------------------------------------------------------------------------------------


def _decode_text(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    encoding = "utf-8"
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        encoding = "utf-32"
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    elif len(data) >= 4 and data[1:4] == b"\x00\x00\x00":
        encoding = "utf-32-le"
    elif len(data) >= 4 and data[0:3] == b"\x00\x00\x00":
        encoding = "utf-32-be"
    elif len(data) >= 2 and data[0] and not data[1]:
        encoding = "utf-16-le"
    elif len(data) >= 2 and not data[0] and data[1]:
        encoding = "utf-16-be"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise WireFormatError(f"invalid {encoding} input: {exc.reason}", offset=exc.start) from None


def _check_depth(text: str) -> int:
    """How deeply the first value of ``text`` nests; deeper than :data:`MAX_NESTING` is refused."""
    depth = deepest = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > MAX_NESTING:
                    raise WireFormatError(f"document nests deeper than {MAX_NESTING} levels", offset=i)
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return deepest  # trailing content after the first value is ignored, as Jackson does
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard token {name!r} is not allowed")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
# The stdlib's number grammar with ASCII digits only, as its C scanner reads it.
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009 - the C string scanner; typeshed does not declare it


def _parse_stacked(s: str, idx: int) -> Any:
    """The first JSON value of ``s`` from ``idx``, exactly as the stdlib decoder reads it (same values,
    same errors at the same offsets), with an explicit stack instead of one recursion per level."""

    def skip(at: int) -> int:
        """The offset of the first character at or after ``at`` that is not JSON whitespace."""
        spaces = _WHITESPACE.match(s, at)
        return at if spaces is None else spaces.end()

    # Open containers, innermost last, each with the key its next value goes under (None in a list).
    stack: list[tuple[list[Any] | dict[str, Any], list[str | None]]] = []

    def key_at(at: int) -> tuple[str, int]:
        if s[at : at + 1] != '"':
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", s, at)
        key, at = _scanstring(s, at + 1, True)
        at = skip(at)
        if s[at : at + 1] != ":":
            raise json.JSONDecodeError("Expecting ':' delimiter", s, at)
        return key, skip(at + 1)

    while True:
        idx = skip(idx)
        ch = s[idx : idx + 1]
        value: Any
        if ch == '"':
            value, idx = _scanstring(s, idx + 1, True)
        elif ch == "{" or ch == "[":
            idx = skip(idx + 1)
            if s[idx : idx + 1] == ("}" if ch == "{" else "]"):
                value, idx = ({} if ch == "{" else []), idx + 1
            elif ch == "{":
                key, idx = key_at(idx)
                stack.append(({}, [key]))
                continue
            else:
                stack.append(([], [None]))
                continue
        elif ch == "n" and s[idx : idx + 4] == "null":
            value, idx = None, idx + 4
        elif ch == "t" and s[idx : idx + 4] == "true":
            value, idx = True, idx + 4
        elif ch == "f" and s[idx : idx + 5] == "false":
            value, idx = False, idx + 5
        elif (number := _NUMBER.match(s, idx)) is not None:
            integer, frac, exp = number.groups()
            value = float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)
            idx = number.end()
        elif ch == "N" and s[idx : idx + 3] == "NaN":
            value = _no_constant("NaN")
        elif ch == "I" and s[idx : idx + 8] == "Infinity":
            value = _no_constant("Infinity")
        elif ch == "-" and s[idx : idx + 9] == "-Infinity":
            value = _no_constant("-Infinity")
        else:
            raise json.JSONDecodeError("Expecting value", s, idx)
        # Store the value in its container; close every container that ends here.
        while stack:
            container, slot = stack[-1]
            if isinstance(container, list):
                container.append(value)
            else:
                container[slot[0] or ""] = value
            idx = skip(idx)
            ch = s[idx : idx + 1]
            if ch == ",":
                idx = skip(idx + 1)
                if isinstance(container, dict):
                    slot[0], idx = key_at(idx)
                break
            if ch != ("]" if isinstance(container, list) else "}"):
                raise json.JSONDecodeError("Expecting ',' delimiter", s, idx)
            value, idx = stack.pop()[0], idx + 1
        else:
            return value


def _parse_c(text: str, start: int) -> Any:
    """The stdlib's C parser (fast); :data:`_STACKED` when it runs out of recursion room in this thread."""
    try:
        return _DECODER.raw_decode(text, start)[0]
    except RecursionError:
        return _STACKED


def loads(data: bytes | str) -> Any:
    """Parse one JSON value as Jackson's ``ObjectMapper.readValue`` would; trailing content is ignored."""
    text = data if isinstance(data, str) else _decode_text(bytes(data))
    limits = decode_limits()
    cost = json_over_budget(text, limits)
    if cost is not None:  # the memory budget of every JSON decoder (LIM-10)
        raise WireFormatError(
            f"document of {len(text)} characters may use {cost} bytes once parsed, more than "
            f"max_memory_bytes={limits.max_memory_bytes}",
            offset=0,
        )
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise WireFormatError("no content to map due to end-of-input", offset=start)
    deepest = _check_depth(text)
    try:
        value = _parse_c(text, start) if deepest < sys.getrecursionlimit() // 2 else _STACKED
        if value is _STACKED:
            value = _parse_stacked(text, start)
    except json.JSONDecodeError as exc:
        raise WireFormatError(f"malformed JSON: {exc.msg}", offset=exc.pos) from None
    except ValueError as exc:
        raise WireFormatError(f"malformed JSON: {exc}") from None
    return value
