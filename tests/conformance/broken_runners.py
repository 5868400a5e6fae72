"""Deliberately broken runners: each must fail the runner-suite clause that catches its bug."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance import RunnerFactory
from reference_runtime import Agent, FaultInjector, Runner, RunResult, SimulatedCrash
from reference_runtime.durable import MismatchMode
from reference_runtime.records import ActionState, StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.memory import InMemoryStore


def forgetful(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    *,
    store: ActionStateStore,
    injector: FaultInjector,
    mismatch: MismatchMode,
    config: Mapping[str, Any],
) -> RunResult:
    """Recovers against an empty store: every call executes again."""
    runner = Runner(agent, store, injector=injector, mismatch=mismatch, config=config)
    runner.inputs.extend(inputs)
    while True:
        try:
            runner.process()
            return runner.result()
        except SimulatedCrash as crash:
            runner.crashes.append(crash.point)
            runner.store = InMemoryStore()
            runner.fail_over()


def always_lenient(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    *,
    store: ActionStateStore,
    injector: FaultInjector,
    mismatch: MismatchMode,
    config: Mapping[str, Any],
) -> RunResult:
    """Ignores the mismatch mode."""
    return Runner(agent, store, injector=injector, mismatch="lenient", config=config).run(inputs)


def no_reconcilers(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    *,
    store: ActionStateStore,
    injector: FaultInjector,
    mismatch: MismatchMode,
    config: Mapping[str, Any],
) -> RunResult:
    """Drops every reconciler (the DE-14 test switch), so in-flight calls run again."""
    return Runner(
        agent, store, injector=injector, mismatch=mismatch, config={**config, "durable-execution.reconcilers": False}
    ).run(inputs)


class _NeverCompleted:
    """A view of a store in which no action state is ever completed."""

    def __init__(self, inner: ActionStateStore) -> None:
        self.inner = inner

    def get(self, ref: StateRef) -> ActionState | None:
        state = self.inner.get(ref)
        if state is not None and state.completed:
            return ActionState(task_event=state.task_event)
        return state

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def reruns_completed(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    *,
    store: ActionStateStore,
    injector: FaultInjector,
    mismatch: MismatchMode,
    config: Mapping[str, Any],
) -> RunResult:
    """Runs completed actions again on recovery instead of skipping them."""
    view: Any = _NeverCompleted(store)
    return Runner(agent, view, injector=injector, mismatch=mismatch, config=config).run(inputs)


def factory(name: str) -> RunnerFactory:
    run = {
        "forgetful": forgetful,
        "always_lenient": always_lenient,
        "no_reconcilers": no_reconcilers,
        "reruns_completed": reruns_completed,
    }[name]
    return RunnerFactory(run, capabilities={"runner", "runner_async", "runner_batch"}, name=name)
