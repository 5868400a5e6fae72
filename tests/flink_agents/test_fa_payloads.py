"""What crosses the runtime's boundaries for a flink_agents agent: results through the restricted codec's
allow-list (spec FA-10), events and inputs as a cluster's JSON (FA-8)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.examples.rag.rag_agent_example import MyRAGAgent
from pydantic import BaseModel

from reference_runtime import CrashAt, FaultInjector, Phase, Runner
from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.durable import ResultEncodeError
from reference_runtime.errors import InvalidValueError, UntrustedPayloadError
from reference_runtime.flink_agents_compat import FLINK_PAYLOAD_CLASSES, flink_payload_codec
from reference_runtime.flink_agents_compat.events import check_schema_modules, unwrap, wrap

from .shipped_examples import EXAMPLES

RAG = next(e for e in EXAMPLES if e.name == "rag")
#: A crash right after the vector store query's record: recovery must read the query result back.
AFTER_QUERY = FaultInjector([CrashAt(Phase.AFTER_RECORD, key="001", action="context_retrieval_action", call_index=0)])


def test_a_vector_store_result_replays_through_the_allow_list() -> None:
    """FA-10: the RAG agent's query result (VectorStoreQueryResult of Documents) is recorded and read back
    by the default codec of a flink_agents agent; the store is not queried again."""
    resources = RAG.fakes()
    injector = FaultInjector([CrashAt(Phase.AFTER_RECORD, key="001", action="context_retrieval_action", call_index=0)])
    result = Runner(MyRAGAgent, resources=resources, injector=injector).run(RAG.inputs[:1])
    assert result.failovers == 1 and result.outputs == {"001": RAG.outputs["001"]}
    assert resources["knowledge_base"].queries == ["What is Apache Flink?"]
    assert "flink_agents.api.vector_stores.vector_store.VectorStoreQueryResult" in FLINK_PAYLOAD_CLASSES


def test_without_the_allow_list_the_result_is_refused_not_loaded() -> None:
    """FA-10, PAY-3, PAY-9: with a plain restricted codec the same result is refused when it is written, the
    UntrustedPayloadError its loader would raise naming the class; nothing the record names is loaded."""
    injector = FaultInjector([CrashAt(Phase.AFTER_RECORD, key="001", action="context_retrieval_action", call_index=0)])
    with pytest.raises(ResultEncodeError, match=r"vector_store\.VectorStoreQueryResult") as info:
        Runner(MyRAGAgent, resources=RAG.fakes(), injector=injector, codec=CloudpickleCodec()).run(RAG.inputs[:1])
    assert isinstance(info.value.__cause__, UntrustedPayloadError)


class Quote(BaseModel):
    price: int


def quote(item: str) -> Quote:
    return Quote(price=len(item))


class Quoting(Agent):
    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=ctx.durable_execute(quote, InputEvent.from_event(event).input)))


def test_a_user_extends_the_allow_list_with_their_own_result_class() -> None:
    """FA-10: a result class of the user's is refused by default and admitted by
    `flink_payload_codec(TheClass)` (by class or by "module.qualname")."""

    def crash() -> FaultInjector:
        return FaultInjector([CrashAt(Phase.AFTER_RECORD, key="k", call_index=0)])

    with pytest.raises(ResultEncodeError, match=r"Quote") as info:  # refused when written (PAY-9)
        Runner(Quoting, injector=crash()).run([("k", "tea")])
    assert isinstance(info.value.__cause__, UntrustedPayloadError)
    for extra in (Quote, f"{__name__}.Quote"):
        result = Runner(Quoting, injector=crash(), codec=flink_payload_codec(extra)).run([("k", "tea")])
        assert result.failovers == 1 and result.outputs == {"k": [{"price": 3}]}


class Unsendable(Agent):
    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def send(event: Event, ctx: RunnerContext) -> None:
        custom = Event(type="custom", attributes={})
        custom.attributes["handle"] = object()  # past the event's own check, which runs on construction
        ctx.send_event(custom)


def test_content_json_cannot_carry_is_one_invalid_value_error() -> None:
    """FA-8: an event whose content JSON cannot carry is refused when sent, naming the event and the fix,
    located at the action (a cluster fails to send it too)."""
    pattern = r"'custom' event \(Event\) sent by action 'send' \(key='k', seq=0\) cannot be sent as JSON.*plain data"
    with pytest.raises(InvalidValueError, match=pattern):
        Runner(Unsendable).run([("k", 1)])


def test_every_delivery_is_a_fresh_event_and_base_delivery_is_a_clusters() -> None:
    """FA-8: an action gets new objects each time (an edit never reaches the runtime's copy); with base
    delivery it gets what a cluster gives, `Event.from_json` of the JSON data."""
    runtime_form = wrap(InputEvent(input={"items": [1, 2]}))
    first = unwrap(runtime_form)
    first.input["items"].append(3)
    assert unwrap(runtime_form).input == {"items": [1, 2]} == runtime_form.attributes["input"]
    base = unwrap(runtime_form, base=True)
    assert type(base) is Event and base.attributes == {"input": {"items": [1, 2]}} and base.id == runtime_form.id


def test_a_record_never_makes_flink_agents_import_a_module() -> None:
    """FA-8, EVT-3: an output schema reference in an event or memory value (Flink Agents imports the module
    it names when it reads it) may only name a module already loaded."""
    assert "json" in sys.modules
    check_schema_modules({"output_schema": {"output_schema": {"module": "json", "class": "JSONDecoder"}}}, "x")
    tampered: dict[str, Any] = {"ctx": {"r1": {"output_schema": {"module": "antigravity", "class": "X"}}}}
    with pytest.raises(InvalidValueError, match=r"names the output schema module 'antigravity', which is not loaded"):
        check_schema_modules(tampered, "a sensory memory value")
    assert "antigravity" not in sys.modules


def test_a_chat_message_with_a_typed_tool_call_replays_through_the_allow_list() -> None:
    """FA-10: a chat message whose tool call carries its ToolType (as Flink Agents' own chat model tests
    build them) is written and read back by the default codec of such an agent."""
    from flink_agents.api.chat_message import ChatMessage, MessageRole
    from flink_agents.api.tools.tool import ToolType

    call = {"id": "1", "type": ToolType.FUNCTION, "function": {"name": "add", "arguments": {"a": 1}}}
    message = ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])
    codec = flink_payload_codec()
    assert codec.decode_result(codec.encode_result(message)) == message
