"""Run agents written against the real ``flink_agents`` package on the reference runtime (spec FA-*).

Nothing here imports ``flink_agents`` unless the agent handed to the runner already did: an agent class
is recognised as a Flink Agents agent only if ``flink_agents`` is in ``sys.modules``. The adapter turns
the agent into a :class:`reference_runtime.Agent` whose actions call the user's functions with
``flink_agents`` events and a context that is a ``flink_agents`` ``RunnerContext``; calls, memory, events
and recovery are the reference runtime's own.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Protocol

from ..agent import Agent
from ..codecs import CloudpickleCodec
from ..events import Event, register_event_family


class _Outputs(Protocol):
    @property
    def outputs(self) -> Mapping[str, list[Any]]: ...


#: The allow-list of result classes the default codec admits for an adapted agent (spec FA-10): the plain
#: data that Flink Agents' own actions get back from a durable call (chat messages from a chat model,
#: documents from a vector store query, long-term memory items, ``Row`` values of structured output),
#: and nothing that can run code. Everything else stays refused (PAY-3); extend the list with
#: :func:`flink_payload_codec`.
FLINK_PAYLOAD_CLASSES = frozenset(
    {
        "flink_agents.api.chat_message.ChatMessage",
        "flink_agents.api.chat_message.MessageRole",
        # The type of a tool call a chat message carries (``{"type": ToolType.FUNCTION, ...}``).
        "flink_agents.api.tools.tool.ToolType",
        "flink_agents.api.vector_stores.vector_store.Document",
        "flink_agents.api.vector_stores.vector_store.VectorStoreQueryResult",
        "flink_agents.api.memory.long_term_memory.MemorySetItem",
        # A pyflink Row pickles as a call of this factory with its field names, values and kind.
        "pyflink.common.types._create_row",
        "pyflink.common.types.RowKind",
    }
)


def flink_payload_codec(*extra: str | type, **options: Any) -> CloudpickleCodec:
    """The runtime's restricted codec admitting :data:`FLINK_PAYLOAD_CLASSES` and ``extra`` classes (given
    as classes or ``"module.qualname"`` strings): pass it as ``Runner(codec=...)`` (or as the ``codec``
    option of the durable fixture and markers) for an agent whose durable calls return other classes.
    ``options`` go to :class:`~reference_runtime.codecs.CloudpickleCodec` (``hmac_key``, ``limits``)."""
    names = {e if isinstance(e, str) else f"{e.__module__}.{e.__qualname__}" for e in extra}
    return CloudpickleCodec(allowed_classes=FLINK_PAYLOAD_CLASSES | names, **options)


def cluster_outputs(result: _Outputs) -> dict[str, list[Any]]:
    """``result.outputs`` as a Flink job's output stream carries them: each output's JSON data rebuilt as
    a cluster rebuilds it (a ``Row`` comes back as a ``pyflink`` ``Row``; a pydantic model stays its dict)."""
    from .events import cluster_value

    return {key: [cluster_value(v) for v in values] for key, values in result.outputs.items()}


def is_flink_agent(obj: Any) -> bool:
    """Whether ``obj`` is a subclass or an instance of ``flink_agents.api.agents.agent.Agent``."""
    module = sys.modules.get("flink_agents.api.agents.agent")
    if module is None:
        return False
    base = module.Agent
    return isinstance(obj, base) or (isinstance(obj, type) and issubclass(obj, base))


def is_agent(obj: Any) -> bool:
    """Whether the runner accepts ``obj`` as an agent: a ``reference_runtime.Agent`` subclass, or a
    ``flink_agents`` agent class or instance."""
    return (isinstance(obj, type) and issubclass(obj, Agent)) or is_flink_agent(obj)


def _is_flink_event_class(cls: type) -> bool:
    module = sys.modules.get("flink_agents.api.events.event")
    return module is not None and issubclass(cls, module.Event)


def _rebuild_flink_event(cls: Any, base: Event, fields: dict[str, Any]) -> Event:
    from .events import rebuild_stored

    return rebuild_stored(cls, base, fields)


# Stores rebuild flink_agents events through this family (spec EVT-1). It is registered when this package
# is imported, which ``reference_runtime`` does, so the runtime's event module never imports the adapter;
# a record can only name a flink_agents class once flink_agents is imported (EVT-3), hence sys.modules.
register_event_family(_is_flink_event_class, _rebuild_flink_event)


def runtime_agent(obj: Any) -> type[Agent]:
    """The :class:`reference_runtime.Agent` class the runner drives for ``obj`` (itself if it is one)."""
    if isinstance(obj, type) and issubclass(obj, Agent):
        return obj
    if is_flink_agent(obj):
        from .agent import adapt

        return adapt(obj)
    raise TypeError(
        f"expected a reference_runtime.Agent subclass or a flink_agents Agent (class or instance), got {obj!r}"
    )


__all__ = [
    "FLINK_PAYLOAD_CLASSES",
    "cluster_outputs",
    "flink_payload_codec",
    "is_agent",
    "is_flink_agent",
    "runtime_agent",
]
