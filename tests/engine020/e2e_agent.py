"""The agent of the end-to-end lane (WIRE-14), run by a real Flink Agents 0.2.0 job (``e2e_job.py``).

It imports ``flink_agents`` 0.2.0 and so is never imported by the main test run. A counter per key in memory
``n``; each execution of the action is appended to ``$E2E_DIR/attempts``, and the first execution on
``a:2`` waits for ``$E2E_DIR/go`` (the harness writes our completed state meanwhile) and then fails the job,
which restores from its last checkpoint.
"""

import os
import time
from pathlib import Path

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext

WORK = Path(os.environ["E2E_DIR"])


class CounterAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def count(event: InputEvent, ctx: RunnerContext) -> None:
        text = str(event.input)
        with (WORK / "attempts").open("a") as log:
            log.write(text + "\n")
        n = (ctx.short_term_memory.get("n") or 0) + 1
        ctx.short_term_memory.set("n", n)
        if text == "a:2" and (WORK / "attempts").read_text().splitlines().count(text) == 1:
            deadline = time.monotonic() + 120
            while not (WORK / "go").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            raise RuntimeError("e2e: fail the job once, after the harness wrote its state")
        ctx.send_event(OutputEvent(output=f"{text}#{n}"))
