"""Payload codecs: how a durable call's result or exception becomes bytes and back (spec PAY-*).

Store contents are untrusted input. The default cloudpickle codec therefore loads payloads with a
restricted unpickler that admits plain data and exception classes only; loading arbitrary objects is
an explicit opt-in (``trusted=True`` or ``allowed_classes``).
"""

from __future__ import annotations

import builtins
import collections
import copyreg
import hashlib
import hmac
import io
import json
import pickle
import re
import sys
import types
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol, runtime_checkable

import cloudpickle

from .errors import PayloadDecodeError, PayloadLimitError, SignatureError, UntrustedPayloadError
from .identity import dumps
from .limits import DecodeLimits, decode_limits, parse_json, safe_repr


@runtime_checkable
class PayloadCodec(Protocol):
    """Turns results and exceptions into payload bytes and back. Decoders raise
    :class:`PayloadDecodeError` (never anything else) on bad input."""

    name: str

    def encode_result(self, value: Any) -> bytes: ...

    def decode_result(self, data: bytes) -> Any: ...

    def encode_exception(self, exc: BaseException) -> bytes: ...

    def decode_exception(self, data: bytes) -> BaseException: ...


_SAFE_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("builtins", name)
        for name in (
            "list",
            "dict",
            "set",
            "frozenset",
            "tuple",
            "bytes",
            "bytearray",
            "str",
            "int",
            "float",
            "complex",
            "bool",
            "slice",
            "range",
            "NoneType",
            "object",
        )
    }
    | {
        ("collections", "OrderedDict"),
        ("collections", "deque"),
        ("collections", "defaultdict"),
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("decimal", "Decimal"),
        ("uuid", "UUID"),
        ("fractions", "Fraction"),
        # copyreg helpers only rebuild instances of classes that passed find_class themselves.
        ("copyreg", "_reconstructor"),
        ("copyreg", "__newobj__"),
    }
)


class RecordBinding(NamedTuple):
    """Where a payload belongs: with an HMAC key its signature covers all of this (spec SIG-1), so a
    signed payload copied into another record, call index or status does not verify."""

    key: str
    seq: int
    action: str
    call_index: int
    function_id: str
    args_digest: str
    kind: str  # "result" or "exception"

    def encode(self) -> bytes:
        return json.dumps(list(self), separators=(",", ":"), ensure_ascii=True).encode()


# -- bounded pickle loading (spec LIM-2..LIM-5) -------------------------------------------------------
# Argument layout of every pickle opcode: a fixed number of bytes, a little-endian length prefix of
# 1/4/8 bytes followed by that many bytes, or one/two newline-terminated lines.
_PREFIXED: dict[int, int] = {op: 1 for op in b"UC\x8c\x8a"}
_PREFIXED.update({op: 4 for op in b"TXB\x8b"})
_PREFIXED.update({op: 8 for op in b"\x8d\x8e\x96"})
_LINES: dict[int, int] = {op: 1 for op in b"ILFSVpgP"}
_LINES.update({op: 2 for op in b"ci"})
_LONG_BINARY = frozenset(b"\x8a\x8b")
_LONG_TEXT = frozenset(b"IL")
# What one byte of pickle may cost once loaded, at most: an empty container object (56 bytes) plus its
# stack or memo slot for a one-byte opcode.
_PER_BYTE = 96
# Runs of opcodes that cannot allocate beyond their own bytes, consumed at C speed: no argument, or a
# fixed-size one. LONG_BINPUT (r), PUT (p), STOP (.), BUILD (b) and the opcodes that name a global
# (GLOBAL c, INST i, STACK_GLOBAL, EXT1/2/4) are left to the Python loop below, which notes them.
_SIMPLE_RUN = re.compile(
    b"(?:[(012N}a\\]delR)stu\x81\x85\x86\x87\x88\x89\x8f\x90\x91\x92\x94\x97\x98oQ]"
    b"|[Khq\x80].|M..|[Jj]....|[G\x95].{8})*",
    re.DOTALL,
)
_EXT = {0x82: 1, 0x83: 2, 0x84: 4}


