"""A ``flink_agents`` agent as a :class:`reference_runtime.Agent` (spec FA-1, FA-3, FA-5).

Actions are found as Flink Agents' planner finds them: ``@action`` static methods declared on the agent's
own class, then the actions added with ``add_action`` on the instance; the three built-in actions of
Flink Agents (tool calls, chat, context retrieval) follow, running their real code on the adapted context.
"""

from __future__ import annotations

import importlib
import inspect
import weakref
from collections.abc import Callable
from typing import Any

from flink_agents.api.agents.agent import Agent as FlinkAgent
from flink_agents.api.function import PythonFunction as ApiPythonFunction
from flink_agents.api.resource import ResourceType

from ..agent import ActionSpec, Agent
from ..context import RunnerContext
from ..errors import UnsupportedFeatureError
from ..events import Event
from ..records import ActionRef
from .context import _HOOK, FlinkContext, Metrics
from .events import unwrap

_BY_CLASS: dict[type, type[Agent]] = {}
_BY_INSTANCE: weakref.WeakKeyDictionary[FlinkAgent, type[Agent]] = weakref.WeakKeyDictionary()
#: Resource kinds declared by decorator (a descriptor of a real model, store or server).
_DECLARED = (
    "_is_chat_model_setup",
    "_is_chat_model_connection",
    "_is_embedding_model_setup",
    "_is_embedding_model_connection",
    "_is_vector_store",
    "_is_mcp_server",
    "_is_skills",
)


def adapt(agent: type[FlinkAgent] | FlinkAgent) -> type[Agent]:
    """The runtime agent class for a ``flink_agents`` agent class (instantiated with no arguments, as
    Flink Agents users do) or instance (for agents built with ``add_action`` / ``add_resource``)."""
    if isinstance(agent, type):
        cached = _BY_CLASS.get(agent)
        if cached is None:
            cached = _BY_CLASS[agent] = _build(agent())
        return cached
    cached = _BY_INSTANCE.get(agent)
    if cached is None:
        cached = _BY_INSTANCE[agent] = _build(agent)
    return cached


def _marker(value: Any) -> tuple[Callable[..., Any], tuple[Any, ...]] | None:
    inner = value.__func__ if isinstance(value, staticmethod) else value
    if not callable(inner):
        return None
    for candidate in (value, inner):
        events = getattr(candidate, "_listen_events", None)
        if events is not None:
            return inner, tuple(events)
    return None


def _event_type(spec: Any, where: str) -> str:
    if isinstance(spec, str) and spec:
        return spec
    event_type = getattr(spec, "EVENT_TYPE", None)
    if isinstance(spec, type) and isinstance(event_type, str):
        return event_type  # the event classes older Flink Agents releases accepted
    raise TypeError(f"{where}: an action listens to event type strings, got {spec!r}")


def _callable(function: Any, where: str) -> Callable[..., Any]:
    if callable(function) and not isinstance(function, ApiPythonFunction):
        return function  # type: ignore[no-any-return]
    if isinstance(function, ApiPythonFunction):
        # Flink Agents resolves an added action by module and qualname, in the job; so does the adapter.
        try:
            target: Any = importlib.import_module(function.module)
            for part in function.qualname.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise TypeError(
                f"{where}: {function.module}.{function.qualname} cannot be resolved by module and "
                f"qualname ({exc}); define the function at module level"
            ) from None
        return target  # type: ignore[no-any-return]
    raise UnsupportedFeatureError(
        f"{where}: {type(function).__name__} actions (cross-language functions) "
        "cannot run in-process; only Python actions can"
    )


def _specs(agent: FlinkAgent, env: _Env) -> list[ActionSpec]:
    cls = type(agent)
    for parent in cls.__mro__[1:]:
        if parent is FlinkAgent or parent is object:
            break
        for name, value in vars(parent).items():
            if _marker(value) is not None:
                raise TypeError(
                    f"inherited @action {parent.__qualname__}.{name} is not supported by Flink Agents; "
                    "declare it on the concrete agent"
                )
    specs: list[ActionSpec] = []
    for name, value in vars(cls).items():
        found = _marker(value)
        if found is None:
            continue
        if getattr(value, "_target", None) is not None or getattr(found[0], "_target", None) is not None:
            raise UnsupportedFeatureError(
                f"action {cls.__qualname__}.{name} targets a cross-language function, which cannot run in-process"
            )
        fn, events = found
        specs.append(_spec(name, fn, [_event_type(e, f"{cls.__qualname__}.{name}") for e in events], None, env))
    for name, (events, function, config) in agent.actions.items():
        fn = _callable(function, f"action {name!r}")
        specs.append(_spec(name, fn, [_event_type(e, f"action {name!r}") for e in events], config, env))
    return specs


