"""``Agent`` and ``@action``: how a Flink-Agents-style agent is written (RUN-2)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from .builtin_actions import chat_action, tool_call_action
from .context import RunnerContext
from .events import ChatRequestEvent, Event, ToolRequestEvent, ToolResponseEvent, event_type_of
from .records import ActionRef

F = TypeVar("F")

_ACTION_ATTR = "__durable_action_triggers__"


def action(*event_types: str | type[Event]) -> Callable[[F], F]:
    """Mark a static method of an :class:`Agent` as an action triggered by events of these types.

    Works above or below ``@staticmethod``; the method takes ``(event, ctx)`` and may be ``async def``.
    """
    if not event_types:
        raise TypeError("@action needs at least one event type")
    triggers = tuple(event_type_of(t) for t in event_types)

    def mark(fn: F) -> F:
        target = fn.__func__ if isinstance(fn, staticmethod) else fn
        if not callable(target):
            raise TypeError(f"@action decorates functions, not {fn!r}")
        setattr(target, _ACTION_ATTR, triggers)
        return fn

    return mark


@dataclass(frozen=True)
class ActionSpec:
    """One action of an agent: its callable, its identity and whether it is a coroutine function."""

    name: str
    func: Callable[..., Any]
    ref: ActionRef
    is_async: bool

    @property
    def triggers(self) -> tuple[str, ...]:
        return self.ref.triggers


class Agent:
    """Base class of agents. Subclasses declare actions with ``@action`` and may declare ``config``
    (defaults for ``ctx.config``), ``tools`` (name → callable) and ``chat_models`` (name → model)."""

    config: ClassVar[dict[str, Any]] = {}
    _durable_actions: ClassVar[list[ActionSpec] | None] = None
    tools: ClassVar[dict[str, Callable[..., Any]]] = {}
    chat_models: ClassVar[dict[str, Any]] = {}

    @classmethod
    def actions(cls) -> list[ActionSpec]:
        """Actions in definition order (base classes first), the order in which a run triggers them."""
        # Cached per class (every Runner asks); vars(cls), so a subclass never sees its base's cache.
        cached: list[ActionSpec] | None = vars(cls).get("_durable_actions")
        if cached is None:
            cached = cls._find_actions()
            cls._durable_actions = cached
        return list(cached)

    @classmethod
    def _find_actions(cls) -> list[ActionSpec]:
        found: dict[str, ActionSpec] = {}
        for klass in reversed(cls.__mro__):
            for name, raw in vars(klass).items():
                fn = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
                triggers = getattr(fn, _ACTION_ATTR, None)
                if triggers is None:
                    continue
                if not isinstance(raw, staticmethod):
                    raise TypeError(f"action {cls.__name__}.{name} must be a @staticmethod taking (event, ctx)")
                ref = ActionRef(name, fn.__module__, fn.__qualname__, triggers)
                found[name] = ActionSpec(name, fn, ref, inspect.iscoroutinefunction(fn))
        return list(found.values())

    @classmethod
    def builtin_actions(cls) -> list[ActionSpec]:
        """Actions the framework adds for the agent's ``tools`` and ``chat_models``."""
        tools, models = cls.tools, cls.chat_models
        specs: list[ActionSpec] = []
        if tools:

            async def run_tools(event: Event, ctx: RunnerContext) -> None:
                await tool_call_action(event, ctx, tools)

            triggers: tuple[str, ...] = (ToolRequestEvent.TYPE,)
            ref = ActionRef("tool_call_action", tool_call_action.__module__, "tool_call_action", triggers)
            specs.append(ActionSpec("tool_call_action", run_tools, ref, True))
        if models:

            async def run_chat(event: Event, ctx: RunnerContext) -> None:
                await chat_action(event, ctx, models)

            triggers = (ChatRequestEvent.TYPE, ToolResponseEvent.TYPE)
            ref = ActionRef("chat_model_action", chat_action.__module__, "chat_action", triggers)
            specs.append(ActionSpec("chat_model_action", run_chat, ref, True))
        return specs
