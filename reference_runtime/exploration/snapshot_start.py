"""Starting each crash scenario of a sweep from a snapshot of the crash-free run (spec PLG-16, PLG-17,
COST-4).

A sweep crashes once at every fault point and recovers. Re-executing the run up to the crash for every
point makes a sweep cost points times calls durable calls before any recovery starts. What recovery sees of
that prefix is: what the store holds, the side effects booked on the ledger, the virtual clock, and the
journal and fault-point trace that the checks read. All four are recorded once, during the crash-free
run, at every fault point: the store as a log of its writes (a snapshot is a position in the log), the
ledger and the clock as positions too. A scenario then builds the store at its point, books the prefix's
effects again, moves the clock as the prefix did, and runs only the recovery, in a fresh runner, exactly
as the runner does after a crash with no checkpoint to restore.

That is equivalent to re-executing only for an agent whose run before the crash depends on nothing the
snapshot leaves out, thread timing included (an async agent qualifies with one key per checkpoint segment
and one durable call in flight at a time, :func:`timing`), so the snapshot path is taken only when
:func:`why_not` finds nothing against it, two crash-free runs agree on everything the checks read, and one
sampled point gives the same answer both ways; otherwise the sweep re-executes, and says why.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from reference_runtime import Agent, CallId, FaultInjector, FaultPoint, Phase, Runner, RunResult, durable, observe
from reference_runtime.clock import let_time_pass
from reference_runtime.records import ActionState, CallResult, StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.forwarding import ForwardingStore

from . import reached
from .protocol import RunFunction, run_once
from .scenario import Scenario
from .verdict import PointOutcome, check

if TYPE_CHECKING:
    from .ledger import Ledger


class _Op(NamedTuple):
    kind: str
    ref: Any  # StateRef, or the business key of a prune
    at: int  # the call index written from or truncated at
    value: Any  # ActionState copy, list of CallResult, or prune seq


class WriteLog(ForwardingStore):
    """Forwards to a store and logs every write, and every miss (a miss may hide states, STORE-4), so the
    store can be rebuilt as it was at any earlier moment: a snapshot is a :meth:`position`.

    Appends to the same action state at consecutive indexes are kept as one write whose list grows, so
    rebuilding the store at a point costs the number of action states written before it, not calls."""

    def __init__(self, inner: ActionStateStore) -> None:
        super().__init__(inner)
        self.ops: list[_Op] = []
        # Kept whole even if a write ever came from another thread (an async agent's writes come from its loop).
        self._lock = threading.Lock()

    def position(self) -> tuple[int, int]:
        """Writes so far, and how many results of the last one (it may still grow)."""
        with self._lock:
            ops = self.ops
            if not ops:
                return (0, 0)
            last = ops[-1]
            return (len(ops), len(last.value) if last.kind == "calls" else 0)

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, state)
        # The runtime keeps mutating its state object after the put: log a copy of what was written.
        copy = ActionState(
            task_event=state.task_event,
            sensory_memory_updates=list(state.sensory_memory_updates),
            short_term_memory_updates=list(state.short_term_memory_updates),
            output_events=list(state.output_events),
            call_results=list(state.call_results),
            completed=state.completed,
            signature=state.signature,
        )
        with self._lock:
            self.ops.append(_Op("put", ref, 0, copy))

    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if state is None:
            with self._lock:
                self.ops.append(_Op("miss", ref, 0, None))
        return state

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        super().put_call_results(ref, index, results)
        with self._lock:
            ops = self.ops
            if ops:
                last = ops[-1]
                if last.kind == "calls" and last.ref.state_key == ref.state_key and last.at + len(last.value) == index:
                    last.value.extend(results)
                    return
            ops.append(_Op("calls", ref, index, list(results)))

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        super().truncate_call_results(ref, index)
        with self._lock:
            self.ops.append(_Op("truncate", ref, index, None))

    def prune_state(self, key: str, seq: int) -> None:
        super().prune_state(key, seq)
        with self._lock:
            self.ops.append(_Op("prune", key, 0, seq))

    def replay(self, store: ActionStateStore, position: tuple[int, int], since: tuple[int, int] = (0, 0)) -> None:
        """Write into ``store`` what this log holds from ``since`` (default: the start, into an empty
        store) to ``position``."""
        count, last_len = position
        first, done = since
        ops = self.ops
        for n in range(first - 1 if done else first, count):
            op = ops[n]
            kind = op.kind
            if kind == "calls":
                results = op.value if n < count - 1 else op.value[:last_len]
                if n == first - 1:
                    results, skip = results[done:], done  # the part written after ``since``
                    if results:
                        store.put_call_results(op.ref, op.at + skip, results)
                    continue
                if results:
                    store.put_call_results(op.ref, op.at, results)
            elif kind == "put":
                store.put(op.ref, op.value)
            elif kind == "miss":
                store.get(op.ref)
            elif kind == "truncate":
                store.truncate_call_results(op.ref, op.at)
            else:
                store.prune_state(op.ref, op.value)

    def writes(self, since: tuple[int, int], until: tuple[int, int]) -> list[tuple[Any, ...]] | None:
        """What this log wrote between two positions, one entry per call result, truncation or the like
        (misses change nothing); None if a whole state was put or a key pruned in between (spec COST-7)."""
        first, done = since
        count, last_len = until
        ops = self.ops
        out: list[tuple[Any, ...]] = []
        for n in range(first - 1 if done else first, count):
            op = ops[n]
            kind = op.kind
            if kind == "calls":
                lo = done if n == first - 1 else 0
                hi = last_len if n == count - 1 else len(op.value)
                key, at, value = op.ref.state_key, op.at, op.value
                out.extend(("calls", key, at + i, value[i]) for i in range(lo, hi))
            elif kind == "truncate":
                out.append(("truncate", op.ref.state_key, op.at))
            elif kind != "miss":
                return None
        return out

    def comparable(self) -> list[tuple[Any, ...]]:
        """The writes without what differs between two equal runs (fresh event ids, signatures over them)."""
        out: list[tuple[Any, ...]] = []
        for op in self.ops:
            if op.kind == "put":
                s: ActionState = op.value
                out.append(
                    (
                        "put",
                        op.ref.state_key,
                        s.completed,
                        [(u.path, u.value, u.object_creation) for u in s.short_term_memory_updates],
                        [(u.path, u.value, u.object_creation) for u in s.sensory_memory_updates],
                        [(e.type, e.attributes) for e in s.output_events],
                        tuple(s.call_results),
                    )
                )
            elif op.kind == "prune":
                out.append(("prune", op.ref, op.value))
            else:
                value = tuple(op.value) if op.kind == "calls" else None
                out.append((op.kind, op.ref.state_key, op.at, value))
        return out


class Mark(NamedTuple):
    """Where every recorded thing stood when a fault point was first reached."""

    trace: int  # index of the point in the trace
    store: tuple[int, int]
    ledger: tuple[int, int]
    sleeps: int
    now: float | None


class SnapshotInjector(FaultInjector):
    """Crashes nowhere; records the trace and a :class:`Mark` at the first occurrence of each point."""

    def __init__(self, log: WriteLog, ledger: Ledger | None, clock: Any) -> None:
        super().__init__()
        self.log, self.ledger, self.clock = log, ledger, clock
        #: The mark of each point's first occurrence.
        self.marks: dict[FaultPoint, Mark] = {}
        #: The mark of every point reached, by trace index.
        self.by_index: list[Mark] = []
        self._sleeps: list[float] | None = getattr(clock, "sleeps", None) if _virtual(clock) else None
        #: An async agent's count of durable calls in flight (set by :func:`record`), and the first point
        #: reached while one was: something else ran while the call's work did (:func:`timing`).
        self.in_flight: durable.InFlight | None = None
        self.busy: FaultPoint | None = None

    def reach(self, point: FaultPoint) -> None:
        trace = self.trace
        trace.append(point)
        watch = self.in_flight
        if watch is not None and watch.now and self.busy is None:
            self.busy = point
        mark = Mark(
            len(trace) - 1,
            self.log.position(),
            self.ledger.position() if self.ledger is not None else (0, 0),
            len(self._sleeps) if self._sleeps is not None else 0,
            self.clock.now() if _virtual(self.clock) else None,
        )
        self.by_index.append(mark)
        self.marks.setdefault(point, mark)


def _virtual(clock: Any) -> bool:
    return bool(getattr(clock, "virtual", False)) and callable(getattr(clock, "advance", None))


@dataclass
class Reference:
    """The crash-free run a sweep's scenarios start from, with its marks."""

    agent: type[Agent]
    inputs: Sequence[tuple[str, Any]]
    store: Callable[[], ActionStateStore]
    result: RunResult
    injector: SnapshotInjector
    log: WriteLog
    ledger_run: int
    ledger_start: tuple[int, int]
    start_sleeps: int
    start_now: float | None
    is_async: bool = False
    #: For an async agent: the first durable call that started while another's work was in flight, if any.
    overlapped: CallId | None = None
    #: Why no scenario of this sweep may start from a snapshot; None if they may.
    reason: str | None = None
    #: Journal entries made up to and including each trace index (calls journal before their
    #: after-effect point, and a crash-free run journals exactly one entry per after-effect point).
    journaled: list[int] = field(default_factory=list)
    #: Per trace index: why a crash there must re-execute (None: it may start from the snapshot).
    point_reason: list[str | None] = field(default_factory=list)
    #: Per trace index: the other keys' part of the run that a crash there lets finish before the
    #: failover, as (last point of the crashing key's block, the segment's checkpoint point); or None.
    tails: list[tuple[int, int] | None] = field(default_factory=list)
    #: Why no scenario of this sweep stops early where its recovery converges on the crash-free run
    #: (spec COST-7); None if they may.
    no_converge: str | None = None
    #: The virtual clock's sleeps and reading when the crash-free run ended (a converged scenario moves the
    #: clock as the rest of that run did).
    end_sleeps: int = 0
    end_now: float | None = None
    #: The crash-free journal with every entry stamped as made after one failover, built once.
    _stamped: list[Any] | None = None
    #: Per call id: its entry's index in the crash-free journal and its after-record point's trace index.
    _calls: tuple[dict[Any, int], dict[Any, int]] | None = None
    #: The last converged recovery checked, with the journal entries it executed itself.
    _ran: tuple[Any, list[Any]] | None = None
    #: :meth:`template`'s cache, and the crash-free run's ok entries by execution and call index.
    _templates: dict[tuple[str, int, str, int, int], list[Any] | None] = field(default_factory=dict)
    _executions: dict[tuple[str, int, str, int], dict[int, Any]] | None = None
    #: :meth:`plan`'s plans, by execution, failovers and decode limits.
    _plans: dict[tuple[Any, ...], durable.ReplayPlan | None] = field(default_factory=dict)

    def calls(self) -> tuple[dict[Any, int], dict[Any, int]]:
        if self._calls is None:
            journal = {e.call_id: i for i, e in enumerate(self.result.journal)}
            after = Phase.AFTER_RECORD
            recorded: dict[Any, int] = {}
            for i, p in enumerate(self.trace):
                if p.phase is after:
                    recorded.setdefault((*p[1:5], p[6]), i)  # the call id: key, seq, action, index, execution
            self._calls = (journal, recorded)
        return self._calls

    def template(self, where: tuple[str, int, str, int, int]) -> list[Any] | None:
        """The journal entries a recovery's replays of one action execution make, by call index
        (``durable.templates``): the crash-free run's ok entries of (key, seq, action, execution), marked
        replayed after ``failovers`` failovers; built once per execution and failover count."""
        found = self._templates.get(where)
        if found is None and where not in self._templates:
            if self._executions is None:
                self._executions = {}
                for e in self.result.journal:
                    if e.source == "executed" and e.outcome == "ok":
                        c = e.call_id
                        ran = self._executions.setdefault((c.key, c.seq, c.action, c.execution), {})
                        ran.setdefault(c.call_index, e)
            calls = self._executions.get(where[:4])
            if calls:
                found = [None] * (max(calls) + 1)
                for i, e in calls.items():
                    found[i] = e._replace(source="replayed", attempt=where[4])
            self._templates[where] = found
        return found

    def plan(self, where: tuple[str, int, str, int, int], limits: Any) -> durable.ReplayPlan | None:
        """The replay plan the recoveries of one action execution share (``durable.plans``): as long as its
        :meth:`template`, filled by the recoveries' replays; decoded values are kept per decode limits."""
        key = (where, limits)
        found = self._plans.get(key)
        if found is None and key not in self._plans:
            template = self.template(where)
            found = self._plans[key] = durable.ReplayPlan(len(template)) if template else None
        return found

    @contextlib.contextmanager
    def replaying(self, plan: bool = True) -> Iterator[None]:
        """Recoveries run in the block journal their replays from :meth:`template` and, with ``plan``, replay
        from :meth:`plan` (``durable.templates``, ``durable.plans``, unset again after the block)."""
        durable.templates, durable.plans = self.template, (self.plan if plan else None)
        try:
            yield
        finally:
            durable.templates = durable.plans = None

    def stamped(self, failovers: int) -> list[Any]:
        """The crash-free journal's entries as a recovery after ``failovers`` failovers journals them."""
        if failovers != 1:
            return [e._replace(attempt=failovers) for e in self.result.journal]
        if self._stamped is None:
            self._stamped = [e._replace(attempt=1) for e in self.result.journal]
        return self._stamped

    @property
    def trace(self) -> list[FaultPoint]:
        return self.injector.trace

    def mark_at(self, index: int) -> Mark:
        """The mark of the point at trace ``index``."""
        return self.injector.by_index[index]

    def usable(self, point: FaultPoint) -> str | None:
        """None if a crash at ``point`` may start from its snapshot, else why not."""
        if self.reason is not None:
            return self.reason
        mark = self.injector.marks.get(point)
        if mark is None:
            return "the point was not reached by the crash-free run"
        return self.point_reason[mark.trace]


