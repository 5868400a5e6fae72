"""Resources of a flink_agents agent are built as Flink Agents builds them, and what cannot be built
in-process is one clear error (spec FA-9, FA-5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.decorators import action, chat_model_connection, chat_model_setup, mcp_server, prompt, skills
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceName, ResourceType
from flink_agents.api.resource_context import ResourceContext
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.skills import Skills
from flink_agents.api.tools.tool import Tool
from flink_agents.examples.rag.rag_agent_example import MyRAGAgent

from reference_runtime import ActionFailedError, Runner
from reference_runtime.errors import UnsupportedFeatureError
from reference_runtime.flink_agents_compat.local import ReferenceExecutionEnvironment
from reference_runtime.flink_agents_compat.resources import CrossLanguageError, ResourceNotFoundError

from .example_fakes import FakeConnection, reply, tool_call


class CountingConnection(BaseChatModelConnection):
    """A pure-Python connection an agent declares by class path: every construction and `open` counted."""

    built: ClassVar[list[CountingConnection]] = []
    opened: ClassVar[int] = 0
    greeting: str = "hello"

    def model_post_init(self, context: Any) -> None:
        CountingConnection.built.append(self)

    def open(self) -> None:
        CountingConnection.opened += 1

    def chat(self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any) -> ChatMessage:
        return reply(
            f"{self.greeting} {messages[-1].content} ({kwargs['model']}, context={self.resource_context is not None})"
        )


class DeclaredModels(Agent):
    @chat_model_connection
    @staticmethod
    def local() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=f"{__name__}.CountingConnection", greeting="hi")

    @chat_model_setup
    @staticmethod
    def assistant() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_SETUP, connection="local", model="m1")

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        question = ChatMessage(role=MessageRole.USER, content=str(InputEvent.from_event(event).input))
        ctx.send_event(ChatRequestEvent(model="assistant", messages=[question]))

    @action(ChatResponseEvent.EVENT_TYPE)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=ChatResponseEvent.from_event(event).response.content))


def test_a_declared_pure_python_resource_is_built_with_its_context_once_per_runner() -> None:
    """FA-9: a resource class named by `ResourceDescriptor(clazz=...)` is constructed with the descriptor's
    arguments and a `resource_context`, opened once, and cached for the runner's life (a second runner
    builds its own); the declared Ollama setup is built too and finds the connection through the context."""
    CountingConnection.built.clear()
    CountingConnection.opened = 0
    result = Runner(DeclaredModels).run([("a", "x"), ("b", "y")])
    assert result.outputs == {"a": ["hi x (m1, context=True)"], "b": ["hi y (m1, context=True)"]}
    assert (len(CountingConnection.built), CountingConnection.opened) == (1, 1)
    Runner(DeclaredModels).run([("a", "z")])
    assert (len(CountingConnection.built), CountingConnection.opened) == (2, 2)


class EchoSetup(BaseChatModelSetup):
    """A fake setup a test supplies: answers with whether it got a resource context."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        return {}

    def chat(self, messages: Sequence[ChatMessage], prompt_args: Any = None, **kwargs: Any) -> ChatMessage:
        return reply(f"context={self.resource_context is not None}")


def test_a_supplied_resource_gets_a_resource_context_and_wins_over_the_declared_one() -> None:
    """FA-9: a resource supplied under a declared name is used instead, and is given the run's resource
    context as a cluster gives every resource (it is not opened: the test built it ready to use)."""
    fake = EchoSetup(connection="unused", model="unused")
    result = Runner(DeclaredModels, resources={"assistant": fake}).run([("a", "x")])
    assert result.outputs == {"a": ["context=True"]}
    assert CountingConnection.built == [] or all(c.greeting == "hi" for c in CountingConnection.built)


