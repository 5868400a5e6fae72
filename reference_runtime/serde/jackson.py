"""JSON as Jackson 2.18 writes and reads it for ``ActionStateSerde`` (spec SER-1, SER-2, SER-6).

Writing: compact, fields in the caller's order, Jackson's escaping (uppercase ``\\u00XX`` for control
characters, non-BMP characters as escaped surrogate pairs, everything else raw UTF-8) and Java's
``Double.toString`` (JDK 19+ digits). Reading: Jackson's encoding detection (UTF-8 with or without BOM,
UTF-16/32), one JSON value with trailing content ignored, NaN tokens and nesting deeper than 1000 refused.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import WireFormatError
from ..state_keys import jackson_json, jackson_string, java_double

MAX_NESTING = 1000

__all__ = ["MAX_NESTING", "dumps", "jackson_string", "java_double", "loads"]


def dumps(value: Any) -> str:
    """Compact Jackson JSON of plain data; dict entries in insertion order."""
    with deep_recursion():
        return jackson_json(value, finite_only=True)


@contextlib.contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for documents nested up to :data:`MAX_NESTING` levels (Python's default stops near 1000)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, MAX_NESTING * 4 + 500))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


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


def _check_depth(text: str) -> None:
    depth = 0
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
            if depth > MAX_NESTING:
                raise WireFormatError(f"document nests deeper than {MAX_NESTING} levels", offset=i)
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return  # trailing content after the first value is ignored, as Jackson does


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard token {name!r} is not allowed")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def loads(data: bytes | str) -> Any:
    """Parse one JSON value as Jackson's ``ObjectMapper.readValue`` would; trailing content is ignored."""
    text = data if isinstance(data, str) else _decode_text(bytes(data))
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise WireFormatError("no content to map due to end-of-input", offset=start)
    _check_depth(text)
    try:
        with deep_recursion():
            value, _end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise WireFormatError(f"malformed JSON: {exc.msg}", offset=exc.pos) from None
    except ValueError as exc:
        raise WireFormatError(f"malformed JSON: {exc}") from None
    return value