def why_not(
    ref: Reference, store: Callable[[], ActionStateStore], ledger: Ledger | None, run: RunFunction | None = None
) -> str | None:
    """What rules out snapshots for a whole sweep before anything runs (PLG-17), or None."""
    from reference_runtime.stores import InMemoryStore, StoreFactory
    from reference_runtime.stores.registry import BUILT_IN

    if run is not None:
        return "a runner under test drives the agent: only the reference Runner's recovery starts from a snapshot"
    if ref.is_async:
        reason = timing(ref)
        if reason is not None:
            return reason
    scheme = store.scheme if isinstance(store, StoreFactory) else None
    if scheme is not None and (scheme.name not in ("memory", "sqlite") or scheme.origin != BUILT_IN):
        return f"the {scheme.name}: store is rebuilt at a point only for the built-in memory: and sqlite: stores"
    if store is not InMemoryStore and scheme is None:
        return (
            f"the store factory {getattr(store, '__qualname__', type(store).__name__)} is not a built-in "
            "memory: or sqlite: store: it may do more than open a store (reset a fake, say) for every run"
        )
    if ledger is not None and ledger.has_run_hooks():
        return "durable.world() fakes: what the run before the crash did to them is not in the snapshot"
    return None


def timing(ref: Reference) -> str | None:
    """Why what the store holds at a crash of ``ref``'s async agent may depend on thread timing, or None.

    An async action yields while its durable call's work runs on the pool, and the event loop then runs
    whatever else is ready: another key's task, or another call of the same action (a parallel batch,
    gathered calls). Whichever finishes first writes first, so the run up to a point, and a crash's store,
    differ from run to run, and a crash of one key lets another key's ready task run on until it is
    cancelled. With one key per checkpoint segment there is one task, and with never two calls in flight at
    once and no fault point reached while one is (counted by :class:`~reference_runtime.durable.InFlight`
    during the crash-free runs) the loop only waits while a call runs: every write and fault point comes in
    the action's own order, as in a synchronous agent, and a crash stops nothing in flight. An agent that
    overlaps its calls only in some runs differs between the two crash-free runs or at the sampled point, as
    any other nondeterminism (spec PLG-16, PLG-17)."""
    keys: list[Any] = []
    for p in ref.trace:
        if p.phase is Phase.CHECKPOINT:
            keys = []
        elif p.key not in keys:
            keys.append(p.key)
            if len(keys) > 1:
                return (
                    f"the agent has async actions and keys {keys[0]!r} and {keys[1]!r} run in one checkpoint "
                    "segment: their tasks interleave as the thread pool's timing lets them, so what the store "
                    "holds at a crash depends on it"
                )
    if ref.overlapped is not None:
        return (
            f"the agent's async actions had two durable calls in flight at once ({ref.overlapped} started while "
            "another ran: a parallel batch or gathered calls), so which finishes first, and what the store holds "
            "at a crash, depends on thread timing"
        )
    busy = ref.injector.busy
    if busy is not None:
        return (
            f"the agent's async actions reached {busy.describe()} while a durable call's work was in flight (a "
            "task of their own ran meanwhile), so what the store holds at a crash depends on thread timing"
        )
    return None


