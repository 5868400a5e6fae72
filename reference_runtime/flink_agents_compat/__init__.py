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