class _Shape(NamedTuple):
    """What the scan found: whether the pickle names a global, and whether it uses BUILD."""

    globals: bool
    build: bool


def _scan(body: bytes, limits: DecodeLimits) -> _Shape:
    """Walk the opcodes of a pickle without building anything and refuse what would allocate beyond
    ``limits``: memo indexes no pickler produces (``LONG_BINPUT 100000000`` makes the C loader allocate
    1.5 GB for its memo table), oversized integers, and payloads whose objects exceed the memory budget."""
    end = len(body)
    if end > limits.max_payload_bytes:
        raise PayloadLimitError(f"payload of {end} bytes exceeds max_payload_bytes={limits.max_payload_bytes}")
    if end * _PER_BYTE > limits.max_memory_bytes:
        raise PayloadLimitError(
            f"payload of {end} bytes may use more than max_memory_bytes={limits.max_memory_bytes} once loaded"
        )
    max_long_bytes = limits.max_int_digits * 10 // 24 + 1  # 2.4 decimal digits per byte
    match = _SIMPLE_RUN.match
    i = 0
    names_global = build = False
    while True:
        i = match(body, i).end()  # type: ignore[union-attr]  # the pattern matches the empty string
        if i >= end:
            break
        op = body[i]
        i += 1
        if op == 0x2E:  # STOP
            return _Shape(names_global, build)
        if op == 0x62:  # BUILD
            build = True
        elif op == 0x93:  # STACK_GLOBAL
            names_global = True
        elif op in _EXT:
            names_global = True
            i += _EXT[op]
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
            i += n + size
        elif (n := _LINES.get(op)) is not None:
            at = i
            for _ in range(n):
                nl = body.find(b"\n", i)
                if nl < 0:
                    raise PayloadDecodeError(f"unterminated argument at byte {at - 1}")
                i = nl + 1
            names_global = names_global or op in (0x63, 0x69)  # GLOBAL, INST
            if op in _LONG_TEXT and i - at > limits.max_int_digits + 2:
                raise PayloadLimitError(f"integer at byte {at - 1} exceeds max_int_digits={limits.max_int_digits}")
            if op == 0x70:  # PUT with a decimal index
                text = body[at : i - 1]
                if not (text.isascii() and text.isdigit()) or len(text) > 12 or int(text) > end:
                    raise PayloadLimitError(f"memo index at byte {at - 1} is out of range")
        else:
            raise PayloadDecodeError(f"unknown or truncated pickle opcode 0x{op:02x} at byte {i - 1}")
    raise PayloadDecodeError("pickle data was truncated (no STOP opcode)")


_CONTAINERS = (list, tuple, dict, set, frozenset, collections.deque)
_SHAPED = (*_CONTAINERS, BaseException)


def _check_shape(value: Any, limits: DecodeLimits) -> None:
    """Refuse a loaded value that nests deeper than ``max_depth`` (iteratively: the check itself must
    not overflow the stack) or holds a container longer than ``max_container_len``."""
    if not isinstance(value, _SHAPED):
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
        stack.extend((c, depth + 1) for c in children if isinstance(c, _SHAPED))


# Globals that cannot build anything larger than their arguments: a pickle naming only these (and no BUILD)
# is loaded by the C unpickler; any other admitted global goes through the guarded loader below.
_INERT: frozenset[tuple[str, str]] = frozenset(
    {("builtins", n) for n in ("int", "float", "complex", "bool", "NoneType", "slice", "object", "str")}
    | {("datetime", n) for n in ("datetime", "date", "time", "timedelta", "timezone")}
    | {("decimal", "Decimal"), ("fractions", "Fraction"), ("uuid", "UUID")}
)


class _NeedsGuard(Exception):
    """The payload names a global that may allocate when called: load it with the guarded loader."""