def record(
    agent: type[Agent],
    inputs: Sequence[tuple[str, Any]],
    store: Callable[[], ActionStateStore],
    ledger: Ledger | None,
    options: dict[str, Any],
    label: str = "the crash-free run",
    baseline: bool = True,
    *,
    run: RunFunction | None = None,
) -> Reference:
    """Run ``agent`` crash-free with every fault point marked (the sweep's baseline run)."""
    if ledger is not None:
        ledger.new_run(label, baseline=baseline)
    ledger_start = ledger.position() if ledger is not None else (0, 0)
    clock: Any = options.get("clock")
    let_time_pass(clock)  # as learn() does: compared runs never share an instant (PLG-13)
    log = WriteLog(store())
    injector = SnapshotInjector(log, ledger, clock)
    sleeps = getattr(clock, "sleeps", None) if _virtual(clock) else None
    start_sleeps = len(sleeps) if sleeps is not None else 0
    start_now = clock.now() if _virtual(clock) else None
    runner = Runner(agent, log, injector=injector, **options) if run is None else None
    is_async = runner is not None and any(spec.is_async for spec in runner.actions)
    watch = durable.InFlight() if is_async else None
    injector.in_flight = durable.in_flight = watch
    try:
        result = runner.run(inputs) if runner is not None else run_once(run, agent, inputs, log, injector, options)
    finally:
        durable.in_flight = None
    reached.crash_free(agent, injector.trace)  # crash coverage (COV-2)
    reference = Reference(
        agent,
        inputs,
        store,
        result,
        injector,
        log,
        ledger.run if ledger is not None else 0,
        ledger_start,
        start_sleeps,
        start_now,
    )
    reference.is_async = is_async
    reference.overlapped = watch.overlapped if watch is not None else None
    if sleeps is not None:
        reference.end_sleeps = len(sleeps)
    reference.end_now = clock.now() if _virtual(clock) else None
    return reference


