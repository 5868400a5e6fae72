"""Resources of a ``flink_agents`` agent, built as Flink Agents builds them (spec FA-5, FA-9).

The agent's plan (``flink_agents.plan.agent_plan.AgentPlan``, built by Flink Agents' own planner) names a
provider for every resource: decorated ones, ``add_resource`` ones (on the agent or merged in from the
environment), the built-in skill tools of ``@skills``, tools made with ``Tool.from_callable``. A run
resolves ``get_resource`` through a ``flink_agents`` ``ResourceCache`` over those providers, so a
resource is constructed with its ``resource_context`` and opened once, and a chat model setup finds its
connection, prompt and tools through that context, exactly as on a cluster. Two things differ, each
loudly: a resource the test supplies (``Runner(resources={name: fake})``) is used first under its name,
and a resource backed by a real service that the test did not supply is refused with
:class:`UnsupportedFeatureError` naming the resource and the hook.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from flink_agents.api.resource import Resource, ResourceType
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.plan.configuration import AgentConfiguration
from flink_agents.plan.resource_provider import JavaResourceProvider, PythonResourceProvider, ResourceProvider
from flink_agents.runtime.resource_cache import ResourceCache

from ..errors import UnsupportedFeatureError

#: How a test supplies a resource instead (the runner option, also an option of the durable fixture/markers).
HOOK = "pass a fake as Runner(resources={name: fake}) (also a runner option of the durable fixture and markers)"

#: The Flink Agents package's own integrations: a connection, vector store or MCP server among them talks
#: to a real service (Ollama, OpenAI, Chroma, mem0, ...). Their setups are configuration and are built.
_INTEGRATIONS = "flink_agents.integrations."

#: A run's resources stay cached while its runner lives; this many runners' caches are kept at once.
_RUNS_KEPT = 8

#: The resource contexts of runs: a supplied resource holding one of these (from an earlier runner it was
#: supplied to) gets the current run's instead.
_RUN_CONTEXTS: weakref.WeakSet[Any] = weakref.WeakSet()


class ResourceNotFoundError(KeyError):
    """A resource the agent neither declares nor the test supplies. A ``KeyError``, as Flink Agents raises
    for a missing resource (agents rely on it, e.g. ``ReActAgent`` for its optional prompts)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CrossLanguageError(UnsupportedFeatureError, RuntimeError):
    """A Java action, function or resource: it needs the JVM of a Flink cluster. Also a ``RuntimeError``,
    which Flink Agents raises when a Java function runs without its JVM bridge."""


def _service_kinds() -> tuple[type, ...]:
    from flink_agents.api.chat_models.chat_model import BaseChatModelConnection
    from flink_agents.api.embedding_models.embedding_model import BaseEmbeddingModelConnection
    from flink_agents.api.vector_stores.vector_store import BaseVectorStore

    return (BaseChatModelConnection, BaseEmbeddingModelConnection, BaseVectorStore)


def service_backed(cls: type) -> bool:
    """Whether instances of ``cls`` talk to a real service: a connection or vector store of Flink Agents'
    own integrations (a user's pure-Python class of the same kind is built and run as on a cluster)."""
    return cls.__module__.startswith(_INTEGRATIONS) and issubclass(cls, _service_kinds())


class AgentResources:
    """The resource providers of one adapted agent and the caches of the runs that use them."""

    def __init__(self, plan: AgentPlan, owner: str, mcp_servers: list[str]) -> None:
        self.providers: dict[ResourceType, dict[str, ResourceProvider]] = plan.resource_providers or {}
        self.owner = owner
        #: MCP servers the agent declares: their tools and prompts are listed from the server, which the
        #: plan (built without them) cannot do in-process.
        self.mcp_servers = mcp_servers
        self._runs: OrderedDict[int, tuple[Mapping[str, Any], RunResources]] = OrderedDict()

    def for_run(self, supplied: Mapping[str, Any], config: Mapping[str, Any]) -> RunResources:
        """The resources of the run whose runner holds ``supplied`` (its ``resources`` map, one object per
        runner): built once per runner, as a cluster builds them once per operator."""
        entry = self._runs.get(id(supplied))
        if entry is not None and entry[0] is supplied:
            self._runs.move_to_end(id(supplied))
            return entry[1]
        run = RunResources(self, supplied, AgentConfiguration(conf_data=dict(config)))
        # The map is held with its cache, so its id cannot be reused by another runner's map meanwhile.
        self._runs[id(supplied)] = (supplied, run)
        while len(self._runs) > _RUNS_KEPT:
            self._runs.popitem(last=False)
        return run


class RunResources(ResourceCache):
    """``get_resource`` of one run: the test's resources first, then the plan's providers through Flink
    Agents' own ``ResourceCache`` (construction, ``resource_context``, ``open``, caching)."""

    def __init__(self, agent: AgentResources, supplied: Mapping[str, Any], config: AgentConfiguration) -> None:
        super().__init__(agent.providers, config)
        self._agent = agent
        self._supplied = supplied
        _RUN_CONTEXTS.add(self.get_resource_context())

    def get_resource(self, name: str, type: ResourceType) -> Resource:
        supplied = self._supplied.get(name)
        if supplied is not None:
            # As a cluster gives every resource it deserialises its context; a supplied object is
            # otherwise used as given (not opened: the test built it ready to use).
            if isinstance(supplied, Resource):
                held = supplied.resource_context
                if held is None or (held in _RUN_CONTEXTS and held is not self.get_resource_context()):
                    supplied.resource_context = self.get_resource_context()
            return supplied  # type: ignore[no-any-return]
        provider = self._resource_providers.get(type, {}).get(name)
        if provider is None:
            raise self._missing(name, type)
        if isinstance(provider, JavaResourceProvider):
            raise CrossLanguageError(
                f"resource {name!r} ({type.value}) of {self._agent.owner} is a Java resource, which needs the "
                f"JVM of a Flink cluster; {HOOK}"
            )
        if isinstance(provider, PythonResourceProvider) and service_backed(provider.descriptor.clazz):
            cls = provider.descriptor.clazz
            raise UnsupportedFeatureError(
                f"resource {name!r} ({type.value}) of {self._agent.owner} is a {cls.__qualname__}, backed by a "
                f"real service, which does not run in-process; {HOOK}"
            )
        return super().get_resource(name, type)

    def _missing(self, name: str, type: ResourceType) -> Exception:
        if type is ResourceType.MCP_SERVER and name in self._agent.mcp_servers:
            return UnsupportedFeatureError(
                f"MCP server {name!r} of {self._agent.owner} is a real service, which does not run in-process; {HOOK}"
            )
        if self._agent.mcp_servers and type in (ResourceType.TOOL, ResourceType.PROMPT):
            servers = ", ".join(repr(s) for s in self._agent.mcp_servers)
            return UnsupportedFeatureError(
                f"no {type.value} {name!r} is declared by {self._agent.owner}; it may be one of those of its MCP "
                f"server(s) {servers}, which cannot be listed in-process; {HOOK.replace('name', repr(name))}"
            )
        # Flink Agents' own message and type (a KeyError), with the fix for a test.
        return ResourceNotFoundError(
            f"Resource not found: {name!r} of type {type}: {self._agent.owner} does not declare it and the test "
            f"does not supply it (a resource the job adds to its environment is not part of the agent); "
            f"{HOOK.replace('name', repr(name))}"
        )
