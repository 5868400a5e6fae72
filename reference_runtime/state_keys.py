"""State keys exactly as Flink Agents' Java ``ActionStateUtil.generateKey`` builds them (facts §6; KEY-*).

``{key}_{seq}_{event_uuid}_{action_uuid}``: the event uuid is a name-based (MD5, version 3, no namespace)
UUID of the event *attributes* written as compact Jackson JSON with map keys sorted; the action uuid is
the same over the decimal string of Java's ``Action.hashCode()``.

Known flaws, kept for compatibility and documented in docs/wire-format.md: two executions of an action
on events with identical attributes in one run collide (Flink Agents #1084), and a business key that
contains ``_`` makes the key ambiguous to parse. :func:`collision_free_state_key` avoids both.
"""

from __future__ import annotations

import functools
import hashlib
import math
import uuid
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any
from urllib.parse import quote

from .events import Event
from .records import ActionRef


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def _utf16_units(s: str) -> list[int]:
    data = s.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def _utf16_order(s: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly as the code-unit sequences do (Java's String order).
    return s.encode("utf-16-be")


def java_string_hash(s: str) -> int:
    """``String.hashCode``: over UTF-16 code units, 32-bit signed."""
    h = 0
    for unit in _utf16_units(s):
        h = (31 * h + unit) & 0xFFFFFFFF
    return _int32(h)


def java_objects_hash(*hashes: int) -> int:
    """``Objects.hash`` (= ``Arrays.hashCode``) of already-hashed elements."""
    h = 1
    for x in hashes:
        h = (31 * h + x) & 0xFFFFFFFF
    return _int32(h)


def java_list_hash(items: list[str]) -> int:
    return java_objects_hash(*(java_string_hash(s) for s in items))


def action_hash(action: ActionRef) -> int:
    """``Action.hashCode() = Objects.hash(name, Objects.hash(module, qualname), triggers.hashCode())``."""
    function_hash = java_objects_hash(java_string_hash(action.module), java_string_hash(action.qualname))
    return java_objects_hash(java_string_hash(action.name), function_hash, java_list_hash(list(action.triggers)))


def name_uuid(data: bytes) -> uuid.UUID:
    """``UUID.nameUUIDFromBytes``: MD5 with version-3 and IETF variant bits, no namespace."""
    digest = bytearray(hashlib.md5(data).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(digest))


def java_double(x: float) -> str:
    """Java's ``Double.toString`` (JDK 19+ shortest-digit form; JDK 17 differs for a few values)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp += len("".join(map(str, digits))) - len(ds)
    if len(ds) == 1:
        # JDK 19+ never prints one significant digit: among two-digit decimals that still read back as x
        # it takes the one closest to x (Double.MIN_VALUE is 4.9E-324, not 5.0E-324).
        exact = Decimal(x)
        two = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 1), rounding=ROUND_HALF_EVEN)
        if float(two) == x:
            _s, tdigits, texp = two.as_tuple()
            assert isinstance(texp, int)
            ds = "".join(map(str, tdigits)).rstrip("0") or "0"
            exp = texp + len(tdigits) - len(ds)
    sci = len(ds) + exp - 1  # exponent of the leading digit
    prefix = "-" if sign else ""
    if 1e-3 <= abs(x) < 1e7:
        if exp >= 0:
            return f"{prefix}{ds}{'0' * exp}.0"
        point = len(ds) + exp
        if point > 0:
            return f"{prefix}{ds[:point]}.{ds[point:]}"
        return f"{prefix}0.{'0' * -point}{ds}"
    return f"{prefix}{ds[0]}.{ds[1:] or '0'}E{sci}"


def jackson_string(s: str) -> str:
    """A JSON string literal escaped as Jackson writes it."""
    out = []
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20:
            short = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}.get(ch)
            out.append(short or f"\\u{code:04X}")
        elif code > 0xFFFF:
            # Characters outside the BMP appear as escaped surrogate pairs in the vectors.
            hi, lo = _utf16_units(ch)
            out.append(f"\\u{hi:04X}\\u{lo:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def jackson_json(value: Any, *, sort_keys: bool = False, finite_only: bool = False, what: str = "JSON") -> str:
    """Compact JSON of plain data as Jackson writes it: map entries in insertion order, or with
    ``sort_keys`` in UTF-16 order (``ORDER_MAP_ENTRIES_BY_KEYS``); ``finite_only`` refuses NaN and the
    infinities instead of writing Java's spelling of them."""

    def write(v: Any) -> str:
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            text = java_double(v)
            if finite_only and text in ("NaN", "Infinity", "-Infinity"):
                # Jackson writes non-finite doubles as quoted strings only with a feature we do not use.
                raise ValueError(f"{text} cannot be written as a JSON number")
            return text
        if isinstance(v, str):
            return jackson_string(v)
        if isinstance(v, list | tuple):
            return "[" + ",".join(write(x) for x in v) + "]"
        if isinstance(v, dict):
            pairs = [(str(k), x) for k, x in v.items()]
            if sort_keys:
                pairs.sort(key=lambda kv: _utf16_order(kv[0]))
            return "{" + ",".join(f"{jackson_string(k)}:{write(x)}" for k, x in pairs) + "}"
        raise TypeError(f"cannot write a {type(v).__name__} as {what}")

    return write(value)


def jackson_sorted_json(value: Any) -> str:
    """Compact JSON as Jackson writes a map with ``ORDER_MAP_ENTRIES_BY_KEYS`` (keys in UTF-16 order)."""
    return jackson_json(value, sort_keys=True, what="event attribute JSON")


def event_uuid(event: Event) -> uuid.UUID:
    return name_uuid(jackson_sorted_json(event.attributes).encode("utf-8"))


@functools.lru_cache(maxsize=1024)
def action_uuid(action: ActionRef) -> uuid.UUID:
    # Cached: a pure function of an immutable ref, computed for every action execution otherwise.
    return name_uuid(str(action_hash(action)).encode("utf-8"))


def java_state_key(key: Any, seq: int, action: ActionRef, event: Event) -> str:
    """The Java state key; ``key`` is written with ``toString`` semantics (str, or int as Long)."""
    return f"{key}_{seq}_{event_uuid(event)}_{action_uuid(action)}"


def collision_free_state_key(key: Any, seq: int, action: ActionRef, event: Event, occurrence: int) -> str:
    """An unambiguous key: the business key is percent-encoded (so ``_`` cannot appear in it) and the
    occurrence of the action on identical attributes within the run is part of the key."""
    safe_key = quote(str(key), safe="").replace("_", "%5F")
    return f"{safe_key}_{seq}_{event_uuid(event)}_{action_uuid(action)}_{occurrence}"
