"""Kryo 5 payloads of memory values, as Flink 2.2.1's ``TypeInformation.of(Object.class)`` serializer writes
them inside the ``{"serde":"kryo","version":1,"payload":…}`` envelope (spec SER-4).

Values are modelled as :class:`JavaValue` trees so a Java-written payload decodes and re-encodes to the
same bytes (Java types, map entry order and shared instances are kept). :func:`from_python` and
:func:`to_python` map plain Python memory values to and from that model:

============  =====================  =================================================
Python        Java written           read back as Python
============  =====================  =================================================
None          null                   None
bool          java.lang.Boolean      bool
int           java.lang.Long         int (also from Integer, Short, Byte, BigInteger)
              (BigInteger if it does not fit in 64 bits)
float         java.lang.Double       float (also from Float)
str           java.lang.String       str (also from Character)
bytes         byte[]                 bytes
list, tuple   java.util.ArrayList    list
dict          java.util.LinkedHashMap dict (also from HashMap), keys must be str
============  =====================  =================================================

``dict`` maps to ``LinkedHashMap`` rather than ``HashMap`` so that a value read back iterates in the order it
was written: a Java ``HashMap`` reorders on read (vector ``kryo-hashmap-reorders-after-roundtrip``), which would
make replayed memory differ from the original. Decoding never instantiates anything: the only class names
accepted are those in the table; any other is a :class:`~reference_runtime.errors.KryoDecodeError` naming the
byte offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..errors import KryoDecodeError
from ..limits import decode_limits

#: Kryo's default registrations (id written as varint(id + 2)).
_REGISTERED = {
    0: "Integer",
    1: "String",
    2: "Float",
    3: "Boolean",
    4: "Byte",
    5: "Character",
    6: "Short",
    7: "Long",
    8: "Double",
}
_REGISTERED_ID = {v: k for k, v in _REGISTERED.items()}
#: Unregistered classes written by name, and the model name of each.
_NAMED = {
    "[B": "bytes",
    "java.util.ArrayList": "ArrayList",
    "java.util.HashMap": "HashMap",
    "java.util.LinkedHashMap": "LinkedHashMap",
    "java.math.BigInteger": "BigInteger",
}
_CLASS_NAME = {v: k for k, v in _NAMED.items()}
#: Types Kryo tracks references for (everything but the primitive wrappers).
_TRACKED = frozenset({"String", "bytes", "ArrayList", "HashMap", "LinkedHashMap", "BigInteger"})
JAVA_TYPES = frozenset(_REGISTERED_ID) | frozenset(_CLASS_NAME)
MAX_DEPTH = 200


@dataclass(eq=False)
class JavaValue:
    """A Java object: ``java`` is the model type name (``"Long"``, ``"HashMap"``, ``"bytes"`` …) and
    ``value`` the Python payload: a scalar, a ``list`` of elements (ArrayList) or a ``list`` of
    ``(key, value)`` pairs (maps; entries in Java iteration order). Elements are ``JavaValue`` or None.
    The same ``JavaValue`` object appearing twice is one shared Java instance (a Kryo back-reference)."""

    java: str
    value: Any

    def __post_init__(self) -> None:
        if self.java not in JAVA_TYPES:
            raise ValueError(f"unknown Java type {self.java!r}; known: {sorted(JAVA_TYPES)}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JavaValue):
            return NotImplemented
        if self.java != other.java:
            return False
        if self.java in ("Double", "Float") and isinstance(self.value, float) and isinstance(other.value, float):
            return struct.pack("<d", self.value) == struct.pack("<d", other.value) or self.value == other.value
        return bool(self.value == other.value)

    __hash__ = None  # type: ignore[assignment]


# -- encoding ---------------------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _varlong(n: int) -> bytes:
    """Kryo's 64-bit varint: up to eight 7-bit groups, then one whole byte."""
    out = bytearray()
    for _ in range(8):
        b = n & 0x7F
        n >>= 7
        if not n:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)
    out.append(n & 0xFF)
    return bytes(out)


def _zigzag(n: int, bits: int) -> int:
    return ((n << 1) ^ (n >> (bits - 1))) & ((1 << bits) - 1)


def _utf16(s: str) -> list[int]:
    raw = s.encode("utf-16-le", "surrogatepass")
    return [raw[i] | (raw[i + 1] << 8) for i in range(0, len(raw), 2)]


