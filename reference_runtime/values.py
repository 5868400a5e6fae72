"""Checks on values that enter the runtime from user code (business keys, inputs, event attributes):
anything a store could not write back, or a decoder could not read back, is refused up front with one
:class:`~reference_runtime.errors.InvalidValueError` naming the path and the fix (spec PAY-7)."""

from __future__ import annotations

from typing import Any

from .errors import InvalidValueError
from .limits import decode_limits, safe_repr

# 4300 decimal digits, the longest integer the stores' JSON writer and reader accept by default.
_MAX_INT_BITS = 14_284
_SCALARS = (type(None), bool, int, float, str, bytes, bytearray)
_TYPES = "None, bool, int, float, str, bytes, list, tuple and dict with str keys"


def check_text(text: str, what: str) -> None:
    """Refuse a string that is not valid Unicode text (a lone surrogate cannot be written as UTF-8)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidValueError(
                f"{what} holds a lone surrogate {text[exc.start]!r} at position {exc.start}, which cannot be "
                "stored as UTF-8; pass valid Unicode text (decode bytes with errors='replace')"
            ) from None


def check_value(value: Any, what: str) -> None:
    """Walk ``value`` iteratively (a self-reference must not exhaust the stack) and refuse what cannot be
    stored: unsupported types, non-string dict keys, self-references, nesting deeper than the decode
    limit ``max_depth``, lone surrogates and integers beyond 4300 digits."""
    max_depth = decode_limits().max_depth
    stack: list[tuple[Any, str, int, tuple[int, ...]]] = [(value, "", 0, ())]
    while stack:
        node, path, depth, active = stack.pop()
        where = f"{what}{path[:200]}"
        if isinstance(node, str):
            check_text(node, where)
        elif isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > _MAX_INT_BITS:
            raise InvalidValueError(
                f"{where} is an integer of {node.bit_length()} bits, beyond the 4300 digits "
                "stores write; store it as a string"
            )
        elif isinstance(node, _SCALARS):
            continue
        elif isinstance(node, list | tuple | dict):
            if id(node) in active:
                raise InvalidValueError(
                    f"{where} refers to itself; stores hold trees of values, pass a copy without the cycle"
                )
            if depth >= max_depth:
                raise InvalidValueError(
                    f"{where} nests deeper than max_depth={max_depth}; flatten it or raise "
                    "the limit with set_decode_limits(max_depth=...)"
                )
            inner = (*active, id(node))
            if isinstance(node, dict):
                for k, v in node.items():
                    if not isinstance(k, str):
                        raise InvalidValueError(f"{where} has a non-string key {safe_repr(k)}; use str keys")
                    check_text(k, f"key {safe_repr(k)} of {where}")
                    stack.append((v, f"{path}[{safe_repr(k, 40)}]", depth + 1, inner))
            else:
                stack.extend((v, f"{path}[{i}]", depth + 1, inner) for i, v in enumerate(node))
        else:
            raise InvalidValueError(
                f"{where} is a {type(node).__name__}; stores hold {_TYPES} (convert it, e.g. a set to a sorted list)"
            )