def _admitted_exception(module: str, name: str) -> type[Exception] | None:
    # Exception classes are admitted only from modules that are already imported: resolving them must not
    # import (and so execute) anything new. Only Exception subclasses: a SystemExit or KeyboardInterrupt
    # replayed from a record would stop the recovering process (spec PAY-6).
    mod = sys.modules.get(module)
    if mod is not None and "." not in name:
        obj = getattr(mod, name, None)
        if isinstance(obj, type) and issubclass(obj, Exception):
            return obj
    return None


def _refuse(module: str, name: str) -> UntrustedPayloadError:
    return UntrustedPayloadError(
        f"payload refers to {module}.{name}, which the restricted loader does not admit "
        "(allow it with allowed_classes=, or opt in to trusted=True)"
    )


class _InertUnpickler(pickle.Unpickler):
    """The C unpickler for payloads without BUILD whose globals are exception classes or inert value types:
    nothing it can call allocates beyond its arguments, so no call needs checking (benchmark P4)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _INERT:
            return super().find_class(module, name)
        exc = _admitted_exception(module, name)
        if exc is not None:
            return exc
        if (module, name) in _SAFE_GLOBALS:
            raise _NeedsGuard
        raise _refuse(module, name)


def _allocating_base(func: Any) -> type | None:
    return func if isinstance(func, type) and issubclass(func, bytes | bytearray) else None


# The pure-Python unpickler: its opcode table can be overridden per class, the C one's cannot.
_PyUnpickler: Any = vars(pickle)["_Unpickler"]
_newobj: Any = vars(copyreg)["__newobj__"]
_newobj_ex: Any = vars(copyreg)["__newobj_ex__"]
_reconstructor: Any = vars(copyreg)["_reconstructor"]


class _RestrictedUnpickler(_PyUnpickler):  # type: ignore[misc]
    """The pure-Python unpickler with every call it makes guarded: only admitted globals are resolved,
    their arguments are checked against the memory budget before the call (``bytearray(600000000)``,
    ``list(range(20000000))``), what they build is counted, and BUILD cannot set state on a class or
    module (spec PAY-3, LIM-4, LIM-6)."""

    def __init__(self, data: bytes, allowed: frozenset[str], limits: DecodeLimits) -> None:
        super().__init__(io.BytesIO(data))
        self._allowed = allowed
        self._limits = limits
        self._spent = 0

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS or f"{module}.{name}" in self._allowed:
            return super().find_class(module, name)
        exc = _admitted_exception(module, name)
        if exc is not None:
            return exc
        raise _refuse(module, name)

    def _check_args(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        limits = self._limits
        target = func
        if func is _reconstructor and len(args) == 3:
            target = args[1]
        elif func is _newobj and args:
            target = args[0]
        base = _allocating_base(target)
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, range) and len(arg) > limits.max_container_len:
                raise PayloadLimitError(
                    f"{_name(func)}(range of {len(arg)} items) exceeds max_container_len={limits.max_container_len}"
                )
            if base is not None and isinstance(arg, int) and arg > limits.max_memory_bytes - self._spent:
                raise PayloadLimitError(
                    f"{_name(func)}({arg}) exceeds the memory budget max_memory_bytes={limits.max_memory_bytes}"
                )

    def _call(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not callable(func):
            raise PayloadDecodeError(f"payload calls a {type(func).__name__}, which is not callable")
        self._check_args(func, args, kwargs)
        value = func(*args, **kwargs)
        self._spent += sys.getsizeof(value, 64)
        if self._spent > self._limits.max_memory_bytes:
            raise PayloadLimitError(f"payload would use more than max_memory_bytes={self._limits.max_memory_bytes}")
        return value

    def _load_reduce(self) -> None:
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        if not isinstance(args, tuple):
            raise PayloadDecodeError("REDUCE arguments are not a tuple")
        stack[-1] = self._call(func, args, {})

    def _load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        if not isinstance(cls, type) or not isinstance(args, tuple):
            raise PayloadDecodeError("NEWOBJ needs a class and an argument tuple")
        self.append(self._call(_newobj, (cls, *args), {}))

    def _load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        if not isinstance(cls, type) or not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise PayloadDecodeError("NEWOBJ_EX needs a class, an argument tuple and a keyword dict")
        self.append(self._call(_newobj_ex, (cls, args, kwargs), {}))

    def _load_build(self) -> None:
        state = self.stack[-1]
        inst = self.stack[-2] if len(self.stack) > 1 else None
        # No payload may set state on a class or module (setting fractions.Fraction.__repr__ would
        # change the whole process), nor replace an instance's class or special attributes.
        if isinstance(inst, type | types.ModuleType) or (callable(inst) and not isinstance(inst, BaseException)):
            raise UntrustedPayloadError(f"payload sets state on {_name(inst)}, which the loader refuses")
        setstate = getattr(type(inst), "__setstate__", None)
        if setstate is not None and setstate is not BaseException.__setstate__:
            # The allow-listed class restores its own instance (pydantic models name '__dict__' and their
            # field sets in the state they hand it): its __setstate__ decides, on this instance only.
            super().load_build()
            return
        parts = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
        for part in parts:
            if isinstance(part, dict):
                for name in part:
                    if not isinstance(name, str) or (name.startswith("__") and name != "__notes__"):
                        raise UntrustedPayloadError(
                            f"payload sets attribute {safe_repr(name)} of a "
                            f"{type(inst).__name__}, which the loader refuses"
                        )
        super().load_build()

    def _refuse_old_style(self) -> None:
        raise UntrustedPayloadError("payload uses INST/OBJ opcodes, which the restricted loader does not admit")


_RestrictedUnpickler.dispatch = {
    **_PyUnpickler.dispatch,
    pickle.REDUCE[0]: _RestrictedUnpickler._load_reduce,
    pickle.NEWOBJ[0]: _RestrictedUnpickler._load_newobj,
    pickle.NEWOBJ_EX[0]: _RestrictedUnpickler._load_newobj_ex,
    pickle.BUILD[0]: _RestrictedUnpickler._load_build,
    pickle.INST[0]: _RestrictedUnpickler._refuse_old_style,
    pickle.OBJ[0]: _RestrictedUnpickler._refuse_old_style,
}


def _name(obj: Any) -> str:
    return str(getattr(obj, "__qualname__", None) or type(obj).__name__)


# Opcodes that open or wrap a container: a payload with no more of these bytes than max_depth cannot
# build anything nested deeper, so the walk of the loaded value is skipped (benchmark P4).
_NESTING_OPCODES = (b"(", b"]", b"}", b")", b"\x8f", b"\x85", b"\x86", b"\x87")


def _may_exceed_shape(body: bytes, limits: DecodeLimits) -> bool:
    return len(body) > limits.max_container_len or sum(map(body.count, _NESTING_OPCODES)) > limits.max_depth


_OLD_MAC_MAGIC = b"DHM1"
_MAC_MAGIC = b"DHM2"
_MAC_LEN = 32


class CloudpickleCodec:
    """Flink-compatible payloads: ``cloudpickle.dumps`` of the result or exception (spec PAY-1).

    ``trusted=True`` loads with full pickle semantics (runs code from the store: only for stores you
    control). ``allowed_classes`` admits extra ``module.qualname`` globals to the restricted loader.
    ``limits`` bounds what one payload may cost to load (default: :func:`~reference_runtime.limits.decode_limits`).

    ``hmac_key`` signs payloads on write and refuses unsigned, tampered or moved payloads on read: the
    signature covers the payload and its :class:`RecordBinding` (key, seq, action, call index, function
    id, args digest, result or exception). ``verify_keys`` are older keys still accepted on read, so keys
    can be rotated without rewriting the store. Signed payloads are no longer readable by Flink Agents.
    """

    name = "cloudpickle"

    def __init__(
        self,
        *,
        trusted: bool = False,
        allowed_classes: Iterable[str] = (),
        hmac_key: bytes | None = None,
        verify_keys: Iterable[bytes] = (),
        limits: DecodeLimits | None = None,
    ) -> None:
        if hmac_key is not None and not isinstance(hmac_key, bytes):
            raise TypeError(f"hmac_key must be bytes, got {type(hmac_key).__name__}")
        self.trusted = trusted
        self.allowed_classes = frozenset(allowed_classes)
        self.hmac_key = hmac_key
        self.verify_keys: tuple[bytes, ...] = tuple(verify_keys)
        if any(not isinstance(k, bytes) for k in self.verify_keys):
            raise TypeError("verify_keys must be bytes")
        if self.verify_keys and hmac_key is None:
            raise ValueError("verify_keys need an hmac_key to sign new payloads with")
        self.limits = limits

    @property
    def binds_records(self) -> bool:
        """True when payloads are signed, so callers pass a :class:`RecordBinding`."""
        return self.hmac_key is not None

    def _mac(self, key: bytes, body: bytes, binding: RecordBinding | None) -> bytes:
        bound = binding.encode() if binding is not None else b""
        return hmac.new(key, _MAC_MAGIC + len(bound).to_bytes(4, "big") + bound + body, hashlib.sha256).digest()

    def _seal(self, body: bytes, binding: RecordBinding | None) -> bytes:
        if self.hmac_key is None:
            return body
        return _MAC_MAGIC + self._mac(self.hmac_key, body, binding) + body

    def _open(self, data: bytes, binding: RecordBinding | None) -> bytes:
        if not isinstance(data, bytes | bytearray):
            raise PayloadDecodeError(f"payload must be bytes, got {type(data).__name__}")
        if self.hmac_key is None:
            return bytes(data)
        if data.startswith(_OLD_MAC_MAGIC):
            raise SignatureError("payload is signed with the unbound format of 0.x (DHM1); re-record it")
        if not data.startswith(_MAC_MAGIC) or len(data) < len(_MAC_MAGIC) + _MAC_LEN:
            raise SignatureError("payload is not signed but an HMAC key is configured")
        mac = data[len(_MAC_MAGIC) : len(_MAC_MAGIC) + _MAC_LEN]
        body = bytes(data[len(_MAC_MAGIC) + _MAC_LEN :])
        for key in (self.hmac_key, *self.verify_keys):
            if hmac.compare_digest(mac, self._mac(key, body, binding)):
                return body
        raise SignatureError(
            "payload signature does not verify (tampered, moved from another record, or signed with a key "
            "that is neither hmac_key nor one of verify_keys)"
        )

    def _load(self, data: bytes, binding: RecordBinding | None) -> Any:
        limits = self.limits or decode_limits()
        if isinstance(data, bytes | bytearray) and len(data) > limits.max_payload_bytes + len(_MAC_MAGIC) + _MAC_LEN:
            raise PayloadLimitError(
                f"payload of {len(data)} bytes exceeds max_payload_bytes={limits.max_payload_bytes}"
            )
        body = self._open(data, binding)
        try:
            shape = _scan(body, limits)
            if self.trusted or not shape.globals:
                value = pickle.loads(body)
            else:
                value = self._restricted(body, shape, limits)
        except PayloadDecodeError:
            raise
        except Exception as exc:
            raise PayloadDecodeError(
                f"payload is not a readable pickle: {type(exc).__name__}: {safe_repr(str(exc), 200)}"
            ) from exc
        if isinstance(value, _SHAPED) and _may_exceed_shape(body, limits):
            _check_shape(value, limits)
        return value

    def _restricted(self, body: bytes, shape: _Shape, limits: DecodeLimits) -> Any:
        if not shape.build and not self.allowed_classes:
            try:
                return _InertUnpickler(io.BytesIO(body)).load()
            except _NeedsGuard:
                pass
        return _RestrictedUnpickler(body, self.allowed_classes, limits).load()

    def encode_result(self, value: Any, *, binding: RecordBinding | None = None) -> bytes:
        return self._seal(dumps(value), binding)

    def decode_result(self, data: bytes, *, binding: RecordBinding | None = None) -> Any:
        return self._load(data, binding)

    def encode_exception(self, exc: BaseException, *, binding: RecordBinding | None = None) -> bytes:
        try:
            body = cloudpickle.dumps(exc)
        except Exception:
            # An exception carrying unpicklable state is still recorded, as its type and message.
            body = cloudpickle.dumps(RuntimeError(f"{type(exc).__qualname__}: {exc}"))
        return self._seal(body, binding)

    def decode_exception(self, data: bytes, *, binding: RecordBinding | None = None) -> BaseException:
        value = self._load(data, binding)
        if not isinstance(value, Exception):
            # SystemExit, KeyboardInterrupt or GeneratorExit raised on replay would stop the process
            # (spec PAY-6); only Exception subclasses are outcomes of a call.
            raise UntrustedPayloadError(
                f"exception payload holds a {type(value).__name__}, not an Exception subclass; "
                "only Exception subclasses are replayed"
            )
        return value


class RemoteCallError(Exception):
    """Replays a Java-style exception payload whose class has no Python counterpart."""

    def __init__(self, exception_class: str, message: str | None) -> None:
        self.exception_class = exception_class
        self.message = message
        super().__init__(f"{exception_class}: {message}")


class JavaStyleCodec:
    """The Java runtime's payloads: result as JSON bytes, exception as
    ``{"exceptionClass": "<FQCN>", "message": "<msg or null>"}`` (spec PAY-2). Nothing here can run code;
    decoding is bounded by ``limits`` (default: :func:`~reference_runtime.limits.decode_limits`)."""

    name = "java"

    def __init__(self, *, limits: DecodeLimits | None = None) -> None:
        self.limits = limits

    def encode_result(self, value: Any) -> bytes:
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        except (TypeError, ValueError, RecursionError) as exc:
            raise TypeError(f"the java codec stores JSON results only: {safe_repr(str(exc), 200)}") from exc

    def _parse(self, data: bytes, what: str) -> Any:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise PayloadDecodeError(f"{what} must be bytes, got {type(data).__name__}")
        limits = self.limits or decode_limits()
        return parse_json(bytes(data), limits, _payload_failure, what)

    def decode_result(self, data: bytes) -> Any:
        return self._parse(data, "result payload")

    def encode_exception(self, exc: BaseException) -> bytes:
        cls = type(exc)
        fqcn = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
        message = str(exc) if exc.args else None
        return json.dumps({"exceptionClass": fqcn, "message": message}, separators=(",", ":")).encode()

    def decode_exception(self, data: bytes) -> BaseException:
        obj = self._parse(data, "exception payload")
        if not isinstance(obj, dict) or not isinstance(obj.get("exceptionClass"), str):
            raise PayloadDecodeError("exception payload lacks a string 'exceptionClass'")
        message = obj.get("message")
        if message is not None and not isinstance(message, str):
            raise PayloadDecodeError("exception payload 'message' must be a string or null")
        name = obj["exceptionClass"]
        cls = _resolve_exception_class(name)
        if cls is not None and not issubclass(cls, Exception):
            raise UntrustedPayloadError(
                f"exception payload names {safe_repr(name)}, which is not an Exception subclass; "
                "only Exception subclasses are replayed"
            )
        if cls is None:
            return RemoteCallError(name, message)
        try:
            return cls(message) if message is not None else cls()
        except Exception:
            return RemoteCallError(name, message)


def _payload_failure(message: str) -> PayloadDecodeError:
    return PayloadLimitError(message) if "max_" in message else PayloadDecodeError(message)


def _resolve_exception_class(name: str) -> type[BaseException] | None:
    module, _, attr = name.rpartition(".")
    mod = sys.modules.get(module or "builtins")
    obj = getattr(mod if module else builtins, attr, None) if mod is not None or not module else None
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return obj
    return None


def default_codec() -> PayloadCodec:
    return CloudpickleCodec()
