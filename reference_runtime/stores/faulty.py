"""A store wrapper that fails, delays, tears or loses writes on a schedule (spec FAIL-5).

Use it to check what a run does when its store misbehaves::

    store = FaultyStore(SqliteStore("s.db"), [StoreFault("put_call_results", at=3)])
    Runner(MyAgent, store).run(inputs)   # raises StoreFailedError naming the store, operation and cause

Kinds of fault, applied at the ``at``-th call of ``operation`` (``"*"``: any operation), and on every later
call too when ``repeat`` is true (a dead server):

``fail``        raise :class:`~reference_runtime.errors.StoreError`; nothing is written
``fail_after``  write, then raise (the write landed but its acknowledgement was lost)
``tear``        a multi-record ``put_call_results`` writes only its first records, then raises
``delay``       sleep ``seconds`` (on ``sleep``, e.g. a virtual clock's), then proceed
``lose``        acknowledge the write without writing it (a server that drops data)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import StoreError
from ..records import ActionState, CallResult, StateRef
from .base import ActionStateStore, RecoveryMarker
from .forwarding import ForwardingStore

FaultKind = Literal["fail", "fail_after", "tear", "delay", "lose"]
OPERATIONS = (
    "put",
    "get",
    "put_call_results",
    "truncate_call_results",
    "prune_state",
    "get_recovery_marker",
    "rebuild_state",
)
_WRITES = frozenset({"put", "put_call_results", "truncate_call_results", "prune_state"})


@dataclass(frozen=True)
class StoreFault:
    """One scheduled fault; see the module docstring for the kinds."""

    operation: str
    at: int = 1
    kind: FaultKind = "fail"
    seconds: float = 0.0
    repeat: bool = False

    def __post_init__(self) -> None:
        if self.operation != "*" and self.operation not in OPERATIONS:
            raise ValueError(f"StoreFault operation {self.operation!r} is not one of {OPERATIONS} or '*'")
        if self.kind not in ("fail", "fail_after", "tear", "delay", "lose"):
            raise ValueError(f"StoreFault kind {self.kind!r} is not fail, fail_after, tear, delay or lose")
        if self.kind in ("lose", "tear", "fail_after") and self.operation not in (*_WRITES, "*"):
            raise ValueError(f"a {self.kind!r} fault applies to writes only, not {self.operation!r}")
        if self.at < 1:
            raise ValueError("StoreFault.at counts calls from 1")


class FaultyStore(ForwardingStore):
    """Forwards to ``inner`` and applies ``faults``. ``fired`` lists ``(fault, operation, call number)`` of
    every fault applied; ``armed = False`` turns the schedule off (a repaired store)."""

    def __init__(
        self, inner: ActionStateStore, faults: Iterable[StoreFault] = (), *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        super().__init__(inner)
        self.faults = list(faults)
        self.sleep = sleep
        self.armed = True
        self.calls: dict[str, int] = {}
        self.fired: list[tuple[StoreFault, str, int]] = []
        self.url = f"faulty({getattr(inner, 'url', type(inner).__name__)})"

    def _due(self, operation: str) -> StoreFault | None:
        n = self.calls[operation] = self.calls.get(operation, 0) + 1
        total = self.calls["*"] = self.calls.get("*", 0) + 1
        if not self.armed:
            return None
        for fault in self.faults:
            count = total if fault.operation == "*" else n
            if fault.operation in ("*", operation) and (count == fault.at or (fault.repeat and count > fault.at)):
                if fault.kind in ("lose", "tear", "fail_after") and operation not in _WRITES:
                    continue
                self.fired.append((fault, operation, count))
                return fault
        return None

    def _apply(self, operation: str, write: Callable[[], Any], tear: Callable[[], None] | None = None) -> Any:
        fault = self._due(operation)
        if fault is None:
            return write()
        cause = f"injected {fault.kind} fault at {operation} call #{self.calls[operation]}"
        if fault.kind == "delay":
            self.sleep(fault.seconds)
            return write()
        if fault.kind == "lose":
            return None
        if fault.kind == "fail_after":
            write()
        elif fault.kind == "tear" and tear is not None:
            tear()
        raise StoreError(f"{self.url}: {cause}")

    def put(self, ref: StateRef, state: ActionState) -> None:
        self._apply("put", lambda: self.inner.put(ref, state))

    def get(self, ref: StateRef) -> ActionState | None:
        result: ActionState | None = self._apply("get", lambda: self.inner.get(ref))
        return result

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        def tear() -> None:
            if len(results) > 1:
                self.inner.put_call_results(ref, index, list(results[: len(results) // 2]))

        self._apply("put_call_results", lambda: self.inner.put_call_results(ref, index, results), tear)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self._apply("truncate_call_results", lambda: self.inner.truncate_call_results(ref, index))

    def prune_state(self, key: str, seq: int) -> None:
        self._apply("prune_state", lambda: self.inner.prune_state(key, seq))

    def get_recovery_marker(self) -> RecoveryMarker:
        return self._apply("get_recovery_marker", self.inner.get_recovery_marker)

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        self._apply("rebuild_state", lambda: self.inner.rebuild_state(markers))