def test_a_fake_supplied_to_several_runners_gets_the_context_of_each_run() -> None:
    """FA-9: a fake shared by the runners of a sweep resolves through the current run's resources, never
    an earlier runner's; a context the test set itself is left alone."""
    fake = EchoSetup(connection="unused", model="unused")
    Runner(DeclaredModels, resources={"assistant": fake}).run([("a", "x")])
    first = fake.resource_context
    Runner(DeclaredModels, resources={"assistant": fake}).run([("a", "x")])
    assert first is not None and fake.resource_context is not None and fake.resource_context is not first
    mine = TestContext()
    own = EchoSetup(connection="unused", model="unused", resource_context=mine)
    Runner(DeclaredModels, resources={"assistant": own}).run([("a", "x")])
    assert own.resource_context is mine


class TestContext(ResourceContext):
    """A resource context of the test's own."""

    __test__ = False

    def get_resource(self, name: str, resource_type: ResourceType) -> Any:
        raise KeyError(name)

    def generate_available_skills_prompt(self, *skill_names: str) -> str:
        return ""

    def get_skill_dirs(self, *skill_names: str) -> list[str]:
        return []


class OptionalPrompt(Agent):
    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def greet(event: Event, ctx: RunnerContext) -> None:
        try:
            template = ctx.get_resource("greeting", ResourceType.PROMPT)
        except KeyError:
            template = None
        ctx.send_event(OutputEvent(output="custom" if template is not None else "default"))


def test_a_missing_resource_is_the_key_error_flink_agents_raises() -> None:
    """FA-9: a resource neither declared nor supplied raises a KeyError, as on a cluster, so an agent that
    treats a resource as optional (as ReActAgent does with its prompts) takes its fallback."""
    assert Runner(OptionalPrompt).run([("k", 1)]).outputs == {"k": ["default"]}
    supplied = Prompt.from_text("Hi {name}")
    assert Runner(OptionalPrompt, resources={"greeting": supplied}).run([("k", 1)]).outputs == {"k": ["custom"]}


def test_the_missing_resource_error_names_the_resource_and_the_hook() -> None:
    """FA-9: uncaught, it names the resource, its type, the agent and how a test supplies it, located: here
    the connection the declared chat model setup opens, which the job would add to its environment."""
    with pytest.raises(ActionFailedError) as info:
        Runner(UnknownTool).run([("a", "x")])
    assert isinstance(info.value.__cause__, ResourceNotFoundError)
    assert isinstance(info.value.__cause__, KeyError)
    text = str(info.value)
    assert "Resource not found: 'conn' of type ResourceType.CHAT_MODEL_CONNECTION" in text
    assert "UnknownTool does not declare it" in text and "resources={'conn': fake}" in text and "key='a'" in text


class UnknownTool(Agent):
    @chat_model_setup
    @staticmethod
    def assistant() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_SETUP, connection="conn", model="m")

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent(model="assistant", messages=[ChatMessage(role=MessageRole.USER, content="go")]))

    @action(ChatResponseEvent.EVENT_TYPE)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=ChatResponseEvent.from_event(event).response.content))


def test_a_tool_the_agent_does_not_have_fails_the_tool_action_as_on_a_cluster() -> None:
    """FA-9: a model asking for a tool the agent does not have makes the built-in tool action fail with
    Flink Agents' KeyError (not a silent "Tool does not exist" answer), located at the tool action."""
    conn = FakeConnection.answering(lambda messages, tools: tool_call("c1", "weather", {"city": "Oslo"}))
    with pytest.raises(ActionFailedError, match=r"Resource not found: 'weather'.*action='tool_call_action'"):
        Runner(UnknownTool, resources={"conn": conn}).run([("k", 1)])


def forecast(city: str) -> str:
    """The forecast of a city.

    Parameters
    ----------
    city : str
        The city.
    """
    return f"sunny in {city}"


def test_environment_resources_and_tools_from_callables_resolve_as_on_a_cluster() -> None:
    """FA-9, FA-11: resources added to the environment (a connection descriptor, a `Tool.from_callable`)
    reach the agent as `apply` adds them; the tool is the planner's executable tool, with `call`."""
    env = ReferenceExecutionEnvironment()
    env.add_resource(
        "conn", ResourceType.CHAT_MODEL_CONNECTION, ResourceDescriptor(clazz=f"{__name__}.CountingConnection")
    )
    env.add_resource("weather", ResourceType.TOOL, Tool.from_callable(forecast))
    answers = iter([tool_call("c1", "weather", {"city": "Oslo"}), reply("done")])
    conn = FakeConnection.answering(lambda messages, tools: next(answers))
    agent = env.agent(UnknownTool())
    result = Runner(agent, resources={"conn": conn}).run([("k", 1)])
    assert result.outputs == {"k": ["done"]}
    assert conn.calls[-1][:2] == ("tool", "sunny in Oslo")


