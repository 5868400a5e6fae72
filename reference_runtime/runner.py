"""The keyed in-process runner: runs, checkpoints and failover (spec RUN-*, REC-*).

One asyncio loop on one thread drives everything that touches memory, events and the store (mailbox
semantics). Runs of one key are serialized; async actions yield while their durable work runs on a
thread pool, so other keys progress. Checkpoints are aligned: taken when every input before the
checkpoint offset has been fully processed.

An agent whose actions are all synchronous never suspends, so its runs are driven without an event loop
(:func:`_drive`): the order of everything is the one the loop would produce, keys one after another,
at a fraction of the fixed cost per run (benchmark P4).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from . import observe
from .agent import ActionSpec, Agent
from .clock import Clock, SystemClock, let_time_pass
from .codecs import PayloadCodec, default_codec
from .config import RuntimeSettings, parse_settings
from .context import RunnerContext
from .durable import ActionExecution, JournalEntry, MismatchMode
from .errors import ActionFailedError, ConfigError, DurableError, InvalidValueError, Location, StoreError
from .events import Event, InputEvent, OutputEvent
from .faults import FaultInjector, FaultPoint, Phase, SimulatedCrash
from .key_schemes import KeyScheme, get_key_scheme
from .limits import safe_repr
from .memory import FlatMemory, MemoryObject, MemorySnapshot, MemoryTtl, MemoryView
from .pool import borrow, give_back
from .records import ActionRef, ActionState, StateRef
from .signing import StateSigner
from .snapshots import Layered, Prefix
from .stores.base import ActionStateStore, RecoveryMarker, is_store
from .stores.failfast import FailFastStore
from .stores.forwarding import ForwardingStore
from .values import check_text, check_value

_INPUT_NAMESPACE = uuid.UUID("6f6b1d1e-3a43-4c59-9a4f-64757261626c")


@dataclass(frozen=True)
class EmittedOutput:
    """An output event collected for a key, with the input (seq) and action that emitted it."""

    key: str
    seq: int
    action: str
    event: Event

    @property
    def output(self) -> Any:
        return self.event.attributes.get("output")


@dataclass
class Checkpoint:
    """A consistent snapshot: every input before ``offset`` is fully processed.

    Its mappings share what did not change since the previous checkpoint, so taking one costs what was
    touched since then, not the number of keys or memory fields (spec COST-1).
    """

    offset: int
    next_seq: Layered[str, int]
    short_term: Layered[str, MemorySnapshot]
    outputs: Sequence[EmittedOutput]
    markers: list[RecoveryMarker]


@dataclass
class _KeyState:
    next_seq: int = 0
    short_term: FlatMemory = field(default_factory=FlatMemory)


class _MemoryOf(Mapping[str, dict[str, Any]]):
    """``RunResult.memory``: each key's memory as nested plain data, built when first read."""

    def __init__(self, snapshots: Mapping[str, MemorySnapshot]) -> None:
        self._snapshots = snapshots
        self._built: dict[str, dict[str, Any]] = {}

    def __getitem__(self, key: str) -> dict[str, Any]:
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = self._snapshots[key].to_dict()
        return built

    def __iter__(self) -> Iterator[str]:
        return iter(self._snapshots)

    def __len__(self) -> int:
        return len(self._snapshots)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class RunResult:
    """What a finished run produced, the durable-call journal of every attempt and the crash trace.

    ``emitted``, ``journal`` and ``memory`` are read-only views and ``outputs`` is built when first read,
    so producing a result does not cost more after a million earlier inputs (spec COST-1).
    """

    def __init__(
        self,
        *,
        emitted: Sequence[EmittedOutput],
        memory: Mapping[str, dict[str, Any]],
        journal: Sequence[JournalEntry],
        failovers: int,
        crashes: list[FaultPoint],
    ) -> None:
        self.emitted = emitted
        self.memory = memory
        self.journal = journal
        self.failovers = failovers
        self.crashes = crashes
        self._outputs: dict[str, list[Any]] | None = None

    @property
    def outputs(self) -> dict[str, list[Any]]:
        """Each key's output values, in the order they left the key."""
        if self._outputs is None:
            outputs: dict[str, list[Any]] = {}
            for e in self.emitted:
                outputs.setdefault(e.key, []).append(e.output)
            self._outputs = outputs
        return self._outputs

    def __repr__(self) -> str:
        return (
            f"RunResult(outputs={self.outputs!r}, failovers={self.failovers}, "
            f"crashes={self.crashes!r}, calls={len(self.journal)})"
        )


