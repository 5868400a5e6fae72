"""Flink Agents' local execution environment, over the reference runtime (spec FA-11).

``AgentsExecutionEnvironment.get_execution_environment()`` without a Flink environment gives Flink
Agents' ``LocalExecutionEnvironment``, which runs an agent with its ``LocalRunner``: no durable execution,
no serialization of events, no recovery. :class:`ReferenceExecutionEnvironment` and
:class:`ReferenceLocalRunner` have the same API and run the agent on the reference :class:`Runner`
instead: keyed memory, events carried as a cluster carries them, durable calls. :func:`install` makes Flink
Agents hand them out, so code (and tests) written against the local environment run on the reference
runtime unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from flink_agents.api.agents.agent import Agent as FlinkAgent
from flink_agents.api.events.tool_event import ToolRequestEvent
from flink_agents.api.execution_environment import AgentBuilder, AgentsExecutionEnvironment
from flink_agents.plan.configuration import AgentConfiguration
from flink_agents.runtime.agent_runner import AgentRunner

from ..errors import UnsupportedFeatureError
from ..runner import Runner
from .context import TOOL_REQUESTS
from .events import cluster_value, unwrap

#: How many reference environments and runners were made in this process (the CI lane counts the tests
#: that went through them by it).
made = 0


def _config_data(config: AgentConfiguration | Mapping[str, Any] | None) -> dict[str, Any]:
    if config is None:
        return {}
    if isinstance(config, AgentConfiguration):
        return dict(config.conf_data)
    return dict(config)


class ReferenceLocalRunner(AgentRunner):
    """``LocalRunner``'s API (``run(key=..., value=...)``, ``get_outputs``, ``get_tool_request_events``) over
    one reference :class:`Runner`, so keyed memory lives across ``run`` calls as in ``LocalRunner``.
    ``resources`` and ``runner_options`` go to the :class:`Runner` (fakes, a store, a clock)."""

    def __init__(
        self,
        agent: FlinkAgent,
        config: AgentConfiguration | Mapping[str, Any] | None = None,
        *,
        resources: Mapping[str, Any] | None = None,
        **runner_options: Any,
    ) -> None:
        global made
        made += 1
        self._agent = agent
        self._config = config
        self._resources = resources
        self._options = runner_options
        self._runner: Runner | None = None
        self._keys: dict[str, Any] = {}
        self._outputs: list[dict[Any, Any]] = []
        self._tool_requests: list[ToolRequestEvent] = []
        self._seen = 0

    @property
    def runner(self) -> Runner:
        """The reference runner (built at the first input, when the agent is compiled, as a job would)."""
        if self._runner is None:
            self._runner = Runner(
                self._agent, config=_config_data(self._config), resources=self._resources, **self._options
            )
        return self._runner

    def run(self, **data: Any) -> Any:
        """Process one input record: ``key`` (or ``k``; a new UUID if absent) and ``value`` (or ``v``)."""
        key = data["key"] if "key" in data else data["k"] if "k" in data else uuid.uuid4()
        if "value" in data:
            value = data["value"]
        elif "v" in data:
            value = data["v"]
        else:
            raise RuntimeError("Input data must be dict has 'v' or 'value' field")
        runner = self.runner
        self._keys[str(key)] = key
        token = TOOL_REQUESTS.set(self._record_tool_request)
        try:
            result = runner.run([(str(key), value)])
        finally:
            TOOL_REQUESTS.reset(token)
        emitted = result.emitted[self._seen :]
        self._seen += len(emitted)
        self._outputs.extend({self._keys[e.key]: cluster_value(e.output)} for e in emitted)
        return key

    def _record_tool_request(self, event: Any) -> None:
        self._tool_requests.append(unwrap(event))  # type: ignore[arg-type]

    def get_outputs(self) -> list[dict[Any, Any]]:
        """The outputs so far, ``{key: output}`` each, as a cluster's job emits them (spec FA-8)."""
        return self._outputs

    def get_tool_request_events(self) -> list[ToolRequestEvent]:
        """The ``ToolRequestEvent``s sent so far, in order."""
        return self._tool_requests


class ReferenceAgentBuilder(AgentBuilder):
    """``LocalAgentBuilder``'s API over :class:`ReferenceLocalRunner`."""

    def __init__(self, env: ReferenceExecutionEnvironment, inputs: list[dict[str, Any]]) -> None:
        self._env = env
        self._inputs = inputs
        self._outputs: list[dict[Any, Any]] = []
        self._runner: ReferenceLocalRunner | None = None

    def apply(self, agent: FlinkAgent | str) -> AgentBuilder:
        """Run ``agent`` (or the agent registered under that name, e.g. by ``load_yaml``) on the inputs."""
        if self._runner is not None:
            raise RuntimeError("LocalAgentBuilder doesn't support apply multiple agents.")
        self._runner = self._env.runner_for(self._env.agent(agent))
        self._env._bind(self._inputs, self._outputs, self._runner)
        return self

    def to_list(self) -> list[dict[Any, Any]]:
        """The output list, filled by ``execute``: ``{key: output}`` per output."""
        return self._outputs

    def to_datastream(self) -> Any:
        raise _needs_flink("to_datastream")

    def to_table(self, schema: Any, output_type: Any) -> Any:
        raise _needs_flink("to_table")


