"""Payload codecs: how a durable call's result or exception becomes bytes and back (spec PAY-*).

Store contents are untrusted input. The default cloudpickle codec therefore loads payloads with a
restricted unpickler that admits plain data and exception classes only; loading arbitrary objects is
an explicit opt-in (``trusted=True`` or ``allowed_classes``).
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import io
import json
import pickle
import re
import sys
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import cloudpickle

from .errors import PayloadDecodeError, UntrustedPayloadError
from .identity import dumps


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
            "list", "dict", "set", "frozenset", "tuple", "bytes", "bytearray", "str", "int", "float",
            "complex", "bool", "slice", "range", "NoneType", "object",
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


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, allowed: frozenset[str]) -> None:
        super().__init__(io.BytesIO(data))
        self._allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS or f"{module}.{name}" in self._allowed:
            return super().find_class(module, name)
        # Exception classes are admitted only from modules that are already imported: resolving them
        # must not import (and so execute) anything new.
        mod = sys.modules.get(module)
        if mod is not None and "." not in name:
            obj = getattr(mod, name, None)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                return obj
        raise UntrustedPayloadError(
            f"payload refers to {module}.{name}, which the restricted loader does not admit "
            "(allow it with allowed_classes=, or opt in to trusted=True)"
        )


# The only opcodes through which a pickle reaches anything callable: GLOBAL, INST, STACK_GLOBAL and
# EXT1/2/4 all resolve a global (PERSID needs a persistent_load, which plain loads refuses). REDUCE, BUILD,
# NEWOBJ and OBJ act only on what those put on the stack. A payload in which none of these bytes occurs
# anywhere, even inside its data, holds plain data only and is safe to load without the restricted loader.
_GLOBAL_OPCODES = re.compile(b"[ci\x93\x82\x83\x84]")

_MAC_MAGIC = b"DHM1"
_MAC_LEN = 32


class CloudpickleCodec:
    """Flink-compatible payloads: ``cloudpickle.dumps`` of the result or exception (facts §3).

    ``trusted=True`` loads with full pickle semantics (runs code from the store: only for stores you
    control). ``allowed_classes`` admits extra ``module.qualname`` globals to the restricted loader.
    ``hmac_key`` signs payloads on write and refuses unsigned or tampered payloads on read; signed
    payloads are no longer readable by Flink Agents itself.
    """

    name = "cloudpickle"

    def __init__(
        self,
        *,
        trusted: bool = False,
        allowed_classes: Iterable[str] = (),
        hmac_key: bytes | None = None,
    ) -> None:
        self.trusted = trusted
        self.allowed_classes = frozenset(allowed_classes)
        self.hmac_key = hmac_key

    def _seal(self, body: bytes) -> bytes:
        if self.hmac_key is None:
            return body
        mac = hmac.new(self.hmac_key, body, hashlib.sha256).digest()
        return _MAC_MAGIC + mac + body

    def _open(self, data: bytes) -> bytes:
        if not isinstance(data, bytes | bytearray):
            raise PayloadDecodeError(f"payload must be bytes, got {type(data).__name__}")
        if self.hmac_key is None:
            return bytes(data)
        if not data.startswith(_MAC_MAGIC) or len(data) < len(_MAC_MAGIC) + _MAC_LEN:
            raise PayloadDecodeError("payload is not signed but an HMAC key is configured")
        mac = data[len(_MAC_MAGIC) : len(_MAC_MAGIC) + _MAC_LEN]
        body = bytes(data[len(_MAC_MAGIC) + _MAC_LEN :])
        expected = hmac.new(self.hmac_key, body, hashlib.sha256).digest()
        if not hmac.compare_digest(mac, expected):
            raise PayloadDecodeError("payload signature does not verify (tampered or wrong key)")
        return body

    def _load(self, data: bytes) -> Any:
        body = self._open(data)
        try:
            if self.trusted or _GLOBAL_OPCODES.search(body) is None:
                return pickle.loads(body)
            return _RestrictedUnpickler(body, self.allowed_classes).load()
        except PayloadDecodeError:
            raise
        except Exception as exc:
            raise PayloadDecodeError(f"payload is not a readable pickle: {type(exc).__name__}: {exc}") from exc

    def encode_result(self, value: Any) -> bytes:
        return self._seal(dumps(value))

    def decode_result(self, data: bytes) -> Any:
        return self._load(data)

    def encode_exception(self, exc: BaseException) -> bytes:
        try:
            body = cloudpickle.dumps(exc)
        except Exception:
            # An exception carrying unpicklable state is still recorded, as its type and message.
            body = cloudpickle.dumps(RuntimeError(f"{type(exc).__qualname__}: {exc}"))
        return self._seal(body)

    def decode_exception(self, data: bytes) -> BaseException:
        value = self._load(data)
        if not isinstance(value, BaseException):
            raise PayloadDecodeError(f"exception payload holds a {type(value).__name__}, not an exception")
        return value


class RemoteCallError(Exception):
    """Replays a Java-style exception payload whose class has no Python counterpart."""

    def __init__(self, exception_class: str, message: str | None) -> None:
        self.exception_class = exception_class
        self.message = message
        super().__init__(f"{exception_class}: {message}")


class JavaStyleCodec:
    """The Java runtime's payloads: result as JSON bytes, exception as
    ``{"exceptionClass": "<FQCN>", "message": "<msg or null>"}`` (facts §3). Nothing here can run code."""

    name = "java"

    def encode_result(self, value: Any) -> bytes:
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the java codec stores JSON results only: {exc}") from exc

    def decode_result(self, data: bytes) -> Any:
        try:
            return json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise PayloadDecodeError(f"result payload is not JSON: {exc}") from exc

    def encode_exception(self, exc: BaseException) -> bytes:
        cls = type(exc)
        fqcn = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
        message = str(exc) if exc.args else None
        return json.dumps({"exceptionClass": fqcn, "message": message}, separators=(",", ":")).encode()

    def decode_exception(self, data: bytes) -> BaseException:
        try:
            obj = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise PayloadDecodeError(f"exception payload is not JSON: {exc}") from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("exceptionClass"), str):
            raise PayloadDecodeError("exception payload lacks a string 'exceptionClass'")
        message = obj.get("message")
        if message is not None and not isinstance(message, str):
            raise PayloadDecodeError("exception payload 'message' must be a string or null")
        cls = _resolve_exception_class(obj["exceptionClass"])
        if cls is None:
            return RemoteCallError(obj["exceptionClass"], message)
        try:
            return cls(message) if message is not None else cls()
        except Exception:
            return RemoteCallError(obj["exceptionClass"], message)


def _resolve_exception_class(name: str) -> type[BaseException] | None:
    module, _, attr = name.rpartition(".")
    mod = sys.modules.get(module or "builtins")
    obj = getattr(mod if module else builtins, attr, None) if mod is not None or not module else None
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return obj
    return None


def default_codec() -> PayloadCodec:
    return CloudpickleCodec()