def _drain(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what a crash left running (the other keys' tasks), as ``asyncio.run`` does on exit."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _close(loop: asyncio.AbstractEventLoop) -> None:
    try:
        _drain(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()


def _drive(main: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never waits on a future to its end, without an event loop."""
    try:
        while True:
            if main.send(None) is not None:
                raise RuntimeError("a synchronous agent's run awaited a future; declare the action async")
    except StopIteration:
        return
    finally:
        main.close()


async def _on_private_loop(awaitable: Awaitable[Any]) -> None:
    await awaitable


class Runner:
    """Runs an :class:`Agent` over keyed inputs against an :class:`ActionStateStore`.

    ``checkpoint_every`` takes an aligned checkpoint after every N inputs (None: only at the end).
    ``prune`` says whether a completed checkpoint deletes the states of the inputs it covers (RUN-8). The
    checkpoints live in this runner's memory: a new process re-feeding the inputs starts without them and
    needs every completed state, so by default (None) only a store whose data ends with the process
    (``InMemoryStore``) is pruned (RUN-18). ``reopen_store`` simulates a process restart on failover: the old
    store is closed and a new one opened on the same data. ``agent`` may also be a ``flink_agents`` agent
    class or instance (spec FA-1); ``resources`` maps resource names to objects its ``ctx.get_resource``
    returns (fakes of chat models, tools, vector stores; spec FA-5).
    """

    def __init__(
        self,
        agent: type[Agent] | Any,
        store: ActionStateStore | None = None,
        *,
        codec: PayloadCodec | None = None,
        mismatch: MismatchMode = "lenient",
        config: Mapping[str, Any] | None = None,
        injector: FaultInjector | None = None,
        key_scheme: str | KeyScheme | None = None,
        checkpoint_every: int | None = None,
        reopen_store: Callable[[], ActionStateStore] | None = None,
        prune: bool | None = None,
        async_threads: int | None = None,
        clock: Clock | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> None:
        if not (isinstance(agent, type) and issubclass(agent, Agent)):
            from .flink_agents_compat import flink_payload_codec, runtime_agent

            agent = runtime_agent(agent)
            if codec is None:
                codec = flink_payload_codec()
        if store is None:
            from .stores.memory import InMemoryStore

            store = InMemoryStore()
        _check_options(store, codec, mismatch)
        self.agent: type[Agent] = agent
        self.resources: Mapping[str, Any] = dict(resources or {})
        self.store = store
        self.codec = codec or default_codec()
        self._signer = StateSigner.for_codec(self.codec)
        self.mismatch: MismatchMode = mismatch
        self.config: dict[str, Any] = {**agent.config, **(config or {})}
        self.injector = injector
        # A store that says which keys its engine reads (a Flink Agents 0.2 topic, WIRE-11) sets the default.
        if key_scheme is None:
            key_scheme = getattr(store, "key_scheme", None) or "java"
        self.key_scheme = get_key_scheme(key_scheme) if isinstance(key_scheme, str) else key_scheme
        if checkpoint_every is not None and checkpoint_every < 1:
            raise ValueError("checkpoint_every must be a positive number of inputs")
        self.checkpoint_every = checkpoint_every
        if prune is not None and not isinstance(prune, bool):
            raise ConfigError(f"prune={safe_repr(prune)} is not a bool; use True, False or None (the default)")
        #: Whether checkpoints delete the states of the inputs they cover (RUN-8, RUN-18).
        self.prune: bool = prune if prune is not None else not outlives_process(store)
        self.reopen_store = reopen_store
        self.clock: Clock = clock or SystemClock()
        self.actions: list[ActionSpec] = agent.actions() + agent.builtin_actions()
        #: The runtime's keys of ``config``, parsed once (spec CFG-2); ``config`` itself is what ``ctx.config`` shows.
        self.settings: RuntimeSettings = parse_settings(
            self.config, actions=[spec.name for spec in self.actions], aliases={"async_threads": async_threads}
        )
        self._sync = not any(spec.is_async for spec in self.actions)
        self._by_type: dict[str, list[ActionSpec]] = {}
        for spec in self.actions:
            for t in spec.triggers:
                self._by_type.setdefault(t, []).append(spec)
        settings = self.settings
        #: Short-term memory's state TTL, if configured (spec MEM-14).
        self._memory_ttl = (
            MemoryTtl(
                settings.memory_ttl_ms,
                self.clock,
                update_on_read=settings.memory_ttl_update == "ON_READ_AND_WRITE",
                return_expired=settings.memory_ttl_visibility == "RETURN_EXPIRED_IF_NOT_CLEANED_UP",
            )
            if settings.memory_ttl_ms > 0
            else None
        )
        self.inputs: list[tuple[str, Any]] = []
        self.journal: list[JournalEntry] = []
        #: The index in ``journal`` of the first entry an action execution of this runner did not replay
        #: (every earlier entry was replayed, or put there by its caller), None while there is none.
        self._first_ran: int | None = None
        self.failovers = 0
        self.crashes: list[FaultPoint] = []
        self.checkpoints: list[Checkpoint] = []
        #: The store's recovery marker taken before this runner's first write: what a failover before the
        #: first checkpoint rebuilds from, so a store that lost data is caught from the first write (FAIL-6).
        self._start_markers: list[RecoveryMarker] | None = None
        self._reset_to(None)

    # -- state ---------------------------------------------------------------------------------------
    def _reset_to(self, cp: Checkpoint | None) -> None:
        if cp is None:
            self._keys: dict[str, _KeyState] = {}
            self._emitted: list[EmittedOutput] = []
            self._dirty: set[str] = set()
            self._offset = 0
            return
        # Only keys that ran since the checkpoint differ from it: put those back, leave the rest.
        self._offset = cp.offset
        for k in self._dirty:
            snapshot = cp.short_term.get(k)
            if snapshot is None:
                self._keys.pop(k, None)
                continue
            snapshot.memory.restore(snapshot)
            self._keys[k] = _KeyState(cp.next_seq[k], snapshot.memory)
        self._dirty = set()
        del self._emitted[len(cp.outputs) :]

    def _key(self, key: str) -> _KeyState:
        ks = self._keys.get(key)
        if ks is None:
            ks = self._keys[key] = _KeyState(short_term=FlatMemory(ttl=self._memory_ttl))
        return ks

    def _reach(
        self,
        phase: Phase,
        key: str | None = None,
        seq: int | None = None,
        action: str | None = None,
        execution: int = 1,
    ) -> None:
        if self.injector is not None:
            self.injector.reach(FaultPoint(phase, key, seq, action, None, None, execution))

    # -- public API ------------------------------------------------------------------------------------
    def run(self, inputs: Iterable[tuple[str, Any]] = (), *, max_failovers: int = 100) -> RunResult:
        """Process ``inputs`` (appended to the input log) to the end, failing over after every crash."""
        # A flink_agents agent's inputs enter as a cluster hands them over: as JSON data (spec FA-8).
        convert = getattr(self.agent, "_input_data", None)
        if convert is not None:
            inputs = [(item[0], convert(item[1])) if _is_pair(item) else item for item in inputs]
        self.inputs.extend(_checked_inputs(inputs, len(self.inputs)))
        # One event loop for the run and all its recoveries: creating one costs as much as ten durable
        # calls, and a crash scenario fails over at least once (benchmark P4).
        loop = None if self._sync else asyncio.new_event_loop()
        failovers_before = self.failovers  # the limit is per call: a long-lived runner may fail over often
        try:
            while True:
                try:
                    self._process_on(loop)
                    if self.injector is not None:
                        self.injector.check_fired()
                    return self.result()
                except SimulatedCrash as crash:
                    self.crashes.append(crash.point)
                    if self.failovers - failovers_before >= max_failovers:
                        raise DurableError(f"gave up after {max_failovers} failovers") from crash
                    self.fail_over()
        finally:
            if loop is not None:
                _close(loop)

    def process(self) -> None:
        """Process the input log from the current offset; a crash propagates as :class:`SimulatedCrash`."""
        loop = None if self._sync else asyncio.new_event_loop()
        try:
            self._process_on(loop)
        finally:
            if loop is not None:
                _close(loop)

    def _process_on(self, loop: asyncio.AbstractEventLoop | None) -> None:
        if loop is None:
            _drive(self._process(None))
            return
        pool = borrow(self.settings.num_async_threads)
        try:
            try:
                loop.run_until_complete(self._process(pool))
            finally:
                _drain(loop)
        finally:
            # A crash must not leave pool work running into the recovery that follows.
            give_back(pool)

    def fail_over(self) -> None:
        """Throw away all in-memory state, restore the last checkpoint and rebuild the store from its
        recovery markers; the inputs after the checkpoint are processed again by :meth:`process`."""
        self.failovers += 1
        # A restart takes time: recovery must not happen at the crash's instant, or an agent that passes the
        # time into a durable call would replay as if it were deterministic (PLG-13).
        let_time_pass(self.clock)
        cp = self.checkpoints[-1] if self.checkpoints else None
        if self.reopen_store is not None:
            self.store.close()
            self.store = self.reopen_store()
        self._reset_to(cp)
        self.store.rebuild_state(cp.markers if cp is not None else self._start_markers or [])

    def result(self) -> RunResult:
        cp = self.checkpoints[-1] if self.checkpoints else None
        memory: Mapping[str, dict[str, Any]]
        if cp is not None and not self._dirty and cp.offset == self._offset:
            memory = _MemoryOf(cp.short_term)  # the usual case: a run ends with a checkpoint
        else:
            memory = {k: ks.short_term.to_dict() for k, ks in self._keys.items()}
        return RunResult(
            emitted=Prefix(self._emitted),
            memory=memory,
            journal=Prefix(self.journal),
            failovers=self.failovers,
            crashes=list(self.crashes),
        )

    # -- processing ------------------------------------------------------------------------------------
    async def _process(self, pool: ThreadPoolExecutor | None) -> None:
        self._owner = threading.get_ident()
        # Every store access of the run goes through the gate: the first store failure stops it (FAIL-1).
        self._store = FailFastStore(self.store)
        if self._start_markers is None and not self.checkpoints:
            self._start_markers = [self._store.get_recovery_marker()]
        while self._offset < len(self.inputs):
            end = len(self.inputs)
            if self.checkpoint_every is not None:
                end = min(end, self._offset + self.checkpoint_every)
            await self._segment(self.inputs[self._offset : end], pool)
            self._offset = end
            if self.checkpoint_every is not None or end == len(self.inputs):
                self._checkpoint()

    async def _segment(self, batch: Sequence[tuple[str, Any]], pool: ThreadPoolExecutor | None) -> None:
        by_key: dict[str, list[Any]] = {}
        for key, value in batch:
            by_key.setdefault(key, []).append(value)
        if len(by_key) == 1:
            # One key has nothing to interleave with: no task, no wait.
            [(key, values)] = by_key.items()
            await self._run_key(key, values, pool)
            return
        if self._sync:
            # What the loop does with one task per key when none of them suspends: each runs to its end
            # in turn, even after another key crashed, and the first failure is raised.
            failure: BaseException | None = None
            for k, vs in by_key.items():
                try:
                    await self._run_key(k, vs, pool)
                except (KeyboardInterrupt, SystemExit, StoreError):
                    raise  # these stop everything at once: a failed store is not retried key by key (FAIL-1)
                except BaseException as exc:  # re-raised below, after the other keys have run
                    failure = failure or exc
            if failure is not None:
                raise failure
            return
        tasks = [asyncio.create_task(self._run_key(k, vs, pool)) for k, vs in by_key.items()]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            if self._store.failure is not None:
                raise self._store.failure
            for t in done:
                if t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _run_key(self, key: str, values: list[Any], pool: ThreadPoolExecutor | None) -> None:
        ks = self._key(key)
        self._dirty.add(key)
        for value in values:
            seq = ks.next_seq
            await self._run_one(key, seq, value, ks, pool)
            ks.next_seq = seq + 1

    async def _run_one(self, key: str, seq: int, value: Any, ks: _KeyState, pool: ThreadPoolExecutor | None) -> None:
        sensory = FlatMemory()
        first = InputEvent(value, id=uuid.uuid5(_INPUT_NAMESPACE, f"{key}\x00{seq}"))
        queue: list[tuple[Event, str | None]] = [(first, None)]
        seen: dict[tuple[str, str], int] = {}
        # The n-th execution of each action for this input, counted in run order (FLT-6, IDN-9): the run
        # order is replayed on recovery, so an execution keeps its ordinal.
        executions: dict[str, int] = {}
        emitted: list[EmittedOutput] = []
        previous: str | None = None
        previous_execution = 1
        while queue:
            event, source = queue.pop(0)
            if event.type == OutputEvent.TYPE and source is not None:
                emitted.append(EmittedOutput(key, seq, source, event))
            for spec in self._by_type.get(event.type, []):
                if previous is not None:
                    self._reach(Phase.BETWEEN_ACTIONS, key, seq, previous, previous_execution)
                try:
                    base_key = self.key_scheme.state_key(key, seq, spec.ref, event, 0)
                except (TypeError, ValueError) as exc:
                    raise InvalidValueError(
                        f"the {event.type!r} event for action {spec.name!r} (key={safe_repr(key)}, seq={seq}) cannot "
                        f"be keyed by the {type(self.key_scheme).__name__} state-key scheme: {exc}; event attributes "
                        "must be JSON values (base64-encode bytes)"
                    ) from exc
                occurrence = seen.get((spec.name, base_key), 0)
                seen[(spec.name, base_key)] = occurrence + 1
                state_key = self.key_scheme.state_key(key, seq, spec.ref, event, occurrence) if occurrence else base_key
                ref = StateRef(key, seq, spec.ref, event, state_key, occurrence)
                execution = executions.get(spec.name, 0) + 1
                executions[spec.name] = execution
                sent = await self._run_action(spec, ref, ks.short_term, sensory, pool, execution)
                queue.extend((e, spec.name) for e in sent)
                previous, previous_execution = spec.name, execution
        # Outputs leave the key only when its run is over, as one unit.
        self._emitted.extend(emitted)

    async def _run_action(
        self,
        spec: ActionSpec,
        ref: StateRef,
        short_term: FlatMemory,
        sensory: FlatMemory,
        pool: ThreadPoolExecutor | None,
        ordinal: int = 1,
    ) -> list[Event]:
        signer = self._signer
        store = self._store
        state = store.get(ref)
        if state is not None and signer is not None:
            signer.verify(ref, state)
        watcher = observe.current  # a tool watching executions (crash coverage, COV-3); None by default
        if state is not None and state.completed:
            if watcher is not None:
                watcher.action_replayed(self.agent, ref, state)
            short_term.apply(state.short_term_memory_updates)
            sensory.apply(state.sensory_memory_updates)
            return list(state.output_events)
        if watcher is not None:
            # A state the store holds unfinished: this execution re-enters an action a crash interrupted.
            recovery = state is not None
            watcher.action_started(self.agent, ref, recovery, self.crashes[-1] if recovery and self.crashes else None)
        if state is None:
            state = ActionState(task_event=ref.event)
            if signer is not None:
                signer.sign(ref, state)
            store.put(ref, state)
        execution = ActionExecution(
            ref,
            store,
            self.codec,
            state,
            self.mismatch,
            self.injector,
            pool,
            clock=self.clock,
            failovers=self.failovers,
            reconcilers=self.settings.reconcilers,
            execution=ordinal,
        )
        stm_view, sens_view = MemoryView(short_term), MemoryView(sensory)
        ctx = RunnerContext(
            execution,
            MemoryObject(stm_view, "short_term", owner=self._owner),
            MemoryObject(sens_view, "sensory", owner=self._owner),
            self.config,
            self.settings,
            self.settings.action_config(spec.name),
            self._owner,
            self.resources,
        )
        try:
            out = spec.func(ref.event, ctx)
            if inspect.isawaitable(out):
                if self._sync:
                    # A synchronous action that returns an awaitable: run it to its end on a loop of its
                    # own (nothing else is running on this thread), with the loop's default executor.
                    loop = asyncio.new_event_loop()
                    try:
                        loop.run_until_complete(_on_private_loop(out))
                    finally:
                        _close(loop)
                else:
                    await out
        except (DurableError, SimulatedCrash):
            raise
        except Exception as exc:
            raise ActionFailedError(
                f"action raised {type(exc).__name__}: {exc}", Location(ref.key, ref.seq, spec.name)
            ) from exc
        finally:
            execution.abandon()  # calls whose work an unfinished attempt left in flight (DE-19)
            if self._first_ran is None and execution.first_ran is not None:
                self._first_ran = len(self.journal) + execution.first_ran
            self.journal.extend(execution.journal)
            if watcher is not None:
                watcher.action_ended(self.agent, ref, execution.journal)
        self._reach(Phase.BEFORE_COMPLETE, ref.key, ref.seq, spec.name, ordinal)
        state.short_term_memory_updates = stm_view.log
        state.sensory_memory_updates = sens_view.log
        state.output_events = list(ctx.sent)
        state.mark_completed()
        if signer is not None:
            signer.sign(ref, state)
        store.put(ref, state)
        if watcher is not None:
            watcher.action_completed(self.agent, ref, state)
        self._reach(Phase.AFTER_COMPLETE, ref.key, ref.seq, spec.name, ordinal)
        stm_view.commit()
        sens_view.commit()
        return list(ctx.sent)

    def _checkpoint(self) -> None:
        previous = self.checkpoints[-1] if self.checkpoints else None
        touched = [k for k in self._dirty if k in self._keys]
        next_seq: Layered[str, int] = previous.next_seq if previous else Layered()
        short_term: Layered[str, MemorySnapshot] = previous.short_term if previous else Layered()
        cp = Checkpoint(
            offset=self._offset,
            next_seq=next_seq.push({k: self._keys[k].next_seq for k in touched}),
            short_term=short_term.push({k: self._keys[k].short_term.freeze() for k in touched}),
            outputs=Prefix(self._emitted),
            markers=[self._store.get_recovery_marker()],
        )
        self._reach(Phase.CHECKPOINT)
        self.checkpoints.append(cp)
        self._dirty = set()
        # Checkpoint complete: states of finished inputs are no longer needed for a recovery from it, but a
        # new process re-feeding the inputs has no checkpoint and needs them all (RUN-18). Keys that did
        # not run since the previous checkpoint were pruned by it.
        if not self.prune:
            return
        for k in touched:
            seq = cp.next_seq[k]
            if seq > 0:
                self._store.prune_state(k, seq - 1)


def outlives_process(store: ActionStateStore) -> bool:
    """Whether ``store``'s data can outlive this process, so that a new process may need what it holds: true
    unless the store, or the store a wrapper forwards to (``inner``), says ``outlives_process = False``."""
    while isinstance(store, ForwardingStore):
        store = store.inner
    return bool(getattr(store, "outlives_process", True))


def _check_options(store: Any, codec: Any, mismatch: Any) -> None:
    """Refuse options of the wrong kind up front, naming the option and the fix (spec PAY-8)."""
    if isinstance(store, str):
        raise ConfigError(
            f"store={store!r} is a string; Runner takes a store object: pass "
            f"reference_runtime.stores.open_store({store!r})"
        )
    if not is_store(store):
        raise ConfigError(
            f"store must implement ActionStateStore (put, get, put_call_results, ...), got a {type(store).__name__}"
        )
    if codec is not None and not isinstance(codec, PayloadCodec):
        raise ConfigError(
            f"codec must implement PayloadCodec (name, encode_result, decode_result, encode_exception,"
            f" decode_exception), got a {type(codec).__name__}; e.g. CloudpickleCodec()"
        )
    if mismatch not in ("lenient", "strict"):
        raise ConfigError(f"mismatch={safe_repr(mismatch)} is not a mismatch mode; use 'lenient' or 'strict'")


def _is_pair(item: Any) -> bool:
    return isinstance(item, tuple | list) and len(item) == 2


def _checked_inputs(inputs: Iterable[tuple[str, Any]], start: int) -> list[tuple[str, Any]]:
    checked = []
    for n, item in enumerate(inputs, start):
        if not _is_pair(item):
            raise InvalidValueError(f"input #{n} is {safe_repr(item)}; inputs are (key, value) pairs")
        key = str(item[0])
        check_text(key, f"the key of input #{n}")
        check_value(item[1], f"input #{n} (key={safe_repr(key)})")
        checked.append((key, item[1]))
    return checked


def run_agent(agent: type[Agent] | Any, inputs: Iterable[tuple[str, Any]], **options: Any) -> RunResult:
    """Convenience: a fresh :class:`Runner` over ``inputs``; ``options`` go to the constructor."""
    return Runner(agent, **options).run(inputs)


__all__ = ["Checkpoint", "EmittedOutput", "RunResult", "Runner", "run_agent"]
_ = ActionRef  # re-exported type in signatures of subclasses