def prepare(ref: Reference, again: Reference | None) -> None:
    """Fill in ``ref``'s per-point facts and whether it may be used at all; ``again`` is a second
    crash-free run (None when a reason was already found)."""
    trace = ref.trace
    journal = ref.result.journal
    effects = [p for p in trace if p.phase is Phase.AFTER_EFFECT]
    if len(effects) != len(journal) or any(
        e.source != "executed" or e.call_id != (*p[1:5], p[6]) for e, p in zip(journal, effects, strict=False)
    ):
        ref.reason = ref.reason or "the crash-free run's journal does not line up with its after-effect points"
    if again is not None and ref.reason is None:
        ref.reason = (timing(again) if again.is_async else None) or differs(ref, again)
    count, journaled = 0, []
    for p in trace:
        count += p.phase is Phase.AFTER_EFFECT
        journaled.append(count)
    ref.journaled = journaled
    # Recovery restores the last completed checkpoint, which no snapshot holds: points after the first one
    # re-execute. Before it, the keys of the segment run one after another, and a crash of one key lets
    # the keys after it run to their end before the failover (the runner's synchronous path): a crash
    # there sees the run up to the point plus the rest of the segment from the end of the crashing key's
    # block, its tail (trace indexes, end exclusive).
    first_checkpoint = next((i for i, p in enumerate(trace) if p.phase is Phase.CHECKPOINT), len(trace))
    block_end: dict[str | None, int] = {}
    for i, p in enumerate(trace[:first_checkpoint]):
        block_end[p.key] = i
    reasons: list[str | None] = []
    tails: list[tuple[int, int] | None] = []
    for i, p in enumerate(trace):
        last = block_end.get(p.key, i)
        if i > first_checkpoint:
            reasons.append("a checkpoint completed before this point: recovery restores it")
        elif first_checkpoint == len(trace) and last + 1 < len(trace):
            reasons.append("other keys run after this key and finish before the failover, and no checkpoint ends them")
        else:
            reasons.append(None)
        tails.append((last, first_checkpoint) if reasons[-1] is None and last + 1 < first_checkpoint else None)
    ref.point_reason = reasons
    ref.tails = tails
    if ref.no_converge is None and len(set(trace)) != len(trace):
        ref.no_converge = "the crash-free run reaches a fault point more than once"


