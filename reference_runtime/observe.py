"""What the runtime tells a tool that watches runs (the crash coverage of ``pytest --durable-coverage`` and
``durable sweep --coverage``, spec COV-3, COV-4): every action execution as it starts and ends and whether it
re-enters an action a crash interrupted, every completed action, every completed action that recovery replays
instead of running, and every durable call made with a reconciler.

One observer per process, none by default: the runner then pays one module-attribute read per action execution
and the durable-call state machine one per call that has a reconciler (spec COV-8).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # not .agent nor .durable: both import this module (agents are ``type[Any]`` here)
    from .faults import FaultPoint
    from .records import ActionState, StateRef

__all__ = ["Observer", "current", "watch"]


class Observer(Protocol):
    """Told about action executions by :class:`~reference_runtime.Runner` (all on the runner's thread, except
    :meth:`reconciler_given`, which comes from wherever the action's durable call opens its slot)."""

    def action_started(self, agent: type[Any], ref: StateRef, recovery: bool, after: FaultPoint | None) -> None:
        """An execution of ``ref``'s action starts. ``recovery``: the store held the action's state, unfinished,
        so this execution re-enters an action a crash interrupted and replays its call records; ``after`` is the
        crash the runner last recovered from (None if it knows of none)."""

    def action_ended(self, agent: type[Any], ref: StateRef, journal: Sequence[Any]) -> None:
        """The execution's user code returned or raised (a crash included); ``journal`` holds its durable calls
        (:class:`~reference_runtime.JournalEntry`)."""

    def action_completed(self, agent: type[Any], ref: StateRef, state: ActionState) -> None:
        """The action's completed state, with its memory writes, is persisted."""

    def action_replayed(self, agent: type[Any], ref: StateRef, state: ActionState) -> None:
        """Recovery found the action completed and applies its recorded memory writes and outputs instead of
        running it."""

    def reconciler_given(self, ref: StateRef, index: int, function_id: str, reconciler: Callable[[], Any]) -> None:
        """The durable call at ``index`` of ``ref``'s action was made with ``reconciler`` (whether or not the
        reconciler switch, DE-14, lets recovery use it)."""


#: The observer of this process, or None.
current: Observer | None = None


def watch(observer: Observer | None) -> Observer | None:
    """Make ``observer`` the process's observer (None: no observer); returns the previous one."""
    global current
    previous, current = current, observer
    return previous
