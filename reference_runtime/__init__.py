"""In-process reference runtime for Flink-Agents-style durable agents.

The public names mirror ``flink_agents.api``: ``Agent``, ``action``, ``Event`` and the built-in events,
``RunnerContext``, ``MemoryObject``/``MemoryRef``, ``DurableCall``/``Outcome``; plus the runner, retry
policies, two-phase commit, clocks, fault points, codecs, decode limits and the typed errors that make
recovery testable in-process. Import them from here: the modules behind them are the layout, not the API
(spec API-1).
"""

from . import flink_agents_compat  # noqa: F401  (registers the flink_agents event family; imports no flink_agents)
from ._version import __version__ as __version__
from .agent import Agent, action
from .batch import BatchTimeoutError, DurableCall
from .class_lookup import record_imports, set_record_imports
from .clock import Clock, SystemClock, VirtualClock
from .codecs import CloudpickleCodec, JavaStyleCodec, PayloadCodec, RemoteCallError
from .context import RunnerContext
from .durable import JournalEntry, Outcome, ResultEncodeError, current_call
from .errors import (
    ActionFailedError,
    ConfigError,
    CorruptRecordError,
    DurableError,
    EventClassError,
    InvalidValueError,
    KryoDecodeError,
    LocatedError,
    Location,
    MemoryAccessError,
    NondeterminismError,
    PayloadDecodeError,
    PayloadLimitError,
    RecordLimitError,
    SignatureError,
    StoreDataLostError,
    StoreError,
    StoreFailedError,
    StoreUrlError,
    TopicFormatError,
    UnknownConfigKeyWarning,
    UnsupportedFeatureError,
    UntrustedPayloadError,
    WireFormatError,
    WriteLimitError,
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
from .limits import DecodeLimits, decode_limits, set_decode_limits
from .memory import MemoryObject, MemoryRef
from .records import ActionRef, ActionState, CallResult, CallStatus, MemoryUpdate, StateRef
from .retry import Backoff, RetryPolicy
from .runner import Checkpoint, EmittedOutput, Runner, RunResult, run_agent
from .two_phase import TwoPhaseCommit, TwoPhaseCommitError, is_two_phase

__all__ = [
    "ActionFailedError",
    "ActionRef",
    "ActionState",
    "Agent",
    "Backoff",
    "BatchTimeoutError",
    "CallContext",
    "CallId",
    "CallResult",
    "CallStatus",
    "ChatRequestEvent",
    "ChatResponseEvent",
    "Checkpoint",
    "Clock",
    "CloudpickleCodec",
    "ConfigError",
    "CorruptRecordError",
    "CrashAt",
    "CrashNotReachedError",
    "DecodeLimits",
    "DurableCall",
    "DurableError",
    "EmittedOutput",
    "Event",
    "EventClassError",
    "FaultInjector",
    "FaultPoint",
    "InputEvent",
    "InvalidValueError",
    "JavaStyleCodec",
    "JournalEntry",
    "KryoDecodeError",
    "LocatedError",
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
    "PayloadLimitError",
    "Phase",
    "RecordLimitError",
    "RemoteCallError",
    "ResultEncodeError",
    "RetryPolicy",
    "RunResult",
    "Runner",
    "RunnerContext",
    "SignatureError",
    "SimulatedCrash",
    "StateRef",
    "StoreDataLostError",
    "StoreError",
    "StoreFailedError",
    "StoreUrlError",
    "SystemClock",
    "ToolRequestEvent",
    "ToolResponseEvent",
    "TopicFormatError",
    "TwoPhaseCommit",
    "TwoPhaseCommitError",
    "UnknownConfigKeyWarning",
    "UnsupportedFeatureError",
    "UntrustedPayloadError",
    "VirtualClock",
    "WireFormatError",
    "WriteLimitError",
    "action",
    "args_digest",
    "current_call",
    "decode_limits",
    "function_id",
    "is_two_phase",
    "record_imports",
    "run_agent",
    "set_decode_limits",
    "set_record_imports",
]