def differs(a: Reference, b: Reference) -> str | None:
    """What two crash-free runs disagree on among what a scenario's checks read, or None."""
    ra, rb = a.result, b.result
    if a.trace != b.trace:
        return "two crash-free runs reached different fault points (nondeterministic agent)"
    if [e[:5] for e in ra.journal] != [e[:5] for e in rb.journal]:
        return "two crash-free runs made different durable calls (nondeterministic agent)"
    if ra.outputs != rb.outputs or dict(ra.memory) != dict(rb.memory):
        return "two crash-free runs produced different outputs or memory (nondeterministic agent)"
    if a.log.comparable() != b.log.comparable():
        return "two crash-free runs wrote different records (nondeterministic results)"
    return None


class Joined(Sequence[Any]):
    """Read-only journal made of parts of other lists, kept as (list, start, stop) without copying: a sweep
    keeps every point's result, and the crash-free run's entries that a converged or shared recovery's
    journal repeats would otherwise be copied once per point, quadratic in a long agent (P9b)."""

    __slots__ = ("_len", "_parts")

    def __init__(self, *parts: tuple[Sequence[Any], int, int]) -> None:
        self._parts = [(seq, start, stop) for seq, start, stop in parts if stop > start]
        self._len = sum(stop - start for _, start, stop in self._parts)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Any]:
        for seq, start, stop in self._parts:
            yield from itertools.islice(seq, start, stop)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return list(self)[index]
            out: list[Any] = []
            for seq, first, last in self._parts:  # each part's share of the range, sliced where it lives
                size = last - first
                if stop > 0 and start < size:
                    out += seq[first + max(start, 0) : first + min(stop, size)]
                start, stop = start - size, stop - size
            return out
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("journal index out of range")
        for seq, start, stop in self._parts:
            if index < stop - start:
                return seq[start + index]
            index -= stop - start
        raise IndexError("journal index out of range")  # not reached: the length bounds the parts

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        """As ``list.index``, searched part by part where each part lives (a check finds a crash in a trace)."""
        start, stop, _ = slice(start, stop).indices(self._len)
        offset = 0
        for seq, first, last in self._parts:
            size = last - first
            lo, hi = max(start - offset, 0), min(stop - offset, size)
            if lo < hi:
                try:
                    return offset + seq.index(value, first + lo, first + hi) - first
                except ValueError:
                    pass
            offset += size
        raise ValueError(f"{value!r} is not in the journal view")

    def after(self, n: int) -> Joined:
        """The entries from index ``n`` on, as parts of the same lists."""
        parts = []
        for seq, start, stop in self._parts:
            size = stop - start
            if n < size:
                parts.append((seq, start + max(n, 0), stop))
            n -= size
        return Joined(*parts)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        return repr(list(self))


