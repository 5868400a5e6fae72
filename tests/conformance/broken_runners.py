"""Deliberately broken runners: each must fail the runner-suite clause that catches its bug."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance import RunFunction, RunnerFactory
from reference_runtime import Agent, FaultInjector, Runner, RunResult, SimulatedCrash
from reference_runtime.durable import MismatchMode
from reference_runtime.records import ActionState, StateRef
from reference_runtime.stores.base import ActionStateStore, RecoveryMarker
from reference_runtime.stores.memory import InMemoryStore


@dataclass(frozen=True)
class RunArgs:
    """The arguments the kit hands a run function (:class:`conformance.RunFunction`), in one value."""

    agent: type[Agent]
    inputs: Sequence[tuple[str, Any]]
    store: ActionStateStore
    injector: FaultInjector
    mismatch: MismatchMode
    config: Mapping[str, Any]

    def runner(
        self,
        cls: type[Runner] = Runner,
        *,
        store: ActionStateStore | None = None,
        mismatch: MismatchMode | None = None,
        config: Mapping[str, Any] | None = None,
        injector: Any = None,
        **options: Any,
    ) -> Runner:
        """A reference runner over these arguments; ``store``, ``mismatch``, ``config`` and ``injector``
        replace the kit's where given, ``options`` (``codec``, ``key_scheme``, ``async_threads``) go to the
        runner as they are (a broken runner's one change)."""
        return cls(
            self.agent,
            self.store if store is None else store,
            injector=self.injector if injector is None else injector,
            mismatch=self.mismatch if mismatch is None else mismatch,
            config=self.config if config is None else config,
            **options,
        )


def run_function(body: Callable[[RunArgs], RunResult]) -> RunFunction:
    """``body`` as a run function the kit can call, under the body's name and docstring."""

    @functools.wraps(body)
    def run(
        agent: type[Agent],
        inputs: Sequence[tuple[str, Any]],
        *,
        store: ActionStateStore,
        injector: FaultInjector,
        mismatch: MismatchMode,
        config: Mapping[str, Any],
    ) -> RunResult:
        return body(RunArgs(agent, inputs, store, injector, mismatch, config))

    return run


class _Amnesiac(InMemoryStore):
    """An empty store that takes any recovery marker without noticing it holds none of that data (a lossy
    backend that does not detect its loss, FAIL-6), so the runner recovers as if nothing happened."""

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        return None


@run_function
def forgetful(run: RunArgs) -> RunResult:
    """Recovers against an empty store: every call executes again."""
    runner = run.runner()
    runner.inputs.extend(run.inputs)
    while True:
        try:
            runner.process()
            return runner.result()
        except SimulatedCrash as crash:
            runner.crashes.append(crash.point)
            runner.store = _Amnesiac()
            runner.fail_over()


@run_function
def always_lenient(run: RunArgs) -> RunResult:
    """Ignores the mismatch mode."""
    return run.runner(mismatch="lenient").run(run.inputs)


@run_function
def no_reconcilers(run: RunArgs) -> RunResult:
    """Drops every reconciler (the DE-14 test switch), so in-flight calls run again."""
    return run.runner(config={**run.config, "durable-execution.reconcilers": False}).run(run.inputs)


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


@run_function
def reruns_completed(run: RunArgs) -> RunResult:
    """Runs completed actions again on recovery instead of skipping them."""
    view: Any = _NeverCompleted(run.store)
    return run.runner(store=view).run(run.inputs)


def factory(name: str) -> RunnerFactory:
    run = {
        "forgetful": forgetful,
        "always_lenient": always_lenient,
        "no_reconcilers": no_reconcilers,
        "reruns_completed": reruns_completed,
    }[name]
    return RunnerFactory(run, capabilities={"runner", "runner_async", "runner_batch"}, name=name)
