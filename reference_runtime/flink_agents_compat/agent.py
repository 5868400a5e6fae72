"""A ``flink_agents`` agent as a :class:`reference_runtime.Agent` (spec FA-1, FA-3, FA-5, FA-9).

The agent is compiled by Flink Agents' own planner (``AgentPlan.from_agent``), as a job compiles it: its
actions are the plan's actions, in the plan's order (``@action`` static methods declared on the agent's
own class, the ``add_action`` actions with their config, then the three built-in actions, which run
their real code), and its resources are the plan's resource providers (:mod:`.resources`).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from typing import Any

from flink_agents.api.agents.agent import Agent as FlinkAgent
from flink_agents.api.resource import ResourceType
from flink_agents.plan.actions.action import Action
from flink_agents.plan.agent_plan import BUILT_IN_ACTIONS, AgentPlan
from flink_agents.plan.configuration import AgentConfiguration
from flink_agents.plan.function import PythonFunction

from ..agent import ActionSpec, Agent
from ..context import RunnerContext
from ..events import Event
from ..records import ActionRef
from .context import FlinkContext, Metrics
from .events import input_data, unwrap
from .resources import AgentResources, CrossLanguageError

_BY_CLASS: dict[type, type[Agent]] = {}
_BY_INSTANCE: weakref.WeakKeyDictionary[FlinkAgent, type[Agent]] = weakref.WeakKeyDictionary()
_BUILTIN_NAMES = frozenset(a.name for a in BUILT_IN_ACTIONS)


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


def _marked(value: Any, marker: str) -> bool:
    # A decorator above @staticmethod marks the staticmethod object, one below it marks the function.
    fn = value.__func__ if isinstance(value, staticmethod) else value
    return bool(getattr(fn, marker, False) or getattr(value, marker, False))


def _without_mcp_servers(agent: FlinkAgent) -> tuple[FlinkAgent, list[str]]:
    """``agent``, or a copy without its MCP servers, and their names. The planner connects to every MCP
    server to list its tools and prompts, which cannot happen in-process; the copy has the same bases (so
    the planner's checks see the same class hierarchy) and everything else of the agent."""
    cls = type(agent)
    declared = [name for name, value in vars(cls).items() if _marked(value, "_is_mcp_server")]
    added = list(agent.resources.get(ResourceType.MCP_SERVER, {}))
    if not declared and not added:
        return agent, []
    namespace = {
        k: v for k, v in vars(cls).items() if k not in declared and k not in ("__dict__", "__weakref__", "_abc_impl")
    }
    metaclass: Any = type(cls)
    copy_cls = metaclass(cls.__name__, cls.__bases__, namespace)
    copy = object.__new__(copy_cls)
    copy._actions = agent.actions
    copy._resources = {t: ({} if t is ResourceType.MCP_SERVER else r) for t, r in agent.resources.items()}
    return copy, declared + added


def compile_plan(agent: FlinkAgent) -> tuple[AgentPlan, list[str]]:
    """Flink Agents' plan of ``agent`` (without its MCP servers) and the names of those servers."""
    planned, mcp_servers = _without_mcp_servers(agent)
    try:
        plan = AgentPlan.from_agent(planned, AgentConfiguration())
    except RuntimeError as exc:
        if "Inherited @action" in str(exc):
            raise TypeError(f"{exc} (Flink Agents' planner refuses it too)") from None
        raise
    except (ImportError, AttributeError) as exc:
        # The planner resolves every action function by module and qualname, as a job does.
        raise TypeError(
            f"{type(agent).__qualname__}: an action function cannot be resolved by module and qualname "
            f"({exc}); define the function at module level"
        ) from None
    return plan, mcp_servers


def _python_callable(action: Action, owner: str) -> Callable[..., Any]:
    exec_ = action.exec
    if not isinstance(exec_, PythonFunction):
        raise CrossLanguageError(
            f"action {action.name!r} of {owner} is a {type(exec_).__name__} (a cross-language action), which "
            "needs the JVM resource adapter of a Flink cluster; only Python actions run in-process"
        )
    try:
        fn: Callable[..., Any] = exec_.as_callable()
        return fn
    except (ImportError, AttributeError) as exc:
        raise TypeError(
            f"action {action.name!r} of {owner}: {exec_.module}.{exec_.qualname} cannot be resolved by module and "
            f"qualname ({exc}); define the function at module level"
        ) from None


class _Env:
    """What every action of one adapted agent shares: its resources and its agent metric group."""

    def __init__(self, resources: AgentResources) -> None:
        self.resources = resources
        self.metrics = Metrics()


def _spec(action: Action, owner: str, env: _Env) -> ActionSpec:
    fn = _python_callable(action, owner)
    config = action.config

    def run(event: Event, ctx: RunnerContext) -> Any:
        resources = env.resources.for_run(ctx.resources, ctx.config)
        base = ctx.settings.event_delivery == "base"
        return fn(unwrap(event, base=base), FlinkContext(ctx, config, resources, env.metrics))

    # The identity Java computes for the user's function (state keys), as for a reference agent.
    ref = ActionRef(action.name, fn.__module__, fn.__qualname__, tuple(action.listen_event_types))
    return ActionSpec(action.name, run, ref, inspect.iscoroutinefunction(fn))


def _build(agent: FlinkAgent) -> type[Agent]:
    cls = type(agent)
    plan, mcp_servers = compile_plan(agent)
    env = _Env(AgentResources(plan, cls.__qualname__, mcp_servers))
    specs = [_spec(action, cls.__qualname__, env) for action in plan.actions.values()]
    actions = [s for s in specs if s.name not in _BUILTIN_NAMES]
    builtins = [s for s in specs if s.name in _BUILTIN_NAMES]

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
            # The runner's hook for inputs: each enters as a cluster hands it to the agent (spec FA-8).
            "_input_data": staticmethod(input_data),
        },
    )
    return adapted