def _builtin_specs(env: _Env) -> list[ActionSpec]:
    from flink_agents.plan.actions.chat_model_action import CHAT_MODEL_ACTION
    from flink_agents.plan.actions.context_retrieval_action import CONTEXT_RETRIEVAL_ACTION
    from flink_agents.plan.actions.tool_call_action import TOOL_CALL_ACTION

    specs = []
    for builtin in (CHAT_MODEL_ACTION, TOOL_CALL_ACTION, CONTEXT_RETRIEVAL_ACTION):
        fn = _callable(ApiPythonFunction(module=builtin.exec.module, qualname=builtin.exec.qualname), builtin.name)
        specs.append(_spec(builtin.name, fn, list(builtin.listen_event_types), builtin.config, env))
    return specs


class _Env:
    """What every action of one adapted agent shares: its resources and its agent metric group."""

    def __init__(self, agent: FlinkAgent) -> None:
        self.resources = _Resources(agent)
        self.metrics = Metrics()


def _spec(
    name: str, fn: Callable[..., Any], triggers: list[str], config: dict[str, Any] | None, env: _Env
) -> ActionSpec:
    def run(event: Event, ctx: RunnerContext) -> Any:
        def resolve(resource: str, kind: ResourceType) -> Any:
            return env.resources.get(resource, kind, ctx)

        base = ctx.settings.event_delivery == "base"
        return fn(unwrap(event, base=base), FlinkContext(ctx, config, resolve, env.metrics))

    # The identity Java computes for the user's function (state keys), as for a reference agent.
    ref = ActionRef(name, fn.__module__, fn.__qualname__, tuple(triggers))
    return ActionSpec(name, run, ref, inspect.iscoroutinefunction(fn))


def _build(agent: FlinkAgent) -> type[Agent]:
    cls = type(agent)
    env = _Env(agent)
    actions = _specs(agent, env)
    builtins = _builtin_specs(env)

    def own_actions(_: type[Agent]) -> list[ActionSpec]:
        return list(actions)

    def builtin_actions(_: type[Agent]) -> list[ActionSpec]:
        return list(builtins)

    adapted = type(
        cls.__name__,
        (Agent,),
        {
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
            "config": {},
            "flink_agent": agent,
            "actions": classmethod(own_actions),
            "builtin_actions": classmethod(builtin_actions),
        },
    )
    return adapted


def _marked(value: Any, markers: tuple[str, ...]) -> bool:
    # A decorator above @staticmethod marks the staticmethod object, one below it marks the function.
    fn = value.__func__ if isinstance(value, staticmethod) else value
    return any(getattr(fn, m, False) or getattr(value, m, False) for m in markers)


class _Resources:
    """Resolves ``ctx.get_resource``: the test's ``resources`` map first, then what the agent declares.
    Tools and prompts are plain Python and resolve as on a cluster; a model, store or server does not run
    in-process and is refused with the hook to supply a fake (spec FA-5)."""

    def __init__(self, agent: FlinkAgent) -> None:
        self.agent = agent
        self.tools: dict[str, Any] = {}

    def get(self, name: str, kind: ResourceType, ctx: RunnerContext) -> Any:
        supplied = ctx.resources.get(name)
        if supplied is not None:
            return supplied
        cls = type(self.agent)
        declared = vars(cls).get(name)
        registered = self.agent.resources.get(kind, {}).get(name)
        if kind is ResourceType.TOOL and declared is not None and _marked(declared, ("_is_tool",)):
            return self._tool(name, declared)
        if kind is ResourceType.TOOL and registered is not None:
            return self._tool(name, registered)
        if kind is ResourceType.PROMPT and declared is not None and _marked(declared, ("_is_prompt",)):
            return (declared.__func__ if isinstance(declared, staticmethod) else declared)()
        if kind is ResourceType.PROMPT and registered is not None:
            return registered
        if registered is not None or (declared is not None and _marked(declared, _DECLARED)):
            raise UnsupportedFeatureError(
                f"resource {name!r} ({kind.value}) of {cls.__qualname__} is backed by a "
                f"real service, which does not run in-process; {_HOOK}"
            )
        if kind is ResourceType.TOOL:
            return None  # the built-in tool action answers "Tool `name` does not exist.", as on a cluster
        raise UnsupportedFeatureError(
            f"no resource {name!r} of type {kind.value} is declared by "
            f"{cls.__qualname__} or supplied by the test; {_HOOK}"
        )

    def _tool(self, name: str, declared: Any) -> Any:
        tool = self.tools.get(name)
        if tool is None:
            from flink_agents.api.tools.tool import Tool
            from flink_agents.plan.function import PythonFunction
            from flink_agents.plan.tools.function_tool import FunctionTool

            if isinstance(declared, staticmethod):
                declared = declared.__func__
            api_tool = declared if hasattr(declared, "func") else Tool.from_callable(func=declared)
            # The planner's executable tool, so a tool call has the function id it has on a cluster.
            tool = FunctionTool(func=PythonFunction(module=api_tool.func.module, qualname=api_tool.func.qualname))
            self.tools[name] = tool
        return tool
