"""P5: a batch of N tools each sleeping L on the async pool, for N <= tool-call.parallelism.

Batch wall time / L should stay near 1 (target <= 1.1, every run); the serial path (tool-call.parallel off) is ~N.
The pool's threads are kept between runs (``reference_runtime/pool.py``), so the batch column is a run on
started threads, as every run after a process's first is; the cold column is a run that starts its threads.
The floor is the same N sleeps through an event loop of their own on started threads, with no runtime: what
this machine's thread wake-ups cost whatever runs them.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from reference_runtime import (
    Agent,
    Event,
    InputEvent,
    OutputEvent,
    Runner,
    RunnerContext,
    ToolRequestEvent,
    action,
    pool,
)
from reference_runtime.stores.memory import InMemoryStore

from ._util import judge, point, table

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


_FLOOR_POOL = ThreadPoolExecutor(16)


def floor(n: int) -> float:
    async def batch() -> None:
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(_FLOOR_POOL, sleepy, i) for i in range(n)))

    start = time.perf_counter()
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(batch())
    finally:
        loop.close()
    return time.perf_counter() - start


def main() -> None:
    rows = [
        ("N tools", "batch wall / L", "floor / L", "cold: threads started / L", "serial wall / L", "serial / batch")
    ]
    worst = (0.0, 0.0, 0)  # batch / L, its floor / L, N
    for n in (1, 4, 8, 16):
        pool.drop_idle()
        cold = wall(n, True)
        batch = min(wall(n, True) for _ in range(3))
        least = min(floor(n) for _ in range(3))
        serial = wall(n, False)
        worst = max(worst, (batch / LATENCY, least / LATENCY, n))
        for series, value in (("batch", batch), ("floor: the sleeps on started threads", least), ("cold", cold)):
            point("P5 batch wall time by tools", series, n, value / LATENCY, xlabel="tools N", ylabel="wall / L")
        rows.append(
            (
                str(n),
                f"{batch / LATENCY:.2f}",
                f"{least / LATENCY:.2f}",
                f"{cold / LATENCY:.2f}",
                f"{serial / LATENCY:.2f}",
                f"{serial / batch:.1f}x",
            )
        )
    print(f"L = {LATENCY * 1000:.0f} ms per tool, tool-call.parallelism = 16, memory store")
    print(table(rows))
    judge(f"P5 batch of N <= 16 tools, worst (N = {worst[2]})", worst[0], 1.1, " L", floor=worst[1])


if __name__ == "__main__":
    main()