class Recovery(NamedTuple):
    """The recovery run of a scenario started from a snapshot, kept for the points whose snapshots hold
    the same store, clock and so the same recovery."""

    result: RunResult
    trace: list[FaultPoint]  # the recovery's fault points (after the crash)
    journal: Sequence[Any]  # the recovery's journal entries
    ledger_run: int
    ledger_span: tuple[tuple[int, int], tuple[int, int]]
    sleeps: list[float]
    elapsed: float | None
    #: For a recovery stopped where it converged on the crash-free run (spec COST-7): how many of
    #: ``journal`` it made itself (the rest is the crash-free run's); None for a recovery run to its end.
    converged: int | None = None
    #: Where in ``journal`` the first entry the recovery did not replay is (``Runner._first_ran``): every
    #: entry before it is a replay; ``converged`` when there is none.
    ran_from: int = 0


def recovery_key(ref: Reference, point: FaultPoint) -> tuple[Any, ...]:
    """Points with equal keys have the same recovery: the store, the clock and the prefix's sleeps at the
    crash are the same, and recovery starts from nothing else (the journal, trace and ledger of the run
    before the crash are read only by the checks)."""
    mark = ref.injector.marks[point]
    now = None if mark.now is None or ref.start_now is None else mark.now - ref.start_now
    return (mark.store, mark.sleeps, now, ref.tails[mark.trace])


def start(
    ref: Reference,
    point: FaultPoint,
    scenario: Scenario,
    ledger: Ledger | None,
    options: dict[str, Any],
    shared: Recovery | None = None,
    trace_recovery: bool = False,
    converge: bool = True,
) -> tuple[RunResult, FaultInjector, Recovery]:
    """Run ``scenario`` (one crash at ``point``) from the snapshot at ``point``: what ``run_scenario`` does,
    without running the agent up to the crash. With ``shared`` (the recovery of a point with the same
    :func:`recovery_key`), that recovery stands for this one's instead of running again.

    The returned injector's trace ends at the crash unless ``trace_recovery``: after the last crash of a
    scenario no fault point can change what :func:`~reference_runtime.exploration.verdict.check` finds (a call
    whose record first lands in the last attempt was not recorded before it), and a recovery with no injector
    does not even build its points.

    With ``converge`` (and nothing ruling it out: :attr:`Reference.no_converge`, a tail, a ledger) the
    recovery stops at the first later before-call point of the crashed action at which the store holds what
    the crash-free run's store held there, and the rest of the scenario is the crash-free run's (spec
    COST-7)."""
    mark = ref.injector.marks[point]
    tail = ref.tails[mark.trace]
    # The spans of the crash-free run that happened before the failover: up to the point, then the tail.
    start_mark = Mark(-1, (0, 0), ref.ledger_start, ref.start_sleeps, ref.start_now)
    spans = [(start_mark, mark)]
    if tail is not None:
        spans.append((ref.mark_at(tail[0]), ref.mark_at(tail[1])))
    if ledger is not None:
        ledger.new_run(f"the run crashing at {scenario.describe()}")
        for begin, end in spans:
            ledger.rebook(ref.ledger_run, begin.ledger, end.ledger)
    clock: Any = options.get("clock")
    let_time_pass(clock)
    virtual = mark.now is not None and ref.start_now is not None
    if virtual:
        for begin, end in spans:
            slept = list(getattr(clock, "sleeps", [])[begin.sleeps : end.sleeps])
            _move_clock(clock, slept, (end.now or 0.0) - (begin.now or 0.0))
    crash = ref.trace[mark.trace]
    reached.crashed(ref.agent, [crash])  # crash coverage (COV-2)
    # The crash-free run's points and entries before the failover: up to the point, then the tail. Kept as
    # parts of its lists, not copied: a sweep starts one scenario per point, each as deep as its point (P9b).
    before = [(ref.trace, 0, mark.trace + 1)]
    prefix = [(ref.result.journal, 0, ref.journaled[mark.trace])]
    if tail is not None:
        before.append((ref.trace, tail[0] + 1, tail[1]))
        prefix.append((ref.result.journal, ref.journaled[tail[0]], ref.journaled[tail[1]]))
    if shared is not None:
        let_time_pass(clock)  # the failover's
        if virtual:
            _move_clock(clock, shared.sleeps, shared.elapsed)
        if ledger is not None:
            ledger.rebook(shared.ledger_run, *shared.ledger_span)
        r = shared.result
        result = RunResult(
            emitted=r.emitted,
            memory=r.memory,
            journal=Joined(*prefix, (shared.journal, 0, len(shared.journal))),
            failovers=r.failovers,
            crashes=[crash],
        )
        seen = Joined(*before, (shared.trace, 0, len(shared.trace)))
        return result, FaultInjector(trace=seen, fired=[crash], must_fire=False), shared  # type: ignore[arg-type]
    store: ActionStateStore = ref.store()
    ref.log.replay(store, mark.store)
    if tail is not None:
        ref.log.replay(store, ref.mark_at(tail[1]).store, ref.mark_at(tail[0]).store)
    # Crash coverage (COV-3) counts what recoveries run: a scenario it watches runs to its end.
    watch = converge and tail is None and ledger is None and ref.no_converge is None and observe.current is None
    # A list where the recovery's points are recorded after the crash-free run's; else a view, read only.
    trace: Any = list(Joined(*before)) if trace_recovery else Joined(*before)
    injector: FaultInjector
    if watch:
        store = WriteLog(store)
        injector = _Converge(ref, mark, store, trace, crash, trace_recovery)
    else:
        injector = FaultInjector(trace=trace, fired=[crash], must_fire=False)
    runner = Runner(ref.agent, store, injector=injector if trace_recovery or watch else None, **options)
    if isinstance(injector, _Converge):
        injector.runner = runner
    # The entries made before the failover are the crash-free run's, kept as its parts: the runner journals
    # from the failover on, so no scenario copies the calls before its crash (P9b).
    made = sum(stop - start for _, start, stop in prefix)
    runner.crashes.append(crash)
    runner.fail_over()
    sleeps = getattr(clock, "sleeps", None) if virtual else None
    sleeps_before = len(sleeps) if sleeps is not None else 0
    now_before = clock.now() if virtual else None
    ledger_before = ledger.position() if ledger is not None else (0, 0)
    own: int | None = None
    with ref.replaying():
        try:
            result = runner.run(ref.inputs)
            journal = result.journal = Joined(*prefix, (runner.journal, 0, len(runner.journal)))
        except _Converged as stop:
            own = len(runner.journal)
            result, journal = _splice(ref, runner, injector, stop.mark, clock if virtual else None, prefix)
    recovery = Recovery(
        result,
        injector.trace[len(trace) :],
        journal.after(made),
        ledger.run if ledger is not None else 0,
        (ledger_before, ledger.position() if ledger is not None else (0, 0)),
        list(sleeps[sleeps_before:]) if sleeps is not None else [],
        clock.now() - now_before if now_before is not None else None,
        own,
        runner._first_ran if runner._first_ran is not None else (own or 0),
    )
    return result, injector, recovery


