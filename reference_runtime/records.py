"""Call records and action states: the persisted model (Java ``CallResult`` / ``ActionState``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .events import Event


class CallStatus(enum.Enum):
    """Status of a call record; PENDING means only that no terminal state was persisted yet."""

    PENDING = "PENDING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class CallResult(NamedTuple):
    """One durable call's record at a call index: an immutable value, so stores and executions share
    records instead of copying them (benchmark P4).

    ``status`` is ``None`` for legacy records written before 0.3.0; their effective status is FAILED iff
    an exception payload is present, never PENDING (SER-3).
    """

    function_id: str
    args_digest: str
    result_payload: bytes | None = None
    exception_payload: bytes | None = None
    status: CallStatus | None = CallStatus.SUCCEEDED

    @classmethod
    def pending(cls, function_id: str, args_digest: str) -> CallResult:
        return cls(function_id, args_digest, None, None, CallStatus.PENDING)

    @classmethod
    def succeeded(cls, function_id: str, args_digest: str, payload: bytes | None) -> CallResult:
        return cls(function_id, args_digest, payload, None, CallStatus.SUCCEEDED)

    @classmethod
    def failed(cls, function_id: str, args_digest: str, exception_payload: bytes) -> CallResult:
        return cls(function_id, args_digest, None, exception_payload, CallStatus.FAILED)

    @property
    def effective_status(self) -> CallStatus:
        if self.status is not None:
            return self.status
        return CallStatus.FAILED if self.exception_payload is not None else CallStatus.SUCCEEDED

    @property
    def is_pending(self) -> bool:
        return self.effective_status is CallStatus.PENDING

    @property
    def is_terminal(self) -> bool:
        # Only an explicit PENDING is not terminal (a legacy record, status None, never is).
        return self.status is not _PENDING


#: Looked up once: enum class attribute access is slow on CPython 3.11, and replays ask per call.
_PENDING = CallStatus.PENDING


@dataclass
class MemoryUpdate:
    """One memory write of an action: ``set(path, value)``, or ``new_object(path)`` when
    ``object_creation`` is true (PR #1030; the fix for #1029)."""

    path: str
    value: Any
    object_creation: bool = False


@dataclass
class ActionState:
    """Everything persisted about one action execution for (key, seq, action, triggering event)."""

    task_event: Event | None = None
    sensory_memory_updates: list[MemoryUpdate] = field(default_factory=list)
    short_term_memory_updates: list[MemoryUpdate] = field(default_factory=list)
    output_events: list[Event] = field(default_factory=list)
    call_results: list[CallResult] = field(default_factory=list)
    completed: bool = False
    signature: bytes | None = None
    """With an HMAC key: the MAC binding this header to its key, seq, action and state key (spec SIG-2)."""

    def mark_completed(self) -> None:
        """Completion clears the call results: a completed action is skipped whole on recovery."""
        self.completed = True
        self.call_results = []


@dataclass(frozen=True)
class ActionRef:
    """The identity of an action as Java computes it (name, python function, trigger list)."""

    name: str
    module: str
    qualname: str
    triggers: tuple[str, ...]


@dataclass(frozen=True)
class StateRef:
    """Addresses one action state.

    ``state_key`` is the string a store files the state under, computed once by the runner's key scheme
    (Java-compatible by default, see :mod:`reference_runtime.state_keys`). ``occurrence`` counts earlier
    executions of the same action on an event with identical attributes within the same run (0 for the
    first); only the collision-free key scheme uses it.
    """

    key: str
    seq: int
    action: ActionRef
    event: Event
    state_key: str
    occurrence: int = 0
