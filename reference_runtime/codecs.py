"""Payload codecs: how a durable call's result or exception becomes bytes and back (spec PAY-*).

Store contents are untrusted input. The default cloudpickle codec therefore loads payloads with a
restricted unpickler that admits plain data and exception classes only (:mod:`.pickle_trust`); loading
arbitrary objects is an explicit opt-in (``trusted=True`` or ``allowed_classes``). Every pickle is bounded
before it is loaded (:mod:`.pickle_limits`); signed payloads are sealed and opened by :mod:`.signing`.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import cloudpickle

from . import limits as _limits
from .errors import PayloadDecodeError, PayloadLimitError, SignatureError, UntrustedPayloadError, WriteLimitError
from .identity import dumps
from .limits import DecodeLimits, decode_limits, parse_json, parses_within, safe_repr
from .pickle_limits import SHAPED, check_shape, may_exceed_shape, scan
from .pickle_trust import exception_class, load_restricted
from .signing import SEAL_BYTES, RecordBinding, open_payload, seal_payload

__all__ = ["CloudpickleCodec", "JavaStyleCodec", "PayloadCodec", "RecordBinding", "RemoteCallError", "default_codec"]


@runtime_checkable
class PayloadCodec(Protocol):
    """Turns results and exceptions into payload bytes and back. Decoders raise
    :class:`PayloadDecodeError` (never anything else) on bad input."""

    name: str

    def encode_result(self, value: Any) -> bytes: ...

    def decode_result(self, data: bytes) -> Any: ...

    def encode_exception(self, exc: BaseException) -> bytes: ...

    def decode_exception(self, data: bytes) -> BaseException: ...


class CloudpickleCodec:
    """Flink-compatible payloads: ``cloudpickle.dumps`` of the result or exception (spec PAY-1).

    ``trusted=True`` loads with full pickle semantics (runs code from the store: only for stores you
    control). ``allowed_classes`` admits extra ``module.qualname`` globals to the restricted loader.
    ``limits`` bounds what one payload may cost to load (default: :func:`~reference_runtime.limits.decode_limits`).

    ``hmac_key`` signs payloads on write and refuses unsigned, tampered or moved payloads on read: the
    signature covers the payload and its :class:`RecordBinding` (key, seq, action, call index, function
    id, args digest, and the record's status: result, exception or pending). ``verify_keys`` are older keys
    still accepted on read, so keys can be rotated without rewriting the store. Signed payloads are no
    longer readable by Flink Agents.
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
        self._sized_for: DecodeLimits | None = None
        self._scalar_max = 0

    @property
    def binds_records(self) -> bool:
        """True when payloads are signed, so callers pass a :class:`RecordBinding`."""
        return self.hmac_key is not None

    def _seal(self, body: bytes, binding: RecordBinding | None) -> bytes:
        if self.hmac_key is None:
            return body
        return seal_payload(self.hmac_key, body, binding)

    def _open(self, data: bytes, binding: RecordBinding | None) -> bytes:
        if self.hmac_key is None:
            if not isinstance(data, bytes | bytearray):
                raise PayloadDecodeError(f"payload must be bytes, got {type(data).__name__}")
            return bytes(data)
        return open_payload(data, (self.hmac_key, *self.verify_keys), binding)

    def _load(self, data: bytes, binding: RecordBinding | None) -> Any:
        limits = self.limits or decode_limits()
        if isinstance(data, bytes | bytearray) and len(data) > limits.max_payload_bytes + SEAL_BYTES:
            raise PayloadLimitError(
                f"payload of {len(data)} bytes exceeds max_payload_bytes={limits.max_payload_bytes}"
            )
        body = self._open(data, binding)
        try:
            shape = scan(body, limits)
            if self.trusted or not shape.globals:
                value = pickle.loads(body)
            else:
                value = load_restricted(body, shape, self.allowed_classes, limits)
        except PayloadDecodeError:
            raise
        except Exception as exc:
            raise PayloadDecodeError(
                f"payload is not a readable pickle: {type(exc).__name__}: {safe_repr(str(exc), 200)}"
            ) from exc
        if isinstance(value, SHAPED) and may_exceed_shape(body, limits):
            check_shape(value, limits)
        return value

    def _readable(self, body: bytes, value: Any, what: str) -> bytes:
        """``body`` if :meth:`_load` will read it back; otherwise the write is refused now, not after the call
        ran and recovery needed it (spec LIM-9): a limit with :class:`WriteLimitError`, a global the
        restricted loader does not admit with :class:`UntrustedPayloadError` (PAY-9)."""
        limits = self.limits or decode_limits()
        try:
            shape = scan(body, limits)
            if isinstance(value, SHAPED) and may_exceed_shape(body, limits):
                check_shape(value, limits)
        except PayloadLimitError as exc:
            raise WriteLimitError(
                f"the {what} is refused: recovery could not read it back ({exc}); return something smaller, "
                "or raise the limit for writer and reader alike (CloudpickleCodec(limits=...), set_decode_limits)"
            ) from None
        if shape.globals and not self.trusted:
            load_restricted(body, shape, self.allowed_classes, limits)
        return body

    def encode_result(self, value: Any, *, binding: RecordBinding | None = None) -> bytes:
        # A scalar pickles as one opcode with its data and no global (the C pickler writes what cloudpickle
        # would, as ``dumps`` does): what the reader can refuse of it is its size, read off its length; the
        # common result skips the scan and the calls around it (benchmarks P1a, P4).
        # The protocol by position (no keyword parsing in the C function) and the process-wide limits read
        # as ``decode_limits()`` returns them, without its call: 3 % of a durable call (benchmark P1a).
        scalar = type(value) in _SCALARS
        body = pickle.dumps(value, 5) if scalar else dumps(value)
        limits = self.limits or _limits._current
        if limits is not self._sized_for:
            self._sized_for, self._scalar_max = limits, _scalar_bound(limits)
        if not scalar or len(body) > self._scalar_max:
            self._readable(body, value, "result payload")
        return body if self.hmac_key is None else self._seal(body, binding)

    def decode_result(self, data: bytes, *, binding: RecordBinding | None = None) -> Any:
        # Recoveries and sweeps decode the same short payloads again and again (every scenario replays the
        # records before its crash): an unsigned payload holding a scalar, immutable and global-free, is
        # read once per limits in force (benchmark P9). Not for a subclass: it may read payloads its own way.
        if self.hmac_key is None and type(data) is bytes and len(data) <= _MEMO_BODY and type(self) is CloudpickleCodec:
            limits = self.limits or decode_limits()
            hit = _DECODED.get(data)
            if hit is not None and hit[0] is limits:
                return hit[1]
            value = self._load(data, binding)
            if type(value) in _SCALARS:
                if len(_DECODED) >= _MEMO_SIZE:
                    _DECODED.clear()
                _DECODED[data] = (limits, value)
            return value
        return self._load(data, binding)

    def encode_exception(self, exc: BaseException, *, binding: RecordBinding | None = None) -> bytes:
        try:
            body = cloudpickle.dumps(exc)
        except Exception:
            # An exception carrying unpicklable state is still recorded, as its type and message.
            exc = RuntimeError(f"{type(exc).__qualname__}: {exc}")
            body = cloudpickle.dumps(exc)
        return self._seal(self._readable(body, exc, "exception payload"), binding)

    def encode_pending(self, binding: RecordBinding) -> bytes:
        """With an HMAC key, what a PENDING record carries as its result payload: a signature over nothing
        but its binding (kind ``"pending"``), so a terminal record rewritten as PENDING does not verify
        (spec SIG-5)."""
        if self.hmac_key is None:
            raise ValueError("only a codec with an hmac_key signs PENDING records")
        return seal_payload(self.hmac_key, b"", binding)

    def check_pending(self, data: bytes | None, binding: RecordBinding) -> None:
        """Raise :class:`~reference_runtime.errors.SignatureError` unless ``data`` is the signature
        :meth:`encode_pending` wrote for ``binding``."""
        if self.hmac_key is None:
            return
        if data is None:
            raise SignatureError("a PENDING record carries no signature but an HMAC key is configured")
        if open_payload(data, (self.hmac_key, *self.verify_keys), binding):
            raise SignatureError("a PENDING record's signature covers a payload")

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


#: Results pickled as one opcode with their data and no global (PAY-3): what the reader can refuse of them
#: is their size, and an integer its digits, both read off the pickle's length by :func:`_scalar_bound`.
_SCALARS = frozenset({int, float, str, bytes, bool, type(None)})

#: Decoded scalar results by payload, with the limits they were read under (see ``decode_result``).
_DECODED: dict[bytes, tuple[DecodeLimits, Any]] = {}
_MEMO_BODY = 256
_MEMO_SIZE = 8192


def _scalar_bound(limits: DecodeLimits) -> int:
    """The longest pickle of a scalar the reader cannot refuse under ``limits``: within the payload size, an
    integer's digits, and the memory its one object costs (five times its text, and a frame's copy)."""
    return min(limits.max_payload_bytes, limits.max_int_digits * 10 // 24, limits.max_memory_bytes // 8)


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
            data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        except (TypeError, ValueError, RecursionError) as exc:
            raise TypeError(f"the java codec stores JSON results only: {safe_repr(str(exc), 200)}") from exc
        return self._readable(data, "result payload")

    def _readable(self, data: bytes, what: str) -> bytes:
        """``data`` if the reader's own parse accepts it under the limits (spec LIM-9), else WriteLimitError."""
        limits = self.limits or decode_limits()
        if not parses_within(data, limits):
            try:
                parse_json(data, limits, _payload_failure, what)
            except PayloadDecodeError as exc:
                raise WriteLimitError(
                    f"the {what} is refused: recovery could not read it back ({exc}); return something "
                    "smaller, or raise the limit for writer and reader alike (JavaStyleCodec(limits=...), "
                    "set_decode_limits)"
                ) from None
        return data

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
        data = json.dumps({"exceptionClass": fqcn, "message": message}, separators=(",", ":")).encode()
        return self._readable(data, "exception payload")

    def decode_exception(self, data: bytes) -> BaseException:
        obj = self._parse(data, "exception payload")
        if not isinstance(obj, dict) or not isinstance(obj.get("exceptionClass"), str):
            raise PayloadDecodeError("exception payload lacks a string 'exceptionClass'")
        message = obj.get("message")
        if message is not None and not isinstance(message, str):
            raise PayloadDecodeError("exception payload 'message' must be a string or null")
        name = obj["exceptionClass"]
        cls = exception_class(name)
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


def default_codec() -> PayloadCodec:
    return CloudpickleCodec()
