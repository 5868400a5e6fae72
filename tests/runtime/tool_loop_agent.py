"""A tool-loop agent of the project's own for the issue-25 tests (FLT-6, IDN-9, IDN-10, REC-3, PLG-1).

``think`` runs once per round for one input: on the input, then on every tool result, three rounds and a
final answer; ``act`` runs the tool of each round. Both make durable calls whose arguments are built from
short-term memory, which recovery rebuilds from the store: in the crash-free run ``think``'s two arguments
share their strings (the last answer is one object in both), after recovery they do not.

``CALLS`` counts, outside the runtime, how often each call really ran, by idempotency id.
"""

from __future__ import annotations

from collections import Counter

from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action, current_call

#: Executions of each durable call by idempotency id, kept outside the runtime.
CALLS: Counter[str] = Counter()
ROUNDS = 3


def model(history: list[str], last: str) -> str:
    """A fake chat model: answers with the round's tool request, or the final answer after ROUNDS."""
    CALLS[current_call().idempotency_key] += 1
    return f"final {last}" if len(history) > ROUNDS else f"ask {len(history)} {last}"


def tool(request: str) -> str:
    """A fake tool."""
    CALLS[current_call().idempotency_key] += 1
    return f"tool({request})"


class ToolCall(Event):
    TYPE = "tool-call"
    __slots__ = ()


class ToolResult(Event):
    TYPE = "tool-result"
    __slots__ = ()


class ToolLoop(Agent):
    @action(InputEvent, ToolResult)
    @staticmethod
    def think(event: Event, ctx: RunnerContext) -> None:
        memory = ctx.short_term_memory
        if event.type == InputEvent.TYPE:
            text = f"question {event.attributes['input']}"
            history, last = [text], text
        else:
            # What the previous execution wrote: one string object in both values in the crash-free run,
            # two equal ones once recovery rebuilt the memory from the store.
            text = event.attributes["text"]
            history, last = [*memory.get("history"), text], memory.get("last")
        answer = ctx.durable_execute(model, history, last)
        memory.set("history", history)
        memory.set("last", history[-1])
        if answer.startswith("final"):
            ctx.send_event(OutputEvent(answer))
        else:
            ctx.send_event(ToolCall(attributes={"request": answer}))

    @action(ToolCall)
    @staticmethod
    def act(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ToolResult(attributes={"text": ctx.durable_execute(tool, event.attributes["request"])}))
