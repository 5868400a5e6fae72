"""Fault points: named places where the runtime can be made to crash (spec FLT-*).

The runtime calls :meth:`FaultInjector.reach` at every fault point. An injector records the trace of
points reached and raises :class:`SimulatedCrash` at the ones its plan selects. The pytest plugin drives
all crash injection through this module.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import parse_qsl, quote, urlencode

from .errors import DurableError, location_parts


class Phase(enum.StrEnum):
    """Where, relative to a durable call or an action, a fault point sits."""

    BEFORE_CALL = "before-call"  # the call is about to be looked up / started; nothing persisted for it
    AFTER_PENDING = "after-pending"  # PENDING persisted (reconciler / batch path), work not started
    AFTER_EFFECT = "after-effect"  # the function returned or raised; its record is not yet persisted
    AFTER_RECORD = "after-record"  # the terminal record is persisted
    BEFORE_COMPLETE = "before-complete"  # the action finished; its completion is not yet persisted
    AFTER_COMPLETE = "after-complete"  # the completed action state is persisted
    BETWEEN_ACTIONS = "between-actions"  # after one action of a run, before the next starts
    CHECKPOINT = "checkpoint"  # the checkpoint snapshot is taken but not yet committed

    def __str__(self) -> str:
        return self.value


class FaultPoint(NamedTuple):
    """One reached fault point. ``call_index`` is set for call phases, ``action`` for action phases.
    ``execution`` is the ordinal (from 1) of the action's execution within its input, so every execution
    of an action that runs several times for one input (a tool loop) has points of its own (FLT-6).

    A named tuple rather than a frozen dataclass: one is built at every fault point of every call, and
    tuple construction is several times cheaper (benchmark P4)."""

    phase: Phase
    key: str | None = None
    seq: int | None = None
    action: str | None = None
    call_index: int | None = None
    function_id: str | None = None
    execution: int = 1

    def label(self) -> str:
        """A short stable label, e.g. ``call3:after-effect`` or ``greet:before-complete``."""
        if self.call_index is not None:
            return f"call{self.call_index}:{self.phase.value}"
        if self.action is not None:
            return f"{self.action}:{self.phase.value}"
        return self.phase.value

    def describe(self) -> str:
        parts = [self.phase.value, *location_parts(self.key, self.seq, self.action, self.call_index)]
        if self.execution != 1:
            parts.append(f"execution={self.execution}")
        if self.function_id is not None:
            parts.append(f"function={self.function_id}")
        return " ".join(parts)


class SimulatedCrash(BaseException):
    """Raised at a selected fault point. A ``BaseException`` so ``except Exception`` in user code cannot
    swallow it, as nothing can swallow a real process kill."""

    def __init__(self, point: FaultPoint) -> None:
        self.point = point
        super().__init__(f"simulated crash at {point.describe()}")


@dataclass(frozen=True)
class CrashAt:
    """Selects fault points; ``None`` fields match anything. ``nth`` picks the n-th match (1-based) among
    the points reached while this selector is armed, so a point reached again during recovery is counted
    afresh only if the selector is re-armed. ``execution`` selects the n-th execution of the action within
    its input (FLT-6); ``None`` matches every execution, so a selector without it fires at the first
    execution that reaches a matching point."""

    phase: Phase | None = None
    key: str | None = None
    seq: int | None = None
    action: str | None = None
    call_index: int | None = None
    nth: int = 1
    execution: int | None = None

    def matches(self, point: FaultPoint) -> bool:
        return (
            (self.phase is None or self.phase == point.phase)
            and (self.key is None or self.key == point.key)
            and (self.seq is None or self.seq == point.seq)
            and (self.action is None or self.action == point.action)
            and (self.call_index is None or self.call_index == point.call_index)
            and (self.execution is None or self.execution == point.execution)
        )

    def describe(self) -> str:
        """The fields that narrow this selector, e.g. ``CrashAt(after-effect, call_index=1)``."""
        parts = [] if self.phase is None else [self.phase.value]
        parts += location_parts(self.key, self.seq, self.action, self.call_index)
        if self.execution is not None:
            parts.append(f"execution={self.execution}")
        if self.nth != 1:
            parts.append(f"nth={self.nth}")
        return f"CrashAt({', '.join(parts)})"

    @classmethod
    def point(cls, point: FaultPoint) -> CrashAt:
        """A selector for exactly this point (its first occurrence); a point of an action's first
        execution gets no ``execution`` field, so its selector reads as it always did (FLT-6)."""
        execution = None if point.execution == 1 else point.execution
        return cls(point.phase, point.key, point.seq, point.action, point.call_index, 1, execution)

    @classmethod
    def parse(cls, text: str) -> CrashAt:
        """Parse a selector written as text (the one grammar of crash selectors, spec PLG-5)::

            call3:after-effect                       # the first call-3 after-effect point of any key
            call3:after-effect?key=order-1&seq=0     # narrowed to one input
            handle:before-complete?nth=2             # the second time action ``handle`` is about to complete
            call0:after-record?key=k&seq=0&action=chat&execution=2  # in the 2nd execution of ``chat``
            checkpoint                               # a phase alone

        The head is a :meth:`FaultPoint.label`; the query narrows it by ``key``, ``seq``, ``action``,
        ``execution`` (the n-th execution of the action within its input, FLT-6; absent, any execution) and
        ``nth``. Anything else raises :class:`ScheduleSyntaxError` naming the text and what is wrong."""
        head, _, query = text.strip().partition("?")
        name, sep, tail = head.rpartition(":")
        try:
            phase = Phase(tail if sep else head)
        except ValueError:
            phases = ", ".join(p.value for p in Phase)
            raise ScheduleSyntaxError(f"crash selector {text!r}: unknown phase (one of {phases})") from None
        call_index = int(name[4:]) if sep and name.startswith("call") and name[4:].isdigit() else None
        action = name if sep and call_index is None else None
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError as exc:
            raise ScheduleSyntaxError(
                f"crash selector {text!r}: the part after '?' must be name=value pairs joined by '&' ({exc})"
            ) from None
        fields: dict[str, str] = {}
        for field_name, value in pairs:
            if field_name not in ("key", "seq", "action", "execution", "nth") or field_name in fields:
                raise ScheduleSyntaxError(f"crash selector {text!r}: unknown or repeated field {field_name!r}")
            fields[field_name] = value
        for field_name in ("seq", "execution", "nth"):
            number = fields.get(field_name)
            # isascii: str.isdigit admits digits such as '²' that int() refuses; 18 digits keep int() cheap.
            if number is not None and not (number.isascii() and number.isdigit() and len(number) <= 18):
                raise ScheduleSyntaxError(f"crash selector {text!r}: {field_name} must be a non-negative integer")
        nth = int(fields.get("nth", "1"))
        if nth < 1:
            raise ScheduleSyntaxError(f"crash selector {text!r}: nth counts from 1")
        execution = None if "execution" not in fields else int(fields["execution"])
        if execution is not None and execution < 1:
            raise ScheduleSyntaxError(f"crash selector {text!r}: execution counts from 1")
        seq = fields.get("seq")
        return cls(
            phase,
            fields.get("key"),
            None if seq is None else int(seq),
            fields.get("action", action),
            call_index,
            nth,
            execution,
        )

    def text(self) -> str:
        """The text form of this selector, which :meth:`parse` reads back; the short label
        (``call3:after-effect``) with a query only for the fields it does not say."""
        if self.phase is None:
            raise ScheduleSyntaxError(f"{self!r}: a selector in a schedule needs a phase")
        if self.call_index is not None:
            head = f"call{self.call_index}:{self.phase.value}"
        elif self.action is not None and self.key is None and self.seq is None:
            head = f"{self.action}:{self.phase.value}"
        else:
            head = self.phase.value
        query: list[tuple[str, str]] = []
        if self.key is not None:
            query.append(("key", self.key))
        if self.seq is not None:
            query.append(("seq", str(self.seq)))
        if self.action is not None and not head.startswith(f"{self.action}:"):
            query.append(("action", self.action))
        if self.execution is not None:
            query.append(("execution", str(self.execution)))
        if self.nth != 1:
            query.append(("nth", str(self.nth)))
        return head + ("?" + urlencode(query, quote_via=quote) if query else "")


class ScheduleSyntaxError(ValueError):
    """A crash selector string that cannot be parsed; the message names the text and what is wrong."""


@dataclass
class FaultInjector:
    """Records every fault point reached and crashes at the first armed selector that matches.

    ``plan`` is consumed in order: the first selector is armed; when it fires, the next one is armed
    (it may fire during the recovery that follows). Thread-safe, since durable work runs on a pool.

    ``must_fire`` (default): a run that ends with selectors still armed raises
    :class:`CrashNotReachedError` (DOC-5), since a crash test whose crash never happened would pass
    without testing anything. ``must_fire=False`` lets a plan end unfinished (schedules drawn at random,
    whose later crashes recovery may never reach); :attr:`pending` then says how many did not fire.
    """

    plan: list[CrashAt] = field(default_factory=list)
    trace: list[FaultPoint] = field(default_factory=list)
    fired: list[FaultPoint] = field(default_factory=list)
    record_trace: bool = True
    must_fire: bool = True

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._matches = 0

    def arm(self, selectors: Iterable[CrashAt]) -> None:
        with self._lock:
            self.plan.extend(selectors)

    @property
    def pending(self) -> int:
        return len(self.plan)

    def check_fired(self) -> None:
        """Raise :class:`CrashNotReachedError` if ``must_fire`` and a selector never fired (DOC-5)."""
        if self.must_fire and self.plan:
            raise CrashNotReachedError(list(self.plan), [p.label() for p in self.trace], len(self.fired))

    def recorder(self) -> Callable[[FaultPoint], None]:
        """What to hand the fault points of one action execution to: :meth:`reach`, or, when nothing is
        armed (a crash-free run, or every crash has fired), just ``trace.append``, since nothing can
        fire before the action ends. Plans change between runs (:meth:`arm`), never during one."""
        if self.plan or type(self).reach is not FaultInjector.reach:  # a subclass may watch every point
            return self.reach
        return self.trace.append if self.record_trace else _ignore

    def reach(self, point: FaultPoint) -> None:
        try:
            armed: CrashAt | None = self.plan[0]
        except IndexError:  # nothing armed (executions skip reach then: see recorder)
            armed = None
        if armed is None or not armed.matches(point):
            # Most points select nothing: no lock (list.append is atomic). A point racing another thread's
            # crash may miss the selector armed next, as it would miss it in a real process.
            if self.record_trace:
                self.trace.append(point)
            return
        with self._lock:
            if self.record_trace:
                self.trace.append(point)
            if not self.plan or not self.plan[0].matches(point):
                return
            self._matches += 1
            if self._matches < self.plan[0].nth:
                return
            self.plan.pop(0)
            self._matches = 0
            self.fired.append(point)
        raise SimulatedCrash(point)


class CrashNotReachedError(DurableError, AssertionError):
    """A run ended while crash selectors were still armed: the crash the test asked for never happened.

    An ``AssertionError`` too, so a test using it fails rather than errors. ``unfired`` are the selectors
    left, ``reached`` the labels of the fault points the run reached (in order, repeats removed)."""

    def __init__(self, unfired: list[CrashAt], reached: list[str], fired: int) -> None:
        self.unfired = unfired
        self.reached = list(dict.fromkeys(reached))
        calls = sorted({int(label[4:].split(":")[0]) for label in self.reached if label.startswith("call")})
        made = f"durable calls with index {calls[0]}..{calls[-1]}" if calls else "no durable call"
        super().__init__(
            f"crash selector(s) never fired: {', '.join(c.describe() for c in unfired)} ({fired} fired before); "
            f"the run made {made} and reached {self.reached}. Select a point the run reaches, or pass "
            "FaultInjector(..., must_fire=False) if the crash is optional (DOC-5)"
        )


def _ignore(point: FaultPoint) -> None:
    return None
