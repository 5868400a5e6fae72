"""P5: a batch of N tools each sleeping L on the async pool, for N <= tool-call.parallelism.

Batch wall time / L should stay near 1 (target <= 1.1, every run); the serial path (tool-call.parallel off) is ~N.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, ToolRequestEvent, action
from reference_runtime.stores.memory import InMemoryStore

from ._util import table

LATENCY = 0.05


def sleepy(n: int) -> int:
    time.sleep(LATENCY)
    return n


class Tools(Agent):
    tools: ClassVar[dict[str, Any]] = {"sleepy": sleepy}

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        n = event.attributes["input"]
        calls = [{"id": f"c{i}", "function": {"name": "sleepy", "arguments": {"n": i}}} for i in range(n)]
        ctx.send_event(ToolRequestEvent("m", calls))

    @action("_tool_response_event")
    @staticmethod
    def done(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(len(event.attributes["responses"])))


def wall(n: int, parallel: bool) -> float:
    config = {"tool-call.parallelism": 16, "tool-call.parallel": parallel}
    runner = Runner(Tools, InMemoryStore(), config=config)
    start = time.perf_counter()
    result = runner.run([("k", n)])
    elapsed = time.perf_counter() - start
    assert result.outputs == {"k": [n]}
    return elapsed


def main() -> None:
    rows = [("N tools", "batch wall / L", "serial wall / L", "serial / batch")]
    for n in (1, 4, 8, 16):
        batch = min(wall(n, True) for _ in range(3))
        serial = wall(n, False)
        rows.append((str(n), f"{batch / LATENCY:.2f}", f"{serial / LATENCY:.2f}", f"{serial / batch:.1f}x"))
    print(f"L = {LATENCY * 1000:.0f} ms per tool, tool-call.parallelism = 16, memory store")
    print(table(rows))


if __name__ == "__main__":
    main()