class JavaModel(Agent):
    @chat_model_connection
    @staticmethod
    def java_conn() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.ChatModel.JAVA_WRAPPER_CONNECTION,
            java_clazz="org.apache.flink.agents.integrations.chatmodels.ollama.OllamaChatModelConnection",
        )

    @chat_model_setup
    @staticmethod
    def assistant() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_SETUP, connection="java_conn", model="m")

    ask = UnknownTool.__dict__["ask"]
    answer = UnknownTool.__dict__["answer"]


def test_a_java_resource_is_refused_as_cross_language() -> None:
    """FA-5, FA-9: a Java resource needs a Flink cluster's JVM: one CrossLanguageError naming it."""
    with pytest.raises(CrossLanguageError, match=r"resource 'java_conn' \(chat_model_connection\).*Java resource"):
        Runner(JavaModel).run([("k", 1)])


def test_a_shipped_vector_store_is_refused_unless_faked() -> None:
    """FA-5: the RAG example's Chroma store is a real service: refused, naming it and the hook."""
    with pytest.raises(
        UnsupportedFeatureError, match=r"'knowledge_base' \(vector_store\).*ChromaVectorStore.*resources="
    ):
        Runner(MyRAGAgent).run([("k", "What is Flink?")])


class WithMcp(Agent):
    @mcp_server
    @staticmethod
    def docs() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=ResourceName.MCP_SERVER, endpoint="http://127.0.0.1:1/mcp")

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def use(event: Event, ctx: RunnerContext) -> None:
        name = str(InputEvent.from_event(event).input)
        kind = ResourceType.MCP_SERVER if name == "docs" else ResourceType.TOOL
        ctx.send_event(OutputEvent(output=type(ctx.get_resource(name, kind)).__name__))


def test_an_mcp_server_is_never_contacted_and_its_tools_can_be_supplied() -> None:
    """FA-5, FA-9: the agent is planned without connecting to its MCP server; the server, or a tool that may
    be one of its tools, is one UnsupportedFeatureError naming the server and the hook; a tool supplied
    under its name is used."""
    with pytest.raises(UnsupportedFeatureError, match=r"MCP server 'docs' of WithMcp"):
        Runner(WithMcp).run([("k", "docs")])
    with pytest.raises(UnsupportedFeatureError, match=r"no tool 'search'.*MCP server\(s\) 'docs'"):
        Runner(WithMcp).run([("k", "search")])
    supplied = Tool.from_callable(forecast)
    assert Runner(WithMcp, resources={"search": supplied}).run([("k", "search")]).outputs == {"k": ["FunctionTool"]}


class SkillsAgent(Agent):
    @skills
    @staticmethod
    def my_skills() -> Skills:
        return Skills.from_package(("flink_agents.examples.quickstart", "resources/skills"))

    @prompt
    @staticmethod
    def unused() -> Prompt:
        return Prompt.from_text("x")

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def tools(event: Event, ctx: RunnerContext) -> None:
        loaded = ctx.get_resource("load_skill", ResourceType.TOOL).call(name="math-calculator")
        bash = type(ctx.get_resource("bash", ResourceType.TOOL)).__name__
        ctx.send_event(OutputEvent(output=[bash, loaded.startswith('<skill_content name="math-calculator">')]))


def test_skills_bring_flink_agents_built_in_skill_tools() -> None:
    """FA-9: `@skills` registers the framework's `load_skill` and `bash` tools, as Flink Agents does."""
    result = Runner(SkillsAgent).run([("k", 1)])
    assert result.outputs == {"k": [["BashTool", True]]}
