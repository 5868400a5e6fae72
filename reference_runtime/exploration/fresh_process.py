"""Run an agent in a fresh interpreter with a chosen ``PYTHONHASHSEED`` and return its golden journal
entries: the only way to see set ordering (and other per-process hashing) leak into call arguments,
because inside one process every run iterates a set the same way."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from reference_runtime import Agent

# Runs in the child: read (module, qualname, inputs, options) from stdin, print the journal entries as JSON.
_CHILD = """
import importlib, json, pickle, sys
from reference_runtime.exploration.journal import entries
from reference_runtime import Runner
module, qualname, inputs, options = pickle.load(sys.stdin.buffer)
agent = importlib.import_module(module)
for part in qualname.split("."):
    agent = getattr(agent, part)
print(json.dumps(entries(Runner(agent, **options).run(inputs))))
"""


class FreshProcessError(RuntimeError):
    """The agent could not be run in a fresh interpreter (not importable, or it failed there)."""


def journal_in_fresh_process(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    hash_seed: int,
    options: dict[str, Any],
    timeout: float = 120.0,
) -> list[dict[str, str]]:
    """The golden journal entries of a crash-free run on the memory store in a new interpreter."""
    if agent.__module__ == "__main__" or "<locals>" in agent.__qualname__:
        raise FreshProcessError(
            f"{agent.__qualname__} must be defined at module level in an importable module to run in a fresh process"
        )
    try:
        payload = pickle.dumps((agent.__module__, agent.__qualname__, list(inputs), options))
    except Exception as exc:
        raise FreshProcessError(f"inputs and runner options must pickle to reach a fresh process: {exc}") from exc
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", _CHILD], input=payload, capture_output=True, env=env, timeout=timeout)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise FreshProcessError(
            f"{agent.__qualname__} failed in a fresh process (PYTHONHASHSEED={hash_seed}):\n  " + "\n  ".join(tail)
        )
    calls: list[dict[str, str]] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return calls
