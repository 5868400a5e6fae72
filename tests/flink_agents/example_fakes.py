"""Fakes of the services the example agents of the installed flink_agents package talk to: chat model
connections (in place of Ollama) and a vector store (in place of Chroma). Each is a flink_agents resource
class a test supplies through ``Runner(resources={name: fake})``; each keeps, outside the runtime, the list
of every request it answered, so a test can count the calls a run really made."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection
from flink_agents.api.resource import ResourceType
from flink_agents.api.tools.tool import Tool
from flink_agents.api.vector_stores.vector_store import (
    BaseVectorStore,
    Document,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from pydantic import PrivateAttr

#: How a fake model answers: (messages, names of the tools it was given) -> its reply.
Answer = Callable[[Sequence[ChatMessage], list[str]], ChatMessage]


class FakeConnection(BaseChatModelConnection):
    """A chat model connection answering by ``answer``; ``calls`` holds every request, in order, as
    (the last message's role and content, the names of the tools offered)."""

    _answer: Answer = PrivateAttr()
    _calls: list[tuple[str, str, list[str]]] = PrivateAttr(default_factory=list)

    @classmethod
    def answering(cls, answer: Answer) -> FakeConnection:
        fake = cls()
        fake._answer = answer
        return fake

    @property
    def calls(self) -> list[tuple[str, str, list[str]]]:
        return self._calls

    def chat(self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any) -> ChatMessage:
        names = [t.name for t in tools or []]
        last = messages[-1]
        self._calls.append((last.role.value, last.content, names))
        return self._answer(messages, names)

    def close(self) -> None:  # the runtime never owns a supplied fake
        return None


def reply(content: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=content)


def tool_call(call_id: str, tool: str, arguments: dict[str, Any]) -> ChatMessage:
    call = {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}
    return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def told(messages: Sequence[ChatMessage], role: MessageRole = MessageRole.USER) -> str:
    """The text of the messages of ``role`` the model was given (the user's, by default: the system prompts
    of the examples hold sample answers a fake must not read as the question)."""
    return "\n".join(m.content for m in messages if m.role == role)


def review_analyst(messages: Sequence[ChatMessage], tools: list[str]) -> ChatMessage:
    """Scores a product review as the quickstart's prompt asks; a review about shipping first notifies the
    shipping manager, when that tool is offered."""
    text = told(messages)
    product = re.search(r'"id": (\S+?),', text)
    pid = product.group(1).strip('"') if product else "?"
    shipping = "shipping" in text.lower() or "arrived" in text.lower()
    if shipping and "notify_shipping_manager" in tools and messages[-1].role != MessageRole.TOOL:
        return tool_call(f"notify-{pid}", "notify_shipping_manager", {"id": pid, "review": "damaged in shipping"})
    score = 1 if shipping or "broke" in text else 5
    reasons = ["shipping damage"] if shipping else (["poor quality"] if score == 1 else [])
    return reply(json.dumps({"id": pid, "score": score, "reasons": reasons}))


def suggester(messages: Sequence[ChatMessage], tools: list[str]) -> ChatMessage:
    """Suggests one improvement per dissatisfaction reason it was given."""
    # The quickstart's prompt is one system message: a sample input first, the product's own reasons last.
    given = re.findall(r"unsatisfied_reasons\": \[(.*?)\]", told(messages, MessageRole.SYSTEM))
    found = [r.strip(" '\"") for r in given[-1].split(",") if r.strip()] if given else []
    return reply(json.dumps({"suggestion_list": [f"fix {r}" for r in found] or ["keep it up"]}))


def calculator(messages: Sequence[ChatMessage], tools: list[str]) -> ChatMessage:
    """Follows the math-calculator skill: load it, run the expression through ``bc`` with the bash tool,
    answer with what ``bc`` printed."""
    last = messages[-1]
    if last.role == MessageRole.USER:
        return tool_call("load", "load_skill", {"name": "math-calculator"})
    if last.role == MessageRole.TOOL and "<skill_content" in last.content:
        question = next(m.content for m in messages if m.role == MessageRole.USER)
        expression = question.split(":", 1)[1].strip()
        return tool_call("run", "bash", {"command": f'echo "{expression}" | bc'})
    return reply(last.content.strip())


def sentiment(messages: Sequence[ChatMessage], tools: list[str]) -> ChatMessage:
    """Judges one aspect of a restaurant review, or summarises the judgements, as JSON."""
    text = told(messages) + "\n" + told(messages, MessageRole.SYSTEM)
    if "summary assistant" in text:
        judged = re.findall(r"(taste|service):(\w+)", text)
        return reply(json.dumps({"summary": ", ".join(f"{a}:{r}" for a, r in judged)}))
    aspect = re.search(r'Judge the "(\w+)" dimension', text)
    name = aspect.group(1) if aspect else "?"
    result = "positive" if name == "taste" else "negative"
    return reply(f"```json\n{json.dumps({'aspect': name, 'result': result})}\n```")


def rag_answerer(messages: Sequence[ChatMessage], tools: list[str]) -> ChatMessage:
    """Answers with the first line of context it was given."""
    context = re.search(r"Context:\n(.*?)\n", told(messages))
    return reply(f"Answer: {context.group(1) if context else 'no context'}")


class FakeVectorStore(BaseVectorStore):
    """A vector store over fixed documents: a query returns those sharing a word with it, best first;
    ``queries`` holds every query text."""

    _documents: list[Document] = PrivateAttr(default_factory=list)
    _queries: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def over(cls, texts: list[str]) -> FakeVectorStore:
        store = cls()
        store._documents = [Document(content=t, id=f"doc{i}") for i, t in enumerate(texts, 1)]
        return store

    @property
    def queries(self) -> list[str]:
        return self._queries

    @property
    def store_kwargs(self) -> dict[str, Any]:
        return {}

    def query(self, query: VectorStoreQuery) -> VectorStoreQueryResult:
        self._queries.append(query.query_text)
        words = set(re.findall(r"\w+", query.query_text.lower()))
        scored = [(len(words & set(re.findall(r"\w+", d.content.lower()))), d) for d in self._documents]
        best = [d for score, d in sorted(scored, key=lambda s: -s[0]) if score][: query.limit]
        return VectorStoreQueryResult(documents=best)

    # The example only queries; the rest of the store's API is not used.
    def get(self, *args: Any, **kwargs: Any) -> list[Document]:
        raise NotImplementedError

    def delete(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    def _query_embedding(self, *args: Any, **kwargs: Any) -> list[Document]:
        raise NotImplementedError

    def _add_embedding(self, *args: Any, **kwargs: Any) -> list[str]:
        raise NotImplementedError

    def _update_embedding(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.VECTOR_STORE
