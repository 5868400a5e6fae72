"""Typed errors. Every error about a record names where it was found (key, seq, action, call index)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import StateRef


@dataclass(frozen=True)
class Location:
    """Where in the action-state space something happened; ``None`` fields are unknown or not applicable."""

    key: str | None = None
    seq: int | None = None
    action: str | None = None
    call_index: int | None = None

    def __str__(self) -> str:
        return ", ".join(location_parts(self.key, self.seq, self.action, self.call_index)) or "<no location>"


def location(ref: StateRef, call_index: int | None = None) -> Location:
    """Where the action state ``ref`` is, and its call ``call_index`` if given: what a store names in its errors."""
    return Location(ref.key, ref.seq, ref.action.name, call_index)


def location_parts(key: str | None, seq: int | None, action: str | None, call_index: int | None) -> list[str]:
    """``key='k'``, ``seq=3``, ``action='a'``, ``call_index=1`` for the fields that are set, in that order:
    the one way errors, fault points and crash selectors name a place."""
    parts = []
    if key is not None:
        parts.append(f"key={key!r}")
    if seq is not None:
        parts.append(f"seq={seq}")
    if action is not None:
        parts.append(f"action={action!r}")
    if call_index is not None:
        parts.append(f"call_index={call_index}")
    return parts


class DurableError(Exception):
    """Base class of every error this runtime raises on purpose."""


class LocatedError(DurableError):
    """An error tied to a place in the action-state space."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        self.location = location or Location()
        self.reason = message
        super().__init__(f"{message} [{self.location}]" if location else message)

    @property
    def key(self) -> str | None:
        return self.location.key

    @property
    def seq(self) -> int | None:
        return self.location.seq

    @property
    def action(self) -> str | None:
        return self.location.action

    @property
    def call_index(self) -> int | None:
        return self.location.call_index


class CorruptRecordError(LocatedError):
    """A persisted record cannot be read: bad structure, wrong types, unknown fields."""


class PayloadDecodeError(CorruptRecordError):
    """A call result's result or exception payload cannot be decoded (or failed verification).

    Raised by the durable-call state machine with the record's validation digest: ``function_id`` and
    ``args_digest`` (``None`` when raised by a codec, before the record is known)."""

    function_id: str | None = None
    args_digest: str | None = None


class UntrustedPayloadError(PayloadDecodeError):
    """A payload asks to load code or a class the restricted loader does not admit."""


class NondeterminismError(LocatedError):
    """Strict mode: the call at an index differs from the recorded one."""

    def __init__(
        self,
        location: Location,
        expected_function_id: str,
        expected_digest: str,
        actual_function_id: str,
        actual_digest: str,
    ) -> None:
        self.expected_function_id = expected_function_id
        self.expected_digest = expected_digest
        self.actual_function_id = actual_function_id
        self.actual_digest = actual_digest
        super().__init__(
            "non-deterministic durable call: recorded "
            f"{expected_function_id} (digest {expected_digest}) but the action now calls "
            f"{actual_function_id} (digest {actual_digest}) at call index {location.call_index}",
            location,
        )


class MemoryAccessError(DurableError):
    """Memory or ``send_event`` was used where it is not allowed (inside a durable function)."""


class ActionFailedError(LocatedError):
    """User action code raised; the run is aborted like a failed Flink task."""


class StoreError(DurableError):
    """A store could not be opened or reached, or refused an operation."""


class StoreUrlError(StoreError):
    """A store URL is malformed or names an unknown scheme."""


class StoreSchemeError(StoreError):
    """A store scheme cannot be registered or loaded: a broken ``pytest_durable.stores`` entry point, a
    name taken twice, a scheme that lacks what the caller needs (spec STORE-18)."""


