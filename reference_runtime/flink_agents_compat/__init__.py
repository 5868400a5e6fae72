"""Run agents written against the real ``flink_agents`` package on the reference runtime (spec FA-*).

Nothing here imports ``flink_agents`` unless the agent handed to the runner already did: an agent class
is recognised as a Flink Agents agent only if ``flink_agents`` is in ``sys.modules``. The adapter turns
the agent into a :class:`reference_runtime.Agent` whose actions call the user's functions with
``flink_agents`` events and a context that is a ``flink_agents`` ``RunnerContext``; calls, memory, events
and recovery are the reference runtime's own.
"""

from __future__ import annotations

import sys
from typing import Any

from ..agent import Agent
from ..events import Event, register_event_family

#: Payload classes of flink_agents that the default codec admits for an adapted agent: plain data
#: models a chat model returns (spec PAY-3 still holds for everything else).
FLINK_PAYLOAD_CLASSES = frozenset(
    {
        "flink_agents.api.chat_message.ChatMessage",
        "flink_agents.api.chat_message.MessageRole",
    }
)


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


__all__ = ["FLINK_PAYLOAD_CLASSES", "is_agent", "is_flink_agent", "runtime_agent"]