def _needs_flink(what: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"{what} needs a Flink job (a DataStream or Table), which does not run in-process; give the inputs "
        "as a list (from_list) or run the agent with reference_runtime.Runner"
    )


class ReferenceExecutionEnvironment(AgentsExecutionEnvironment):
    """``LocalExecutionEnvironment``'s API over the reference runtime (spec FA-11). ``resources`` (fakes by
    name) and ``runner_options`` go to every :class:`ReferenceLocalRunner` it makes."""

    def __init__(self, *, resources: Mapping[str, Any] | None = None, **runner_options: Any) -> None:
        global made
        made += 1
        super().__init__()
        self._config = AgentConfiguration()
        self._supplied = resources
        self._runner_options = runner_options
        self._inputs: list[dict[str, Any]] | None = None
        self._outputs: list[dict[Any, Any]] = []
        self._runner: ReferenceLocalRunner | None = None
        self._executed = False

    def get_config(self, path: str | None = None) -> AgentConfiguration:
        if path is not None:
            self._config.load_from_file(path)
        return self._config

    def agent(self, agent: FlinkAgent | str) -> FlinkAgent:
        """``agent`` (or the agent registered under that name) with the environment's resources added, as
        ``apply`` adds them: usable with ``Runner`` and the durable fixture and markers too."""
        if isinstance(agent, str):
            if agent not in self._agents:
                raise ValueError(
                    f"No agent named {agent!r} is registered on this environment. Did you call load_yaml first?"
                )
            agent = self._agents[agent]
        for kind, by_name in self.resources.items():
            agent.resources[kind] = by_name | agent.resources[kind]
        return agent

    def runner_for(self, agent: FlinkAgent) -> ReferenceLocalRunner:
        """A runner of ``agent`` with this environment's config, resources and runner options."""
        return ReferenceLocalRunner(agent, self._config, resources=self._supplied, **self._runner_options)

    def from_list(self, input: list[dict[str, Any]]) -> ReferenceAgentBuilder:
        """Inputs as ``{"key": k, "value": v}`` records (also ``k``/``v``; the key is optional)."""
        if self._inputs is not None:
            raise RuntimeError("LocalExecutionEnvironment doesn't support call from_list multiple times.")
        self._inputs = input
        return ReferenceAgentBuilder(self, input)

    def _bind(self, inputs: list[dict[str, Any]], outputs: list[dict[Any, Any]], runner: ReferenceLocalRunner) -> None:
        self._inputs, self._outputs, self._runner = inputs, outputs, runner

    def execute(self, job_name: str | None = None) -> None:
        """Run every input through the applied agent, then fill the builder's output list."""
        if self._executed:
            raise RuntimeError("LocalExecutionEnvironment doesn't support execute multiple times.")
        if self._runner is None or self._inputs is None:
            raise RuntimeError("nothing to execute: call from_list(...).apply(agent) first")
        self._executed = True
        for record in self._inputs:
            self._runner.run(**record)
        self._outputs.extend(self._runner.get_outputs())

    def get_tool_request_events(self) -> list[ToolRequestEvent]:
        """The ``ToolRequestEvent``s the applied agent's actions sent, in order."""
        return self._runner.get_tool_request_events() if self._runner is not None else []

    def from_datastream(self, input: Any, key_selector: Any = None) -> AgentBuilder:
        raise _needs_flink("from_datastream")

    def from_table(self, input: Any, key_selector: Any = None) -> AgentBuilder:
        raise _needs_flink("from_table")


def install() -> Callable[[], None]:
    """Make Flink Agents hand out the reference environment and runner: from now on
    ``AgentsExecutionEnvironment.get_execution_environment()`` (without a Flink environment) returns a
    :class:`ReferenceExecutionEnvironment`, and ``flink_agents.runtime.local_runner.LocalRunner`` is
    :class:`ReferenceLocalRunner` for code that imports it afterwards. Returns the function that undoes it."""
    import flink_agents.runtime.local_execution_environment as local_env
    import flink_agents.runtime.local_runner as local_runner

    saved = (local_env.create_instance, local_env.LocalRunner, local_runner.LocalRunner)

    def create_instance(env: Any = None, t_env: Any = None, **kwargs: Any) -> ReferenceExecutionEnvironment:
        return ReferenceExecutionEnvironment()

    local_env.create_instance = create_instance
    local_env.LocalRunner = ReferenceLocalRunner  # type: ignore[misc]
    local_runner.LocalRunner = ReferenceLocalRunner  # type: ignore[misc]

    def uninstall() -> None:
        local_env.create_instance, local_env.LocalRunner, local_runner.LocalRunner = saved

    return uninstall