def _move_clock(clock: Any, sleeps: list[float], elapsed: float | None) -> None:
    """Sleep as a run did (a virtual clock lists its sleeps), then make up any other time it let pass."""
    before = clock.now()
    if hasattr(clock, "sleeps"):
        for seconds in sleeps:
            clock.sleep(seconds)
    left = (elapsed or 0.0) - (clock.now() - before)
    if left > 0:
        clock.advance(left)


class _Converged(BaseException):
    """Raised at the fault point where a recovery's state equals the crash-free run's (spec COST-7). A
    ``BaseException``, as :class:`~reference_runtime.SimulatedCrash` is, so no agent code catches it."""

    def __init__(self, mark: Mark) -> None:
        super().__init__(mark)
        self.mark = mark


#: Later before-call points a recovery compares with the crash-free run before it gives up: one where it
#: re-ran the crashed call and wrote what the crash-free run wrote, and a couple of spares.
_TRIES = 3


class _Converge(FaultInjector):
    """The injector of a recovery started from a snapshot: crashes nowhere, records the trace if asked, and
    stops the run with :class:`_Converged` at the first before-call point at which the
    recovery's writes since the failover are exactly the crash-free run's writes between the crash and that
    point, so that the store holds what it held in the crash-free run (spec COST-7)."""

    def __init__(
        self, ref: Reference, crash: Mark, log: WriteLog, trace: list[FaultPoint], point: FaultPoint, record: bool
    ) -> None:
        super().__init__(trace=trace, fired=[point], must_fire=False, record_trace=record)
        self._ref, self._crash, self._log = ref, crash, log
        self._marks = ref.injector.marks
        self._tries = _TRIES
        self.runner: Runner | None = None
        #: Replayed calls need not pass their before-call points here: none of them can be where a recovery
        #: converges (the store still holds records past it), and no trace is kept.
        self.unwatched_replays = not record

    def reach(self, point: FaultPoint) -> None:
        if self.record_trace:
            self.trace.append(point)
        if point[0] is not _BEFORE_CALL or self._tries <= 0:
            return
        mark = self._marks.get(point)
        crash = self._crash
        if mark is None or mark.store < crash.store:
            return
        self._tries -= 1
        ours = self._log.writes((0, 0), self._log.position())
        theirs = self._ref.log.writes(crash.store, mark.store)
        if ours is None or ours != theirs:
            return
        # The outputs emitted so far (those of the inputs finished before this one) are the crash-free run's.
        emitted = self.runner._emitted if self.runner is not None else []
        base = self._ref.result.emitted
        if len(emitted) > len(base) or any(
            _emitted_key(a) != _emitted_key(b) for a, b in zip(emitted, base[: len(emitted)], strict=True)
        ):
            return
        raise _Converged(mark)


_BEFORE_CALL = Phase.BEFORE_CALL