def _string(s: str) -> bytes:
    units = _utf16(s)
    if 1 < len(units) <= 32 and all(u <= 0x7F for u in units):
        body = bytearray(units)
        body[-1] |= 0x80
        return bytes(body)
    n = len(units) + 1
    first = 0x80 | (n & 0x3F)
    out = bytearray()
    if n >> 6:
        out.append(first | 0x40)
        out += _varint(n >> 6)
    else:
        out.append(first)
    for u in units:
        if u <= 0x7F:
            out.append(u)
        elif u > 0x7FF:
            out += bytes((0xE0 | (u >> 12) & 0x0F, 0x80 | (u >> 6) & 0x3F, 0x80 | u & 0x3F))
        else:
            out += bytes((0xC0 | (u >> 6) & 0x1F, 0x80 | u & 0x3F))
    return bytes(out)


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()
        self.names: dict[str, int] = {}
        self.refs: dict[int, int] = {}

    def write_class(self, java: str) -> None:
        if java in _REGISTERED_ID:
            self.out += _varint(_REGISTERED_ID[java] + 2)
            return
        self.out.append(1)
        name = _CLASS_NAME[java]
        if name in self.names:
            self.out += _varint(self.names[name])
            return
        self.names[name] = len(self.names)
        self.out += _varint(self.names[name])
        self.out += _string(name)

    def write_ref_or_null(self, v: JavaValue | None, may_be_null: bool) -> bool:
        """Kryo's ``writeReferenceOrNull``: True when nothing more is to be written."""
        if v is None:
            self.out.append(0)
            return True
        if v.java not in _TRACKED:
            if may_be_null:
                self.out.append(1)
            return False
        seen = self.refs.get(id(v))
        if seen is not None:
            self.out += _varint(seen + 2)
            return True
        self.refs[id(v)] = len(self.refs)
        self.out.append(1)
        return False

    def class_and_object(self, v: JavaValue | None, depth: int) -> None:
        if v is None:
            self.out.append(0)
            return
        self.write_class(v.java)
        if self.write_ref_or_null(v, False):
            return
        self.body(v, depth)

    def body(self, v: JavaValue, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ValueError(f"value nests deeper than {MAX_DEPTH}")
        j, x, out = v.java, v.value, self.out
        if j == "String":
            out += _string(x)
        elif j == "Long":
            out += _varlong(_zigzag(int(x), 64))
        elif j in ("Integer",):
            out += _varint(_zigzag(int(x), 32))
        elif j == "Short":
            out += struct.pack("<h", x)
        elif j == "Byte":
            out += struct.pack("<b", x)
        elif j == "Character":
            out += struct.pack("<H", _utf16(x)[0])
        elif j == "Boolean":
            out.append(1 if x else 0)
        elif j == "Double":
            out += struct.pack("<d", x)
        elif j == "Float":
            out += struct.pack("<f", x)
        elif j == "bytes":
            out += _varint(len(x) + 1) + bytes(x)
        elif j == "BigInteger":
            n = int(x)
            raw = n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True)
            out += _varint(len(raw) + 1) + raw
        elif j == "ArrayList":
            self.collection(list(x), depth)
        else:
            out += _varint(len(x) + 1)
            for k, val in x:
                self.class_and_object(k, depth + 1)
                self.class_and_object(val, depth + 1)

    def collection(self, items: list[JavaValue | None], depth: int) -> None:
        if not items:
            self.out.append(1)
            return
        kinds = {it.java for it in items if it is not None}
        has_null = any(it is None for it in items)
        n = len(items) + 1
        if len(kinds) > 1:
            self.out += _varint_flag(False, n)
            for it in items:
                self.class_and_object(it, depth + 1)
            return
        self.out += _varint_flag(True, n)
        if not kinds:  # all elements null
            self.out.append(0)
            return
        self.write_class(next(iter(kinds)))
        self.out.append(1 if has_null else 0)
        for it in items:
            if self.write_ref_or_null(it, has_null):
                continue
            assert it is not None
            self.body(it, depth + 1)


def _varint_flag(flag: bool, n: int) -> bytes:
    first = (0x80 if flag else 0) | (n & 0x3F)
    if n >> 6:
        return bytes((first | 0x40,)) + _varint(n >> 6)
    return bytes((first,))


def encode(value: JavaValue | None) -> bytes:
    """The Kryo payload of ``value`` (``writeClassAndObject``)."""
    w = _Writer()
    w.class_and_object(value, 0)
    return bytes(w.out)


