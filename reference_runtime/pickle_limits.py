"""Bounded pickle loading (spec LIM-2..LIM-5): what a pickle may cost is decided from its opcodes before
anything is built, and a loaded value's shape is checked against :class:`~reference_runtime.limits.DecodeLimits`.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from .errors import PayloadDecodeError, PayloadLimitError
from .limits import DecodeLimits

# Argument layout of every pickle opcode: a fixed number of bytes, a little-endian length prefix of
# 1/4/8 bytes followed by that many bytes, or one/two newline-terminated lines.
_PREFIXED: dict[int, int] = {op: 1 for op in b"UC\x8c\x8a"}
_PREFIXED.update({op: 4 for op in b"TXB\x8b"})
_PREFIXED.update({op: 8 for op in b"\x8d\x8e\x96"})
_LINES: dict[int, int] = {op: 1 for op in b"ILFSVpgP"}
_LINES.update({op: 2 for op in b"ci"})
_LONG_BINARY = frozenset(b"\x8a\x8b")
_LONG_TEXT = frozenset(b"IL")
# Opcodes whose argument becomes a str (UTF-8, or a Python 2 string): up to 4 bytes per byte of argument
# when one character is outside Latin-1, one when it is all ASCII.
_TEXT_ARGS = frozenset(b"XTU\x8c\x8d")
_NON_ASCII = re.compile(b"[\x80-\xff]")
# What one byte of pickle may cost once loaded, at most: an empty container object (56 bytes) plus its
# stack or memo slot for a one-byte opcode.
_PER_BYTE = 96
# What building one object costs besides its data (object header, stack slot), and what a short text may
# cost besides it, characters beyond ASCII included.
_SHORT = 64
_PER_OBJECT = 128 + 3 * _SHORT
# Runs of opcodes that cannot allocate beyond their own bytes, consumed at C speed: no argument, or a
# fixed-size one. LONG_BINPUT (r), PUT (p), STOP (.), BUILD (b), FRAME (the pure-Python loader copies the
# frame) and the opcodes that name a global (GLOBAL c, INST i, STACK_GLOBAL, EXT1/2/4) are left to the
# Python loop below, which notes them.
_SIMPLE_RUN = re.compile(
    b"(?:[(012N}a\\]delR)stu\x81\x85\x86\x87\x88\x89\x8f\x90\x91\x92\x94\x97\x98oQ]|[Khq\x80].|M..|[Jj]....|G.{8})*",
    re.DOTALL,
)
_EXT = {0x82: 1, 0x83: 2, 0x84: 4}


class PickleShape(NamedTuple):
    """What the scan found: whether the pickle names a global, and whether it uses BUILD."""

    globals: bool
    build: bool


def scan(body: bytes, limits: DecodeLimits) -> PickleShape:
    """Walk the opcodes of a pickle without building anything and refuse what would allocate beyond
    ``limits``: memo indexes no pickler produces (``LONG_BINPUT 100000000`` makes the C loader allocate
    1.5 GB for its memo table), oversized integers, and payloads whose objects may exceed the memory budget.

    The budget is counted per opcode: 96 bytes per byte of argument-less or fixed-size opcodes (an empty
    list and its slot), and for an opcode carrying data its size twice (the loader's copy and the object;
    four times plus one for text with a character beyond ASCII), so a 10 MB string costs what it costs, and
    a pickle of 100 000 empty lists what that costs."""
    end = len(body)
    if end > limits.max_payload_bytes:
        raise PayloadLimitError(f"payload of {end} bytes exceeds max_payload_bytes={limits.max_payload_bytes}")
    budget = limits.max_memory_bytes
    max_long_bytes = limits.max_int_digits * 10 // 24 + 1  # 2.4 decimal digits per byte
    match = _SIMPLE_RUN.match
    non_ascii = _NON_ASCII.search
    cost = end  # the pure-Python loader reads from a copy
    i = 0
    names_global = build = False
    while True:
        start = i
        i = match(body, i).end()  # type: ignore[union-attr]  # the pattern matches the empty string
        cost += (i - start) * _PER_BYTE
        if cost > budget or i >= end:
            break
        op = body[i]
        i += 1
        cost += _PER_BYTE
        if op == 0x2E:  # STOP
            return PickleShape(names_global, build)
        if op == 0x62:  # BUILD
            build = True
        elif op == 0x93:  # STACK_GLOBAL
            names_global = True
        elif op in _EXT:
            names_global = True
            i += _EXT[op]
        elif op == 0x95:  # FRAME: the pure-Python loader reads the frame into a buffer of its own
            cost += int.from_bytes(body[i : i + 8], "little")
            i += 8
        elif op == 0x72:  # LONG_BINPUT: a memo index beyond the payload's length is no pickler's output
            if i + 4 > end or int.from_bytes(body[i : i + 4], "little") > end:
                raise PayloadLimitError(f"memo index at byte {i - 1} is out of range")
            i += 4
        elif (n := _PREFIXED.get(op)) is not None:
            size = int.from_bytes(body[i : i + n], "little", signed=op in b"T\x8b")
            if size < 0 or i + n + size > end:
                raise PayloadDecodeError(f"length {size} at byte {i - 1} runs past the payload")
            if op in _LONG_BINARY and size > max_long_bytes:
                raise PayloadLimitError(f"integer at byte {i - 1} exceeds max_int_digits={limits.max_int_digits}")
            i += n
            cost += size * 2 + _PER_OBJECT
            # Text beyond ASCII may take 4 bytes a character: counted for a long text only (a short one
            # costs little either way, and the search would cost every payload).
            if size > _SHORT and op in _TEXT_ARGS and non_ascii(body, i, i + size) is not None:
                cost += size * 3
            i += size
        elif (n := _LINES.get(op)) is not None:
            at = i
            for _ in range(n):
                nl = body.find(b"\n", i)
                if nl < 0:
                    raise PayloadDecodeError(f"unterminated argument at byte {at - 1}")
                i = nl + 1
            cost += (i - at) * 5 + _PER_OBJECT
            names_global = names_global or op in (0x63, 0x69)  # GLOBAL, INST
            if op in _LONG_TEXT and i - at > limits.max_int_digits + 2:
                raise PayloadLimitError(f"integer at byte {at - 1} exceeds max_int_digits={limits.max_int_digits}")
            if op == 0x70:  # PUT with a decimal index
                text = body[at : i - 1]
                if not (text.isascii() and text.isdigit()) or len(text) > 12 or int(text) > end:
                    raise PayloadLimitError(f"memo index at byte {at - 1} is out of range")
        else:
            raise PayloadDecodeError(f"unknown or truncated pickle opcode 0x{op:02x} at byte {i - 1}")
    if cost > budget:
        raise PayloadLimitError(f"payload of {end} bytes may use more than max_memory_bytes={budget} once loaded")
    raise PayloadDecodeError("pickle data was truncated (no STOP opcode)")


_CONTAINERS = (list, tuple, dict, set, frozenset, collections.deque)
#: Values whose shape :func:`check_shape` walks.
SHAPED = (*_CONTAINERS, BaseException)


def check_shape(value: Any, limits: DecodeLimits) -> None:
    """Refuse a loaded value that nests deeper than ``max_depth`` (iteratively: the check itself must
    not overflow the stack) or holds a container longer than ``max_container_len``."""
    if not isinstance(value, SHAPED):
        return
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if depth > limits.max_depth:
            raise PayloadLimitError(f"value nests deeper than max_depth={limits.max_depth}")
        if isinstance(node, BaseException):
            children: Iterable[Any] = node.args
        elif isinstance(node, dict):
            children = [*node.keys(), *node.values()]
        else:
            children = node
        if isinstance(node, _CONTAINERS) and len(node) > limits.max_container_len:
            raise PayloadLimitError(
                f"a {type(node).__name__} of {len(node)} items exceeds max_container_len={limits.max_container_len}"
            )
        stack.extend((c, depth + 1) for c in children if isinstance(c, SHAPED))


# Opcodes that open or wrap a container: a payload with no more of these bytes than max_depth cannot
# build anything nested deeper, so the walk of the loaded value is skipped (benchmark P4).
_NESTING_OPCODES = (b"(", b"]", b"}", b")", b"\x8f", b"\x85", b"\x86", b"\x87")


def may_exceed_shape(body: bytes, limits: DecodeLimits) -> bool:
    """Whether a loaded value of this pickle may break ``max_depth`` or ``max_container_len`` at all: not
    when it is shorter than both (a level or an item takes a byte at least)."""
    if len(body) <= limits.max_depth and len(body) <= limits.max_container_len:
        return False
    return len(body) > limits.max_container_len or sum(map(body.count, _NESTING_OPCODES)) > limits.max_depth
