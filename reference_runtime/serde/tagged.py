"""Tagged JSON values: plain data as JSON that keeps bytes (``{"$bytes": base64}``), non-finite floats
(``{"$float": "nan"}``) and maps (``{"$map": {...}}``) exact. The native records store every value this way,
and a Java record keeps the event attributes JSON cannot carry in this form (WIRE-9), so it lives on the
serde side and the serde never imports a store (SER-10)."""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

from ..errors import CorruptRecordError, Location, RecordLimitError
from ..limits import decode_limits, safe_repr

# A hard cap below Python's recursion limit for the recursive value decoder, whatever limits are set.
MAX_VALUE_DEPTH = 400


def _check_depth(depth: int, path: str, loc: Location) -> None:
    # MAX_VALUE_DEPTH keeps the recursion of decode_value far from Python's limit whatever limits are set.
    limit = min(decode_limits().max_depth, MAX_VALUE_DEPTH)
    if depth >= limit:
        raise RecordLimitError(f"value at {path[:120]} nests deeper than max_depth={limit}", loc)


def encode_value(value: Any, path: str) -> Any:
    """``value`` as tagged JSON data; a type JSON cannot hold exactly, or a non-string dict key, raises
    TypeError naming ``path``."""
    try:
        return _encode(value)
    except _Unstorable:
        # Encoding has no side effects: walk again, naming each place, to say where the culprit is.
        return _encode_named(value, path)


class _Unstorable(Exception):
    pass


def _encode(value: Any) -> Any:
    # No paths: building one for every value was most of an event's encoding (benchmark P5), and a path is
    # needed only for the error, which _encode_named builds on a second walk.
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise _Unstorable
            out[k] = _encode(v)
        return {"$map": out}
    raise _Unstorable


def _encode_named(value: Any, path: str) -> Any:
    if isinstance(value, list | tuple):
        return [_encode_named(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"cannot store a non-string dict key {safe_repr(k)} at {path}")
            out[k] = _encode_named(v, f"{path}[{k!r}]")
        return {"$map": out}
    try:
        return _encode(value)  # not a container: nothing inside it to name
    except _Unstorable:
        raise TypeError(f"cannot store a {type(value).__name__} at {path}") from None


def decode_value(value: Any, path: str, loc: Location, depth: int = 0) -> Any:
    """The inverse of :func:`encode_value`; malformed data raises :class:`CorruptRecordError` at ``loc``.

    ``depth`` is the nesting of ``value`` as a value (a list or map at depth ``max_depth`` or more is refused,
    as the runtime refuses to store one, PAY-7); a map of values that is not a value itself (event
    attributes) starts at -1."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        _check_depth(depth, path, loc)
        return [decode_value(v, f"{path}[{i}]", loc, depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "$map" and isinstance(inner, dict):
            _check_depth(depth, path, loc)
            return {k: decode_value(v, f"{path}[{safe_repr(k)}]", loc, depth + 1) for k, v in inner.items()}
        if tag == "$bytes" and isinstance(inner, str):
            return decode_base64(inner, path, loc)
        if tag == "$float" and inner in ("nan", "inf", "-inf"):
            return float(inner)
    raise CorruptRecordError(f"unreadable value at {path[:200]}", loc)


def decode_base64(text: Any, path: str, loc: Location) -> bytes:
    """Strict base64 at ``path``; anything else raises :class:`CorruptRecordError` at ``loc``."""
    if not isinstance(text, str):
        raise CorruptRecordError(f"expected base64 text at {path}", loc)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CorruptRecordError(f"bad base64 at {path}: {exc}", loc) from exc