# -- decoding ---------------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.names: dict[int, str] = {}
        self.refs: list[JavaValue | None] = []

    def fail(self, message: str, at: int | None = None) -> KryoDecodeError:
        return KryoDecodeError(message, path="payload", offset=self.pos if at is None else at)

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("buffer underflow")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise self.fail(f"buffer underflow: {n} bytes needed, {len(self.data) - self.pos} left")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def varint(self, max_bytes: int = 5) -> int:
        result = shift = 0
        for _ in range(max_bytes):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        raise self.fail("varint too long")

    def varlong(self) -> int:
        result = shift = 0
        for _ in range(8):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        return result | (self.byte() << 56)

    def varint_flag(self) -> tuple[bool, int]:
        b = self.byte()
        flag = bool(b & 0x80)
        n = b & 0x3F
        if b & 0x40:
            n |= self.varint() << 6
        return flag, n

    def string(self) -> str:
        start = self.pos
        b = self.byte()
        if not b & 0x80:  # ASCII run, last byte has the high bit
            chars = [b]
            while not chars[-1] & 0x80:
                chars.append(self.byte())
            chars[-1] &= 0x7F
            return bytes(chars).decode("ascii")
        n = b & 0x3F
        if b & 0x40:
            n |= self.varint() << 6
        if n == 0:
            raise self.fail("null string where a value was required", start)
        units = []
        for _ in range(n - 1):
            c = self.byte()
            top = c >> 4
            if top < 8:
                units.append(c)
            elif top in (12, 13):
                units.append((c & 0x1F) << 6 | self.byte() & 0x3F)
            elif top == 14:
                units.append((c & 0x0F) << 12 | (self.byte() & 0x3F) << 6 | self.byte() & 0x3F)
            else:
                raise self.fail(f"invalid string byte 0x{c:02x}", self.pos - 1)
        raw = b"".join(u.to_bytes(2, "little") for u in units)
        return raw.decode("utf-16-le", "surrogatepass")

    def read_class(self) -> str | None:
        at = self.pos
        cid = self.varint()
        if cid == 0:
            return None
        if cid == 1:
            name_id = self.varint()
            if name_id in self.names:
                name = self.names[name_id]
            else:
                name = self.string()
                self.names[name_id] = name
            if name not in _NAMED:
                raise self.fail(f"class {name!r} is not a memory value type (accepted: {sorted(_NAMED)})", at)
            return _NAMED[name]
        if cid - 2 not in _REGISTERED:
            raise self.fail(f"unknown registered class id {cid - 2}", at)
        return _REGISTERED[cid - 2]

    def ref_or_null(self, java: str, may_be_null: bool) -> tuple[bool, JavaValue | None, int | None]:
        """(done, value, reserved slot) as Kryo's ``readReferenceOrNull``."""
        if java not in _TRACKED:
            if may_be_null and self.byte() == 0:
                return True, None, None
            return False, None, None
        at = self.pos
        marker = self.varint()
        if marker == 0:
            return True, None, None
        if marker == 1:
            self.refs.append(None)
            return False, None, len(self.refs) - 1
        idx = marker - 2
        if idx >= len(self.refs) or self.refs[idx] is None:
            raise self.fail(f"back-reference to unknown object #{idx}", at)
        return True, self.refs[idx], None

    def class_and_object(self, depth: int) -> JavaValue | None:
        java = self.read_class()
        if java is None:
            return None
        done, val, slot = self.ref_or_null(java, False)
        if done:
            return val
        return self.body(java, slot, depth)

    def body(self, java: str, slot: int | None, depth: int) -> JavaValue:
        if depth > MAX_DEPTH:
            raise self.fail(f"value nests deeper than {MAX_DEPTH}")
        v = JavaValue(java, None)
        if slot is not None:
            self.refs[slot] = v
        if java == "String":
            v.value = self.string()
        elif java == "Long":
            z = self.varlong()
            v.value = (z >> 1) ^ -(z & 1)
        elif java == "Integer":
            z = self.varint()
            if z >> 32:
                raise self.fail("Integer varint out of range")
            v.value = (z >> 1) ^ -(z & 1)
        elif java == "Short":
            v.value = struct.unpack("<h", self.take(2))[0]
        elif java == "Byte":
            v.value = struct.unpack("<b", self.take(1))[0]
        elif java == "Character":
            v.value = chr(struct.unpack("<H", self.take(2))[0])
        elif java == "Boolean":
            v.value = self.byte() == 1
        elif java == "Double":
            v.value = struct.unpack("<d", self.take(8))[0]
        elif java == "Float":
            v.value = struct.unpack("<f", self.take(4))[0]
        elif java in ("bytes", "BigInteger"):
            n = self.varint()
            if n == 0:
                raise self.fail(f"null {java} inside a value")
            raw = self.take(n - 1)
            if java == "bytes":
                v.value = raw
            else:
                if not raw:
                    raise self.fail("empty BigInteger")
                v.value = int.from_bytes(raw, "big", signed=True)
        elif java == "ArrayList":
            v.value = self.collection(depth)
        else:
            n = self.varint()
            if n == 0:
                raise self.fail("null map inside a value")
            v.value = [(self.class_and_object(depth + 1), self.class_and_object(depth + 1)) for _ in range(n - 1)]
        return v

    def collection(self, depth: int) -> list[JavaValue | None]:
        same, n = self.varint_flag()
        if n == 0:
            raise self.fail("null list inside a value")
        length = n - 1
        # Every element takes a byte at least, but in a list whose elements are all null, where the one class
        # byte (null) stands for them all: that length is bounded by max_container_len instead.
        if not same and length > len(self.data) - self.pos:
            raise self.fail(f"list claims {length} elements, more than the bytes left")
        if not length:
            return []
        if not same:
            return [self.class_and_object(depth + 1) for _ in range(length)]
        java = self.read_class()
        if java is None:
            limit = decode_limits().max_container_len
            if length > limit:
                raise self.fail(f"list claims {length} null elements, more than max_container_len={limit}")
            return [None] * length
        if length > len(self.data) - self.pos:
            raise self.fail(f"list claims {length} elements, more than the bytes left")
        has_null = self.byte() == 1
        items: list[JavaValue | None] = []
        for _ in range(length):
            done, val, slot = self.ref_or_null(java, has_null)
            items.append(val if done else self.body(java, slot, depth + 1))
        return items


