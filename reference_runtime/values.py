"""Checks on values that enter the runtime from user code (business keys, inputs, event attributes, memory
values): anything a store could not write back, or a decoder could not read back, is refused up front with
one :class:`~reference_runtime.errors.InvalidValueError` naming the path and the fix (spec PAY-7).

One walk serves every entry point; memory differs only in the types it holds (spec MEM-2) and in getting a
copy of what it stores (MEM-3). Nesting is bounded by the decode limit ``max_depth`` (LIM-1), so what is
accepted here is what a decoder reads back.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidValueError
from .limits import decode_limits, safe_repr

#: The longest integer accepted, in bits. Stores write integers as decimal text, and Python converts at most
#: 4300 digits by default (``sys.get_int_max_str_digits()``, also the default ``DecodeLimits.max_int_digits``
#: of every reader). Every integer of at most 14 284 bits has at most 4300 digits (2**14284 < 10**4300:
#: 14 284 = floor(4300 * log2(10))), and a bit length costs nothing to read, unlike a digit count; the few
#: 4300-digit integers of 14 285 bits are refused with the longer ones.
MAX_INT_BITS = 14_284

_SCALARS = (type(None), bool, int, float, str, bytes, bytearray)
_CONTAINERS = (list, tuple, dict)
_TYPES = "None, bool, int, float, str, bytes, list, tuple and dict with str keys"
# Memory holds exactly the values Flink Agents' memory holds (spec MEM-2).
_MEMORY_SCALARS = (type(None), bool, int, float, str, bytes)
_MEMORY_CONTAINERS = (list, dict)
_MEMORY_TYPES = "None, bool, int, float, str, bytes, list and dict with str keys"
#: Values that need no walk and no copy: the common memory write costs two type checks.
_PLAIN = frozenset({type(None), bool, float})

# A path is built only for an error: a node carries its parent's trail and its own index or key.
_Trail = tuple[Any, ...] | None


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
    """Refuse a key's input or an event's attributes that a store cannot hold: unsupported types, non-string
    dict keys, self-references, nesting deeper than ``max_depth``, lone surrogates and integers beyond
    :data:`MAX_INT_BITS`. ``what`` names the value in the error; the path inside it is appended."""
    _walk(value, what, memory=False)


def memory_value(value: Any, what: str) -> Any:
    """A copy of ``value`` for memory to hold (MEM-3), after the checks of :func:`check_value` with memory's
    types (MEM-2: no tuple, no bytearray). Raises :class:`InvalidValueError` (a ``TypeError``)."""
    kind = type(value)
    if kind in _PLAIN or (kind is int and value.bit_length() <= MAX_INT_BITS) or (kind is str and value.isascii()):
        return value
    return _walk(value, what, memory=True)


def _where(what: str, trail: _Trail) -> str:
    steps: list[str] = []
    while trail is not None:
        trail, step = trail
        steps.append(f"[{step}]" if isinstance(step, int) else f"[{safe_repr(step, 40)}]")
    return what + "".join(reversed(steps))[:200]


def _walk(value: Any, what: str, *, memory: bool) -> Any:
    """Walk ``value`` iteratively (a self-reference must not exhaust the stack), children in order, so the
    first offending item is the one named. With ``memory``, check memory's types and return a copy."""
    scalars, containers = (_MEMORY_SCALARS, _MEMORY_CONTAINERS) if memory else (_SCALARS, _CONTAINERS)
    max_depth = decode_limits().max_depth
    root: list[Any] = [None]
    # node, trail, depth, ids of the containers it is inside, where its copy goes (container, slot)
    stack: list[tuple[Any, _Trail, int, tuple[int, ...], Any, Any]] = [(value, None, 0, (), root, 0)]
    while stack:
        node, trail, depth, active, into, slot = stack.pop()
        if isinstance(node, str):
            if not node.isascii():
                check_text(node, _where(what, trail))
        elif isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > MAX_INT_BITS:
            raise InvalidValueError(
                f"{_where(what, trail)} is an integer of {node.bit_length()} bits, beyond the 4300 digits "
                "stores write; store it as a string"
            )
        elif isinstance(node, scalars):
            if memory and isinstance(node, bytes):
                node = bytes(node)  # a bytes subclass is stored as plain bytes
        elif isinstance(node, containers):
            if id(node) in active:
                raise InvalidValueError(
                    f"{_where(what, trail)} refers to itself; stores hold trees of values, pass a copy without "
                    "the cycle"
                )
            if depth >= max_depth:
                raise InvalidValueError(
                    f"{_where(what, trail)} nests deeper than max_depth={max_depth}; flatten it or raise "
                    "the limit with set_decode_limits(max_depth=...)"
                )
            inner = (*active, id(node))
            children: list[tuple[Any, _Trail, int, tuple[int, ...], Any, Any]] = []
            if isinstance(node, dict):
                copy: Any = {} if memory else None
                for k, v in node.items():
                    if not isinstance(k, str):
                        raise InvalidValueError(
                            f"{_where(what, trail)} has a non-string key {safe_repr(k)}; use str keys"
                        )
                    if not k.isascii():
                        check_text(k, f"key {safe_repr(k)} of {_where(what, trail)}")
                    if memory:
                        copy[k] = None  # keeps the key order; the value is filled in when its node is walked
                    children.append((v, (trail, k), depth + 1, inner, copy, k))
            else:
                copy = [None] * len(node) if memory else None
                children.extend((v, (trail, i), depth + 1, inner, copy, i) for i, v in enumerate(node))
            stack.extend(reversed(children))
            node = copy
        else:
            kinds = _MEMORY_TYPES if memory else _TYPES
            raise InvalidValueError(
                f"{_where(what, trail)} is a {type(node).__name__}; {'memory holds' if memory else 'stores hold'} "
                f"{kinds} (convert it, e.g. a set to a sorted list)"
            )
        if memory:
            into[slot] = node
    return root[0] if memory else value