class WireFormatError(CorruptRecordError):
    """Bytes in the Java wire format cannot be read. ``path`` is the JSON path (``$.callResults[2].status``)
    and ``offset`` the byte offset inside a Kryo payload or JSON document, where known."""

    def __init__(
        self, message: str, *, path: str = "$", offset: int | None = None, location: Location | None = None
    ) -> None:
        self.path = path
        self.offset = offset
        where = path + (f" @ offset {offset}" if offset is not None else "")
        super().__init__(f"{message} at {where}", location)


class KryoDecodeError(WireFormatError):
    """A memory-value payload is not a Kryo encoding of a value type memory admits."""


class EventClassError(LocatedError):
    """A stored event names a class that cannot be rebuilt: it cannot be imported, or it is not an Event
    class (spec EVT-2, EVT-3)."""


class UnsupportedFeatureError(DurableError):
    """An agent uses a feature the in-process runtime cannot honour (spec FA-5): the message names the
    feature and how a test supplies a fake instead."""


class RecordLimitError(CorruptRecordError):
    """A record exceeds a decode limit (:class:`~reference_runtime.limits.DecodeLimits`): size, nesting
    depth, integer digits, container length or memory budget (spec LIM-1)."""


class PayloadLimitError(PayloadDecodeError, RecordLimitError):
    """A call result's payload exceeds a decode limit (spec LIM-1)."""


class SignatureError(PayloadDecodeError):
    """With an HMAC key: a payload or action-state header is unsigned, tampered, or signed for another
    record (spec SIG-1, SIG-2)."""


class InvalidValueError(DurableError, TypeError, ValueError):
    """A key, input, event attribute or memory value the runtime cannot store: a self-reference, nesting
    beyond the depth limit, a lone surrogate, an integer too long to write, or a type stores do not hold.
    The message names the value's path and the fix (spec PAY-7)."""


class ConfigError(DurableError, TypeError, ValueError):
    """A runner option or config key has a value of the wrong type or out of range; the message names the
    option, the value, what it accepts and the fix (spec PAY-8, CFG-3). For a config key, ``key``,
    ``value`` and ``expected`` say the same for code."""

    def __init__(
        self, message: str, *, key: str | None = None, value: object = None, expected: str | None = None
    ) -> None:
        super().__init__(message)
        self.key = key
        self.value = value
        self.expected = expected


class UnknownConfigKeyWarning(UserWarning):
    """A config key the runtime does not read although it looks meant for it: under a prefix the runtime
    owns, or a near miss of a known key. The message names the key and the closest known name (spec CFG-4)."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class StoreFailedError(StoreError):
    """A store operation failed during a run; the runner stops at once with this one error (spec FAIL-1).
    ``store`` names the store (its URL), ``operation`` the method, ``cause`` the store's own error."""

    def __init__(self, store: str, operation: str, cause: BaseException, location: Location | None = None) -> None:
        self.store = store
        self.operation = operation
        self.cause = cause
        self.location = location or Location()
        where = f" [{location}]" if location is not None else ""
        super().__init__(
            f"store {store} failed during {operation}{where}: {cause}; the run stopped at the first store failure"
        )


class WriteLimitError(StoreError, LocatedError):
    """A record refused when written: it exceeds a decode limit (:class:`~reference_runtime.limits.DecodeLimits`)
    recovery applies when it reads the record back, so it would be acknowledged now and unreadable later
    (spec LIM-9). The message names the record's location and the limit; a codec raises it without a location
    and the durable call wraps it in ``ResultEncodeError``, which names the call."""


class StoreDataLostError(StoreError):
    """Recovery found that the store lost data written before the checkpoint being restored (a Redis
    server restarted without persistence, a truncated Kafka topic); recovering would repeat completed
    durable calls, so it is refused (spec FAIL-4)."""


class TopicFormatError(StoreError):
    """A write into a Flink Agents topic that the engine owning it could not read (spec WIRE-12): the topic
    holds records of another engine version (or of two), or the state cannot be written in the topic's
    version (a PENDING call in a 0.2 topic). The message names both versions and the fix; nothing is written."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        self.location = location or Location()
        where = f" [{location}]" if location is not None else ""
        super().__init__(message + where)
