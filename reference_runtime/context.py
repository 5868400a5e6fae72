"""``RunnerContext``: what an action sees (facts §1)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from .config import config_bool
from .durable import ActionExecution, DurableAwaitable
from .events import Event
from .memory import MemoryObject, check_action_access
from .retry import RetryPolicy
from .two_phase import TwoPhaseCommit, execute_two_phase, execute_two_phase_async, is_two_phase

if TYPE_CHECKING:
    from .batch import DurableCall
    from .durable import Outcome

#: Config key of the reconciler switch (spec DE-14).
RECONCILERS_KEY = "durable-execution.reconcilers"


class RunnerContext:
    """The context passed to an action as ``ctx``: memory, events, config and durable calls."""

    def __init__(
        self,
        execution: ActionExecution,
        short_term: MemoryObject,
        sensory: MemoryObject,
        config: Mapping[str, Any],
        action_config: Mapping[str, Any],
        owner: int,
    ) -> None:
        self._execution = execution
        self._short_term = short_term
        self._sensory = sensory
        self._config = config
        self._action_config = action_config
        self._owner = owner
        # A test switch (spec DE-14), to explore what recovery does when no reconciler is available;
        # read once per action, not on every durable call.
        self._reconcilers = config_bool(config, RECONCILERS_KEY, True)
        self.sent: list[Event] = []

    @property
    def key(self) -> str:
        """The business key of the current run."""
        return self._execution.ref.key

    @property
    def seq(self) -> int:
        """The sequence number of the current input of this key."""
        return self._execution.ref.seq

    @property
    def action_name(self) -> str:
        return self._execution.ref.action.name

    @property
    def short_term_memory(self) -> MemoryObject:
        check_action_access(self._owner, "short_term_memory")
        return self._short_term

    @property
    def sensory_memory(self) -> MemoryObject:
        check_action_access(self._owner, "sensory_memory")
        return self._sensory

    @property
    def config(self) -> Mapping[str, Any]:
        return self._config

    @property
    def action_config(self) -> Mapping[str, Any]:
        return self._action_config

    def get_action_config_value(self, key: str) -> Any:
        return self._action_config.get(key)

    def send_event(self, event: Event) -> None:
        """Emit ``event`` when this action completes (it is persisted with the action's state)."""
        check_action_access(self._owner, "send_event")
        if not isinstance(event, Event):
            raise TypeError(f"send_event expects an Event, got {type(event).__name__}")
        self.sent.append(event)

    def durable_execute(
        self,
        func: Callable[..., Any],
        *args: Any,
        reconciler: Callable[[], Any] | None = None,
        durable_id: str | None = None,
        retry: RetryPolicy | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run ``func(*args, **kwargs)`` once: replayed from its record on recovery (spec DE-*).

        ``reconciler``, ``durable_id`` and ``retry`` are consumed here and never passed to ``func``.
        A :class:`~reference_runtime.two_phase.TwoPhaseCommit` object runs as a two-phase commit.
        """
        check_action_access(self._owner, "durable_execute")
        if is_two_phase(func):
            return execute_two_phase(self._execution, cast(TwoPhaseCommit, func), durable_id)
        return self._execution.execute(func, args, kwargs, reconciler=reconciler if self._reconcilers else None,
                                       durable_id=durable_id, retry=retry)

    def durable_execute_async(
        self,
        func: Callable[..., Any],
        *args: Any,
        reconciler: Callable[[], Any] | None = None,
        durable_id: str | None = None,
        retry: RetryPolicy | None = None,
        **kwargs: Any,
    ) -> Awaitable[Any]:
        """Like :meth:`durable_execute`, off the runner's thread; nothing starts until awaited."""
        check_action_access(self._owner, "durable_execute_async")
        ex = self._execution
        if is_two_phase(func):
            return DurableAwaitable(lambda: execute_two_phase_async(ex, cast(TwoPhaseCommit, func), durable_id))
        return DurableAwaitable(
            lambda: ex.execute_async(func, args, kwargs, reconciler=reconciler if self._reconcilers else None,
                                     durable_id=durable_id, retry=retry)
        )

    def durable_execute_all_async(self, calls: list[DurableCall]) -> Awaitable[list[Outcome]]:
        """Run a batch of durable calls in parallel; outcomes in input order (spec BAT-*)."""
        check_action_access(self._owner, "durable_execute_all_async")
        from .batch import run_batch

        ex, config = self._execution, self._config
        if not self._reconcilers:
            calls = [dataclasses.replace(c, reconciler=None) for c in calls]
        return DurableAwaitable(lambda: run_batch(ex, list(calls), config))
