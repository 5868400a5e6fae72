"""A ReAct agent written only against flink_agents 0.3.1: the chat model (declared as on a cluster, an
Ollama setup over an Ollama connection) asks for a tool; the built-in chat and tool actions run the loop;
the answer is the output."""

from __future__ import annotations

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, chat_model_connection, chat_model_setup, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.api.runner_context import RunnerContext

FORECASTS: list[str] = []  # the "weather service": every call is remembered


class WeatherAgent(Agent):
    @chat_model_connection
    @staticmethod
    def ollama() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_CONNECTION)

    @chat_model_setup
    @staticmethod
    def assistant() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.ChatModel.OLLAMA_SETUP,
            connection="ollama",
            model="qwen3:8b",
            tools=["forecast"],
        )

    @tool
    @staticmethod
    def forecast(city: str) -> str:
        """The weather forecast of a city."""
        FORECASTS.append(city)
        return f"sunny in {city}"

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        question = ChatMessage(role=MessageRole.USER, content=str(InputEvent.from_event(event).input))
        ctx.send_event(ChatRequestEvent(model="assistant", messages=[question]))

    @action(ChatResponseEvent.EVENT_TYPE)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        reply = ChatResponseEvent.from_event(event).response
        ctx.short_term_memory.set("last_answer", reply.content)
        ctx.send_event(OutputEvent(output=reply.content))