def decode(payload: bytes) -> JavaValue | None:
    """Read one value (``readClassAndObject``); trailing bytes are ignored, as Kryo does."""
    try:
        return _Reader(bytes(payload)).class_and_object(0)
    except RecursionError:
        raise KryoDecodeError("value nests too deeply", path="payload") from None
    except (UnicodeDecodeError, ValueError, OverflowError) as exc:
        if isinstance(exc, KryoDecodeError):
            raise
        raise KryoDecodeError(f"invalid payload: {exc}", path="payload") from None


# -- Python mapping ----------------------------------------------------------------------------------------

_INT64 = (-(1 << 63), (1 << 63) - 1)


def from_python(value: Any, path: str = "value") -> JavaValue | None:
    """The Java value a Python memory value is written as (table in the module docstring)."""
    seen: dict[int, JavaValue] = {}

    def conv(v: Any, p: str, depth: int) -> JavaValue | None:
        if depth > MAX_DEPTH:
            raise ValueError(f"{p}: nests deeper than {MAX_DEPTH}")
        if v is None:
            return None
        if isinstance(v, JavaValue):
            return v  # already a Java value (a Java-written record, or a caller pinning the Java type)
        if isinstance(v, bool):
            return JavaValue("Boolean", v)
        if isinstance(v, int):
            return JavaValue("Long" if _INT64[0] <= v <= _INT64[1] else "BigInteger", int(v))
        if isinstance(v, float):
            return JavaValue("Double", v)
        if isinstance(v, str):
            return JavaValue("String", v)
        if isinstance(v, bytes | bytearray):
            return JavaValue("bytes", bytes(v))
        if isinstance(v, list | tuple | dict):
            if id(v) in seen:
                return seen[id(v)]  # the same Python object twice: one Java instance, as Kryo writes it
            node = JavaValue("ArrayList" if not isinstance(v, dict) else "LinkedHashMap", [])
            seen[id(v)] = node
            if isinstance(v, dict):
                for k, item in v.items():
                    if not isinstance(k, str):
                        raise TypeError(f"{p}: map keys must be str, got {type(k).__name__}")
                    node.value.append((JavaValue("String", k), conv(item, f"{p}.{k}", depth + 1)))
            else:
                node.value.extend(conv(item, f"{p}[{i}]", depth + 1) for i, item in enumerate(v))
            return node
        raise TypeError(f"{p}: {type(v).__name__} has no Java mapping")

    return conv(value, path, 0)


def to_python(value: JavaValue | None) -> Any:
    """The Python value of a Java value (shared Java instances stay shared Python objects)."""
    done: dict[int, Any] = {}

    def conv(v: JavaValue | None) -> Any:
        if v is None:
            return None
        if id(v) in done:
            return done[id(v)]
        j = v.java
        if j == "ArrayList":
            out: Any = []
            done[id(v)] = out
            out.extend(conv(x) for x in v.value)
            return out
        if j in ("HashMap", "LinkedHashMap"):
            out = {}
            done[id(v)] = out
            for k, x in v.value:
                key = conv(k)
                try:
                    out[key] = conv(x)
                except TypeError:
                    raise KryoDecodeError(
                        f"map key of type {k.java if k else None} is not usable in Python", path="payload"
                    ) from None
            return out
        if j in ("Double", "Float"):
            return float(v.value)
        if j == "bytes":
            return bytes(v.value)
        return v.value

    return conv(value)
