"""Built-in actions: tool calls and chat (spec TOOL-1..TOOL-5).

``tool_call_action`` answers a :class:`ToolRequestEvent` with a :class:`ToolResponseEvent`, running each
requested tool as a durable call with function id ``tool-call-{tool_call_id}`` (TOOL-1, so two calls of
one tool never share an identity). ``chat_action`` asks a chat model as a durable call, so a
recorded answer is replayed and the model is never asked the same question twice (TOOL-4).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .batch import DurableCall
from .context import RunnerContext
from .durable import Outcome
from .events import ChatRequestEvent, ChatResponseEvent, Event, ToolRequestEvent, ToolResponseEvent


class ChatModel(Protocol):
    """A chat model: given the messages so far, return the assistant message, a dict with ``content``
    and optionally ``tool_calls`` (each ``{"id", "function": {"name", "arguments"}}``)."""

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]: ...


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        parsed = json.loads(raw) if raw.strip() else {}
    else:
        parsed = raw or {}
    if not isinstance(parsed, dict):
        raise TypeError(f"tool arguments must be an object, got {type(parsed).__name__}")
    return parsed


def _call_tool(tool: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    return tool(**arguments)


async def tool_call_action(event: Event, ctx: RunnerContext, tools: Mapping[str, Callable[..., Any]]) -> None:
    """Answer every tool call of ``event``; unknown tools and bad arguments are answered inline."""
    request = event
    responses: dict[str, Any] = {}
    success: dict[str, bool] = {}
    error: dict[str, str | None] = {}
    calls: list[tuple[str, DurableCall]] = []
    order: list[str] = []
    for tc in request.attributes.get("tool_calls") or []:
        call_id = str(tc.get("id"))
        order.append(call_id)
        fn = tc.get("function") or {}
        name = fn.get("name")
        tool = tools.get(name) if isinstance(name, str) else None
        try:
            arguments = _arguments(fn.get("arguments"))
        except (TypeError, ValueError) as exc:
            responses[call_id], success[call_id], error[call_id] = None, False, f"bad arguments: {exc}"
            continue
        if tool is None:
            # No durable call: there is nothing to run, so nothing to record or replay.
            responses[call_id], success[call_id], error[call_id] = None, False, f"unknown tool {name!r}"
            continue
        # The digest covers the arguments only: the tool is named by the durable id.
        calls.append(
            (
                call_id,
                DurableCall(
                    functools.partial(_call_tool, tool), (_canonical(arguments, {}),), durable_id=f"tool-call-{call_id}"
                ),
            )
        )
    outcomes: list[Outcome]
    settings = ctx.settings
    if settings.tool_call_async and settings.tool_call_parallel:
        outcomes = await ctx.durable_execute_all_async([c for _, c in calls])
    else:
        outcomes = []
        for _, c in calls:
            try:
                value = (
                    await ctx.durable_execute_async(c.func, *c.args, durable_id=c.durable_id)
                    if settings.tool_call_async
                    else ctx.durable_execute(c.func, *c.args, durable_id=c.durable_id)
                )
                outcomes.append(Outcome.success(value))
            except Exception as exc:
                outcomes.append(Outcome.failure(exc))
    for (call_id, _), outcome in zip(calls, outcomes, strict=True):
        responses[call_id] = outcome.value
        success[call_id] = outcome.is_success()
        error[call_id] = None if outcome.error is None else f"{type(outcome.error).__name__}: {outcome.error}"
    # Answers follow the request's order, whether a call was answered inline or ran as a tool.
    ctx.send_event(
        ToolResponseEvent(
            str(request.id),
            {i: responses[i] for i in order},
            {},
            {i: success[i] for i in order},
            {i: error[i] for i in order},
        )
    )


def _ask(model: ChatModel, messages: list[dict[str, Any]]) -> dict[str, Any]:
    answer = model.chat(messages)
    if not isinstance(answer, dict):
        raise TypeError(f"a chat model must return a message dict, got {type(answer).__name__}")
    return answer


def _canonical(value: Any, seen: dict[Any, Any]) -> Any:
    """``value`` rebuilt so that equal strings (and bytes) are one object. The args digest pickles the
    messages, and pickle writes a repeated object as a back-reference: without this, messages rebuilt on
    recovery (from the store, where no two strings are shared) digest differently from the first run's,
    where a tool call id in the assistant message is the very object the tool response carries, and the
    recorded answer would not be found (spec TOOL-4)."""
    if isinstance(value, str | bytes):
        return seen.setdefault(value, value)
    if isinstance(value, list):
        return [_canonical(v, seen) for v in value]
    if isinstance(value, dict):
        return {_canonical(k, seen): _canonical(v, seen) for k, v in value.items()}
    return value


async def chat_action(event: Event, ctx: RunnerContext, models: Mapping[str, ChatModel]) -> None:
    """Drive a ReAct loop: ask the model; tool calls go out as a ToolRequestEvent and their responses
    come back here; a final answer goes out as a ChatResponseEvent.

    With ``chat.async`` (default true, as in Flink Agents) the model is asked through
    ``durable_execute_async``, on the async pool while other keys progress; with it off, through
    ``durable_execute``, on the runner's thread (spec TOOL-5)."""
    pending = ctx.sensory_memory
    if event.type == ChatRequestEvent.TYPE:
        request_id = str(event.id)
        model_name = str(event.attributes.get("model"))
        messages = list(event.attributes.get("messages") or [])
    else:
        slot = f"_chat.{event.attributes.get('request_id')}"
        if not pending.is_exist(slot):
            return  # a tool response for someone else's request
        state = pending.get(slot)
        request_id, model_name = state.get("request_id"), state.get("model")
        messages = list(state.get("messages") or [])
        responses = event.attributes.get("responses") or {}
        for tc_id, value in responses.items():
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": tc_id,
                    "content": value,
                    "error": (event.attributes.get("error") or {}).get(tc_id),
                }
            )
    model = models.get(model_name)
    if model is None:
        ctx.send_event(ChatResponseEvent(request_id, None, error=f"unknown chat model {model_name!r}"))
        return
    messages = _canonical(messages, {})
    # The model object stays out of the digest: a stateful model must not look like a new call.
    ask, chat_id = functools.partial(_ask, model), f"chat-{model_name}"
    if ctx.settings.chat_async:
        answer = await ctx.durable_execute_async(ask, messages, durable_id=chat_id)
    else:
        answer = ctx.durable_execute(ask, messages, durable_id=chat_id)
    messages.append(answer)
    tool_calls = answer.get("tool_calls") or []
    if tool_calls:
        request = ToolRequestEvent(model_name, tool_calls)
        pending.set(f"_chat.{request.id}", {"request_id": request_id, "model": model_name, "messages": messages})
        ctx.send_event(request)
    else:
        ctx.send_event(ChatResponseEvent(request_id, answer.get("content")))
