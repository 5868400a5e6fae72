"""One action's durable-call state machine driven directly, without a runner: the state reference the
call-level tests use, the execution over a store, and the call records it persisted."""

from __future__ import annotations

from typing import Any

from reference_runtime import CallResult, FaultInjector, InputEvent
from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.durable import ActionExecution, MismatchMode
from reference_runtime.records import ActionRef, ActionState, StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.memory import InMemoryStore

#: Key ``user-1``, seq 4, action ``work``: where every call-level test's records live.
REF = StateRef("user-1", 4, ActionRef("work", "m", "A.work", ("_input_event",)), InputEvent("x"), "sk")


def execution(
    store: ActionStateStore,
    codec: Any = None,
    ref: StateRef = REF,
    *,
    mode: MismatchMode = "lenient",
    injector: FaultInjector | None = None,
) -> ActionExecution:
    """The execution of ``ref``'s action over ``store``, resuming the state it holds (empty if none);
    ``codec`` defaults to a fresh :class:`CloudpickleCodec`."""
    state = store.get(ref)
    if state is None:
        state = ActionState(task_event=ref.event)
        store.put(ref, state)
    return ActionExecution(ref, store, codec or CloudpickleCodec(), state, mode, injector)


def stored(store: ActionStateStore, ref: StateRef = REF) -> list[CallResult]:
    """The call records ``store`` holds for ``ref``."""
    state = store.get(ref)
    assert state is not None
    return state.call_results


def only_entry_calls(store: InMemoryStore) -> list[CallResult]:
    """The call records of the one action state a memory store holds (a runner's run of one input)."""
    (entry,) = store._entries.values()
    return list(entry.calls)
