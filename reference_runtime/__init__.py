"""In-process reference runtime for Flink-Agents-style durable agents.

The public names mirror ``flink_agents.api``: ``Agent``, ``action``, ``Event`` and the built-in events,
``RunnerContext``, ``MemoryObject``/``MemoryRef``, ``DurableCall``/``Outcome``; plus the runner, stores,
fault points and codecs that make recovery testable in-process.
"""

from ._version import __version__ as __version__
from .agent import Agent, action
from .batch import BatchTimeoutError, DurableCall
from .codecs import CloudpickleCodec, JavaStyleCodec, PayloadCodec, RemoteCallError
from .context import RunnerContext
from .durable import JournalEntry, Outcome, current_call
from .errors import (
    ActionFailedError,
    ConfigError,
    CorruptRecordError,
    DurableError,
    Location,
    MemoryAccessError,
    NondeterminismError,
    PayloadDecodeError,
    StoreError,
    StoreUrlError,
    UnknownConfigKeyWarning,
    UntrustedPayloadError,
)
from .events import (
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    InputEvent,
    OutputEvent,
    ToolRequestEvent,
    ToolResponseEvent,
)
from .faults import CrashAt, CrashNotReachedError, FaultInjector, FaultPoint, Phase, SimulatedCrash
from .identity import CallContext, CallId, args_digest, function_id
from .memory import MemoryObject, MemoryRef
from .records import ActionState, CallResult, CallStatus, MemoryUpdate
from .runner import EmittedOutput, Runner, RunResult, run_agent

__all__ = [
    "ActionFailedError",
    "ActionState",
    "Agent",
    "BatchTimeoutError",
    "CallContext",
    "CallId",
    "CallResult",
    "CallStatus",
    "ChatRequestEvent",
    "ChatResponseEvent",
    "CloudpickleCodec",
    "ConfigError",
    "CorruptRecordError",
    "CrashAt",
    "CrashNotReachedError",
    "DurableCall",
    "DurableError",
    "EmittedOutput",
    "Event",
    "FaultInjector",
    "FaultPoint",
    "InputEvent",
    "JavaStyleCodec",
    "JournalEntry",
    "Location",
    "MemoryAccessError",
    "MemoryObject",
    "MemoryRef",
    "MemoryUpdate",
    "NondeterminismError",
    "Outcome",
    "OutputEvent",
    "PayloadCodec",
    "PayloadDecodeError",
    "Phase",
    "RemoteCallError",
    "RunResult",
    "Runner",
    "RunnerContext",
    "SimulatedCrash",
    "StoreError",
    "StoreUrlError",
    "ToolRequestEvent",
    "ToolResponseEvent",
    "UnknownConfigKeyWarning",
    "UntrustedPayloadError",
    "action",
    "args_digest",
    "current_call",
    "function_id",
    "run_agent",
]
