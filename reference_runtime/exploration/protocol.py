"""The runner protocol (spec CONF-4): how the engine runs an agent. Every run of a sweep, a crash or a schedule
goes through a :class:`RunFunction`, the reference :class:`~reference_runtime.Runner` by default; the conformance
kit hands its runner under test instead and gets the same sweep and the same verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from reference_runtime import Agent, FaultInjector, Runner, RunResult
from reference_runtime.durable import MismatchMode
from reference_runtime.stores.base import ActionStateStore

__all__ = ["RunFunction", "reference_run", "run_once"]


class RunFunction(Protocol):
    """The runner protocol (spec CONF-4): run ``agent`` over ``inputs`` to the end against ``store``, reaching
    the fault points through ``injector`` and failing over after every
    :class:`~reference_runtime.SimulatedCrash`; return the :class:`~reference_runtime.RunResult`."""

    def __call__(
        self,
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        *,
        store: ActionStateStore,
        injector: FaultInjector,
        mismatch: MismatchMode,
        config: Mapping[str, Any],
    ) -> RunResult: ...


def reference_run(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    *,
    store: ActionStateStore,
    injector: FaultInjector,
    mismatch: MismatchMode,
    config: Mapping[str, Any],
) -> RunResult:
    """The reference runtime as a :class:`RunFunction`."""
    return Runner(agent, store, injector=injector, mismatch=mismatch, config=config).run(inputs)


def run_once(
    run: RunFunction | None,
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: ActionStateStore,
    injector: FaultInjector,
    options: dict[str, Any],
) -> RunResult:
    """One run through ``run`` (default: the reference runner, which takes every runner option; a runner under
    test takes the protocol's ``mismatch`` and ``config`` only)."""
    if run is None:
        return Runner(agent, store, injector=injector, **options).run(inputs)
    other = sorted(set(options) - {"mismatch", "config"})
    if other:
        raise TypeError(f"runner option(s) {other} reach only the reference Runner, not a run function (CONF-4)")
    mismatch = options.get("mismatch", "lenient")
    return run(
        agent, list(inputs), store=store, injector=injector, mismatch=mismatch, config=options.get("config") or {}
    )
