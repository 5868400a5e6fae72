"""What a runner author hands the kit: a function that runs an agent to the end through crashes.

The runner protocol (spec CONF-4) is one callable, :class:`RunFunction` (the crash-exploration engine's, so the
kit's checks and the engine's sweep drive a runner the same way)::

    run(agent, inputs, *, store, injector, mismatch, config) -> RunResult

It processes ``inputs`` (``(business key, value)`` pairs) with ``agent`` against ``store``, reaching the
fault points of spec FLT-1 through ``injector``; after every :class:`~reference_runtime.SimulatedCrash`
it throws away all in-memory state and recovers from ``store`` (REC-1), until the inputs are done. Errors
the runtime raises on purpose (e.g. ``NondeterminismError`` in ``strict`` mode) propagate. It returns a
:class:`~reference_runtime.RunResult`; the checks read ``outputs``, ``memory``, ``journal`` (each entry's
``call_id``, ``function_id``, ``source`` and ``attempt``) and ``failovers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reference_runtime import Agent, FaultInjector, RunResult
from reference_runtime.durable import MismatchMode
from reference_runtime.exploration.protocol import RunFunction, reference_run
from reference_runtime.stores.base import ActionStateStore

__all__ = ["RUNNER_CAPABILITIES", "RunFunction", "RunnerFactory", "reference_run"]

#: Capabilities a runner can declare. ``runner`` (synchronous durable calls, recovery, reconcilers,
#: memory, completed-action skip, idempotency ids) is every runner's baseline.
RUNNER_CAPABILITIES = ("runner", "runner_async", "runner_batch")


class RunnerFactory:
    """A runner under test: its :class:`RunFunction`, the stores it runs against (``new_store`` makes an
    empty one per run; default: the in-memory store) and the capabilities it claims."""

    def __init__(
        self,
        run: RunFunction,
        *,
        new_store: Callable[[], ActionStateStore] | None = None,
        capabilities: frozenset[str] | set[str] = frozenset({"runner"}),
        name: str = "runner",
    ) -> None:
        unknown = set(capabilities) - set(RUNNER_CAPABILITIES)
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {RUNNER_CAPABILITIES}")
        self._run = run
        self._new_store = new_store
        self.capabilities = frozenset(capabilities) | {"runner"}
        self.name = name
        self._detected: frozenset[str] | None = None

    @classmethod
    def reference(
        cls, new_store: Callable[[], ActionStateStore] | None = None, *, name: str = "reference-runner"
    ) -> RunnerFactory:
        """The reference runtime's :class:`~reference_runtime.Runner`, with every runner capability."""
        return cls(reference_run, new_store=new_store, capabilities=set(RUNNER_CAPABILITIES), name=name)

    def new_store(self) -> ActionStateStore:
        if self._new_store is None:
            from reference_runtime.stores.memory import InMemoryStore

            return InMemoryStore()
        return self._new_store()

    def run(
        self,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        *,
        store: ActionStateStore,
        injector: FaultInjector | None = None,
        mismatch: MismatchMode = "lenient",
        config: Mapping[str, Any] | None = None,
    ) -> RunResult:
        return self._run(
            agent,
            list(inputs),
            store=store,
            injector=injector or FaultInjector(),
            mismatch=mismatch,
            config=dict(config or {}),
        )

    def detected(self) -> frozenset[str]:
        """Capabilities the kit observes: each capability's probe agent, run crash-free, gives the
        expected outputs (computed once)."""
        if self._detected is None:
            from . import agents

            found = set()
            for cap, (agent, inputs, expected) in agents.PROBES.items():
                agents.reset()
                store = self.new_store()
                try:
                    if self.run(agent, inputs, store=store).outputs == expected:
                        found.add(cap)
                except Exception:
                    pass
                finally:
                    store.close()
            self._detected = frozenset(found)
        return self._detected
