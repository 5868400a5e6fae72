"""The Java wire format: ``ActionStateSerde`` JSON records, Kryo memory values, 0.2.0 legacy records.

See ``docs/wire-format.md``; clauses SER-1..SER-8 of ``docs/spec.md``.
"""

from .actionstate import (
    JavaActionState,
    JavaCallResult,
    JavaEvent,
    JavaMemoryUpdate,
    deserialize,
    read_action_state,
    serialize,
    write_action_state,
)
from .kryo import JavaValue
from .legacy import read_legacy_020

__all__ = [
    "JavaActionState",
    "JavaCallResult",
    "JavaEvent",
    "JavaMemoryUpdate",
    "JavaValue",
    "deserialize",
    "read_action_state",
    "read_legacy_020",
    "serialize",
    "write_action_state",
]