def _splice(
    ref: Reference,
    runner: Runner,
    injector: FaultInjector,
    mark: Mark,
    clock: Any,
    prefix: list[tuple[Sequence[Any], int, int]],
) -> tuple[RunResult, Joined]:
    """The result of a recovery stopped at ``mark`` (:class:`_Converged`): what it did up to there, then the
    crash-free run's rest, its journal entries stamped with the recovery's failovers (spec COST-7): the
    crash-free run's ``prefix`` parts, the runner's journal since the failover, the rest. Returned beside
    the result, as the view it is."""
    base = ref.result
    emitted = list(runner._emitted)
    done = len(emitted)
    if injector.record_trace:
        injector.trace.extend(ref.trace[mark.trace + 1 :])  # the point at ``mark`` is already in
    if clock is not None:
        sleeps = list(getattr(clock, "sleeps", [])[mark.sleeps : ref.end_sleeps])
        _move_clock(clock, sleeps, (ref.end_now or 0.0) - (mark.now or 0.0))
    stamped = ref.stamped(runner.failovers)
    journal = Joined(*prefix, *_own_parts(ref, runner), (stamped, ref.journaled[mark.trace], len(stamped)))
    result = RunResult(
        emitted=[*emitted, *base.emitted[done:]],
        memory=base.memory,
        journal=journal,
        failovers=runner.failovers,
        crashes=list(runner.crashes),
    )
    return result, journal


def _own_parts(ref: Reference, runner: Runner) -> list[tuple[Sequence[Any], int, int]]:
    """What ``runner`` journaled since the failover, as parts: its leading replays, when they are the
    replays of one action execution from its first call on, as the part of that execution's template
    (:meth:`Reference.template`) they equal, so that a sweep keeps no copy of them per point; the rest as
    a copy. A recovery from a crash at call c replays calls 0 .. c-1 first (P9b)."""
    journal = runner.journal
    end = len(journal)
    replayed = end if runner._first_ran is None else runner._first_ran  # the entries before its first own call
    if replayed > 0:
        first = journal[0]
        c = first.call_id
        template = ref._templates.get((c.key, c.seq, c.action, c.execution, first.attempt))
        # One comparison in C of the two runs of entries; equal entries are the same journal either way.
        if template is not None and journal[:replayed] == template[:replayed]:
            return [(template, 0, replayed), (journal[replayed:], 0, end - replayed)]
    return [(journal, 0, end)]


def _emitted_key(e: Any) -> tuple[Any, ...]:
    return (e.key, e.seq, e.action, e.event.type, e.event.attributes)


def check_converged(
    ref: Reference, scenario: Scenario, result: RunResult, injector: FaultInjector, recovery: Recovery
) -> PointOutcome:
    """:func:`~reference_runtime.exploration.verdict.check` of a scenario whose recovery converged (spec
    COST-7), at the cost of what the recovery ran rather than of the whole run: the same outcome, read off the
    entries that can break an invariant. Those are the calls the recovery executed itself and the crash-free
    entries before the crash of the calls it executed again; every other crash-free entry (before the crash,
    or in the rest taken from the crash-free run) is one execution of a call the crash-free run executed once,
    with no record persisted before the crash for the rest, so it counts towards no violation, repeat or
    re-execution. Falls back to the full check when the recovery's calls are not disjoint from that rest."""
    assert recovery.converged is not None
    crash = injector.fired[0]
    m = ref.injector.marks[crash].trace
    k = ref.journaled[m]
    rest = len(ref.result.journal) - (len(recovery.journal) - recovery.converged)
    # The check reads a journal's executed entries only; the recovery's are the same for the points sharing it.
    if ref._ran is None or ref._ran[0] is not recovery:
        ran = recovery.journal[recovery.ran_from : recovery.converged]  # what it did not replay: a few
        ref._ran = (recovery, [e for e in ran if e.source == "executed"])
    own = ref._ran[1]
    executed = {e.call_id for e in own}
    where, recorded = ref.calls()
    if any(where.get(c, -1) >= rest for c in executed):
        return check(scenario, ref.result, result, injector)
    # A recovery shared with an earlier point may have converged before this crash: the crash-free rest then
    # begins with calls this scenario made before its crash too.
    overlap = recovery.journal[recovery.converged : recovery.converged + k - rest] if rest < k else []
    executed.update(e.call_id for e in overlap if e.source == "executed")
    base = ref.result.journal
    before = [base[where[c]] for c in executed if where.get(c, k) < k]
    landed = [ref.trace[recorded[c]] for c in executed if recorded.get(c, m) < m]
    reduced = RunResult(
        emitted=result.emitted,
        memory=result.memory,
        journal=[*before, *own, *overlap],
        failovers=result.failovers,
        crashes=result.crashes,
    )
    seen = FaultInjector(trace=[*landed, crash], fired=list(injector.fired), must_fire=False)
    outcome = check(scenario, ref.result, reduced, seen)
    outcome.result = result
    return outcome
