"""Broken runners: each a :class:`~conformance.RunFunction` built on the reference runtime with one plausible
bug, and the clause it violates (``VIOLATES``). The kit sees only the run function; how a mutant changes the
runtime underneath (wrapping its store, overriding a step of :class:`~reference_runtime.Runner`) is the
mutant's own business, as it would be a third-party runner's."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import hashlib
import inspect
import itertools
import pickle
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from conformance import RunFunction
from reference_runtime import (
    ActionFailedError,
    Backoff,
    CallId,
    CloudpickleCodec,
    ConfigError,
    DecodeLimits,
    DurableCall,
    FaultInjector,
    JavaStyleCodec,
    MemoryAccessError,
    PayloadDecodeError,
    RetryPolicy,
    Runner,
    RunnerContext,
    RunResult,
    SimulatedCrash,
    StoreError,
    UnknownConfigKeyWarning,
    batch,
    context,
    durable,
    key_schemes,
    memory,
    two_phase,
)
from reference_runtime import identity as reference_identity
from reference_runtime import runner as runner_module
from reference_runtime.agent import ActionSpec
from reference_runtime.events import Event
from reference_runtime.memory import FlatMemory
from reference_runtime.records import ActionState, CallResult, MemoryUpdate, StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.forwarding import ForwardingStore

from ..broken_runners import RunArgs, always_lenient, forgetful, no_reconcilers, reruns_completed, run_function

MUTANTS: dict[str, tuple[str, RunFunction]] = {}
#: The suite's ``check_timeout`` for mutants that block forever (spec KIT-8), by name.
TIMEOUTS: dict[str, float] = {"never_returns_for_async_agents": 3.0}


def violates(clause: str) -> Callable[[Callable[[RunArgs], RunResult]], RunFunction]:
    """Registers a mutant's body as a run function that breaks ``clause``."""

    def register(body: Callable[[RunArgs], RunResult]) -> RunFunction:
        fn = run_function(body)
        MUTANTS[body.__name__] = (clause, fn)
        return fn

    return register


MUTANTS.update(
    forgetful=("REC-3", forgetful),
    always_lenient=("DE-8", always_lenient),
    no_reconcilers=("DE-5", no_reconcilers),
    reruns_completed=("REC-4", reruns_completed),
)


def _merge(results: Sequence[RunResult]) -> RunResult:
    outputs: dict[str, list[Any]] = {}
    memory: dict[str, Any] = {}
    for r in results:
        for k, v in r.outputs.items():
            outputs.setdefault(k, []).extend(v)
        memory.update(r.memory)
    return RunResult(
        outputs=outputs,
        emitted=[e for r in results for e in r.emitted],
        memory=memory,
        journal=[j for r in results for j in r.journal],
        failovers=sum(r.failovers for r in results),
        crashes=[c for r in results for c in r.crashes],
    )


@violates("RUN-1")
def fresh_runner_per_input(run: RunArgs) -> RunResult:
    """Handles every input with a new runner ("stateless request handling"): each input gets seq 0."""
    return _merge([run.runner().run([item]) for item in run.inputs])


@violates("RUN-4")
def outputs_deduplicated(run: RunArgs) -> RunResult:
    """Drops repeated outputs of a key, "so nothing is delivered twice"."""
    result = run.runner().run(run.inputs)
    result.outputs = {k: [v for i, v in enumerate(vs) if v not in vs[:i]] for k, vs in result.outputs.items()}
    return result


@violates("RUN-5")
def one_input_at_a_time(run: RunArgs) -> RunResult:
    """Feeds the inputs to the runner one by one, each to its end: keys never interleave."""
    runner = run.runner()
    result = runner.run([])
    for item in run.inputs:
        result = runner.run([item])
    return result


@violates("RUN-6")
def thread_per_key(run: RunArgs) -> RunResult:
    """Scales out with one runner per business key, each on a thread of its own."""
    by_key: dict[str, list[tuple[str, Any]]] = {}
    for k, v in run.inputs:
        by_key.setdefault(k, []).append((k, v))
    with ThreadPoolExecutor(len(by_key) or 1) as pool:
        futures = [pool.submit(run.runner().run, items) for items in by_key.values()]
        return _merge([f.result() for f in futures])


class _SortedActions(Runner):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for specs in self._by_type.values():
            specs.sort(key=lambda spec: spec.name)


@violates("RUN-2")
def actions_sorted_by_name(run: RunArgs) -> RunResult:
    """Orders the actions of an event type by name "for determinism"."""
    return run.runner(_SortedActions).run(run.inputs)


class _KeptSensory(Runner):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sensory_by_key: dict[str, Any] = {}

    async def _run_action(self, spec: Any, ref: StateRef, short_term: Any, sensory: Any, pool: Any) -> Any:
        kept = self.sensory_by_key.setdefault(ref.key, sensory)
        return await super()._run_action(spec, ref, short_term, kept, pool)


@violates("MEM-8")
def sensory_kept_per_key(run: RunArgs) -> RunResult:
    """Keeps one sensory memory per key for the whole job instead of one per run."""
    return run.runner(_KeptSensory).run(run.inputs)


@violates("RUN-9")
def errors_normalized(run: RunArgs) -> RunResult:
    """Turns a failed action into a generic RuntimeError."""
    try:
        return run.runner().run(run.inputs)
    except ActionFailedError as exc:
        raise RuntimeError(f"agent failed: {exc.reason}") from None


class _FailFast(Runner):
    async def _segment(self, batch: Sequence[tuple[str, Any]], pool: Any) -> None:
        by_key: dict[str, list[Any]] = {}
        for key, value in batch:
            by_key.setdefault(key, []).append(value)
        for k, vs in by_key.items():
            await self._run_key(k, vs, pool)


@violates("RUN-10")
def fail_fast(run: RunArgs) -> RunResult:
    """Stops the segment at the first failing key; later keys never run."""
    return run.runner(_FailFast).run(run.inputs)


@violates("BAT-3")
def serial_batches(run: RunArgs) -> RunResult:
    """Runs batch calls one at a time whatever the agent configures."""
    return run.runner(config={**run.config, "tool-call.parallelism": 1}).run(run.inputs)


@violates("BAT-3")
def unbounded_batches(run: RunArgs) -> RunResult:
    """Starts every call of a batch at once, ignoring ``tool-call.parallelism``."""
    return run.runner(config={**run.config, "tool-call.parallelism": 64}).run(run.inputs)


class _CompletionOrderSlots(ForwardingStore):
    """Finalizes each batch call in the first slot still PENDING: records follow completion order."""

    def __init__(self, inner: ActionStateStore) -> None:
        super().__init__(inner)
        self.pending: dict[str, list[int]] = {}

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        if all(r.is_pending for r in results):
            self.pending[ref.state_key] = list(range(index, index + len(results)))
        elif len(results) == 1 and self.pending.get(ref.state_key):
            index = self.pending[ref.state_key].pop(0)
        super().put_call_results(ref, index, results)


@violates("BAT-4")
def finalize_in_completion_order(run: RunArgs) -> RunResult:
    """Writes each finished batch call to the next free slot."""
    return run.runner(store=_CompletionOrderSlots(run.store)).run(run.inputs)


class _TrustsReconciler(ForwardingStore):
    """After a crash, does not persist the outcome a reconciler gave for a PENDING slot."""

    def __init__(self, inner: ActionStateStore, injector: FaultInjector) -> None:
        super().__init__(inner)
        self.injector = injector

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        state = self.get(ref)
        was_pending = state is not None and index < len(state.call_results) and state.call_results[index].is_pending
        if self.injector.fired and was_pending and not any(r.is_pending for r in results):
            return
        super().put_call_results(ref, index, results)


@violates("DE-5")
def reconciled_not_persisted(run: RunArgs) -> RunResult:
    """Skips persisting a reconciled outcome ("the external system already knows it")."""
    return run.runner(store=_TrustsReconciler(run.store, run.injector)).run(run.inputs)


class _NoReplayedOutputs(Runner):
    async def _run_action(self, spec: Any, ref: StateRef, short_term: Any, sensory: Any, pool: Any) -> Any:
        state = self.store.get(ref)
        sent = await super()._run_action(spec, ref, short_term, sensory, pool)
        return [] if state is not None and state.completed else sent


@violates("REC-6")
def completed_outputs_not_replayed(run: RunArgs) -> RunResult:
    """Skips a completed action on recovery without re-emitting its events."""
    return run.runner(_NoReplayedOutputs).run(run.inputs)


class _NoReplayedMemory(ForwardingStore):
    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if state is not None and state.completed:
            state.short_term_memory_updates = [
                MemoryUpdate(u.path, None) if u.object_creation else u for u in state.short_term_memory_updates
            ]
        return state


@violates("MEM-10")
def object_creation_not_replayed(run: RunArgs) -> RunResult:
    """Replays a completed action's object creations as ``set(path, None)`` (Flink Agents #1029)."""
    return run.runner(store=_NoReplayedMemory(run.store)).run(run.inputs)


@violates("REC-7")
def one_recovery_only(run: RunArgs) -> RunResult:
    """Recovers once; a crash during that recovery ends the run."""
    return run.runner().run(run.inputs, max_failovers=1)


class _EagerCleanup(ForwardingStore):
    """Prunes a key's earlier states as soon as a completed state of it is written."""

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, state)
        if state.completed and ref.seq > 0:
            self.prune_state(ref.key, ref.seq - 1)


@violates("RUN-8")
def prunes_before_checkpoint(run: RunArgs) -> RunResult:
    """Cleans up completed states right away instead of after the checkpoint."""
    return run.runner(store=_EagerCleanup(run.store)).run(run.inputs)


class _RetryFromScratch(ForwardingStore):
    """After a failover, an interrupted action's records are dropped so it "starts clean"."""

    def __init__(self, inner: ActionStateStore, injector: FaultInjector) -> None:
        super().__init__(inner)
        self.injector = injector

    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if self.injector.fired and state is not None and not state.completed and state.call_results:
            self.truncate_call_results(ref, 0)
            state.call_results = []
        return state


@violates("REC-3")
def interrupted_action_starts_clean(run: RunArgs) -> RunResult:
    """Re-enters an interrupted action with its call records dropped: recorded calls execute again."""
    return run.runner(store=_RetryFromScratch(run.store, run.injector)).run(run.inputs)


class _BufferedPending(ForwardingStore):
    """Holds back writes of PENDING-only records until the next write ("fewer round trips")."""

    def __init__(self, inner: ActionStateStore) -> None:
        super().__init__(inner)
        self.held: list[tuple[StateRef, int, Sequence[CallResult]]] = []

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        if all(r.is_pending for r in results):
            self.held.append((ref, index, results))
            return
        held, self.held = self.held, []
        for args in held:
            super().put_call_results(*args)
        super().put_call_results(ref, index, results)


@violates("DE-3")
def pending_write_buffered(run: RunArgs) -> RunResult:
    """Buffers the PENDING record and sends it with the call's outcome, after the function ran."""
    return run.runner(store=_BufferedPending(run.store)).run(run.inputs)


class _NoTruncation(ForwardingStore):
    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        return None


@violates("DE-7")
def truncation_skipped(run: RunArgs) -> RunResult:
    """Skips truncating at a changed call ("the records are overwritten anyway")."""
    return run.runner(store=_NoTruncation(run.store)).run(run.inputs)


@violates("DE-14")
def config_not_passed_on(run: RunArgs) -> RunResult:
    """Builds its runtime from the agent's own config only, dropping the config it was handed."""
    return run.runner(config={}).run(run.inputs)


class _OneMemory(Runner):
    def _key(self, key: str) -> Any:
        ks = super()._key(key)
        first = next(iter(self._keys.values()))
        ks.short_term = first.short_term
        return ks


@violates("MEM-7")
def one_memory_for_all_keys(run: RunArgs) -> RunResult:
    """Keeps one short-term memory for the agent instead of one per business key."""
    return run.runner(_OneMemory).run(run.inputs)


# -- durable-call details (conformance.runner_calls) -----------------------------------------------------------


@contextlib.contextmanager
def patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` replaced by ``value`` for the duration of one run: how these mutants change a step of
    the reference runtime underneath their run function."""
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


@violates("IDN-1")
def qualname_function_ids(run: RunArgs) -> RunResult:
    """Names durable calls by their qualname only, without the module."""
    qualname = lambda func: getattr(func, "__qualname__", "<unknown>")  # noqa: E731
    with patched(durable, "function_id", qualname):
        return run.runner().run(run.inputs)


@violates("IDN-2")
def digest_over_repr(run: RunArgs) -> RunResult:
    """Digests the arguments' repr instead of their pickle ("cheaper")."""
    with patched(
        durable, "args_digest", lambda args, kwargs: hashlib.sha256(repr((args, kwargs)).encode()).hexdigest()[:16]
    ):
        return run.runner().run(run.inputs)


@violates("IDN-10")
def flink_agents_digest(run: RunArgs) -> RunResult:
    """Digests the arguments exactly as Flink Agents does (``cloudpickle.dumps`` of them as they are), so the
    digest depends on which of their objects are shared, and matches only that digest."""
    flink = reference_identity.flink_args_digest
    with (
        patched(durable, "args_digest", lambda args, kwargs, memo=True: flink(args, kwargs)),
        patched(durable, "_args_digest", lambda args, kwargs, memo: flink(args, kwargs)),
    ):
        return run.runner().run(run.inputs)


@violates("DE-9")
def java_style_records(run: RunArgs) -> RunResult:
    """Records results and exceptions as JSON ("portable"): a replayed exception is a RemoteCallError."""
    return run.runner(codec=JavaStyleCodec()).run(run.inputs)


class _GenericFailures(ForwardingStore):
    """Hands recorded failures back as RuntimeError of their message."""

    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if state is not None:
            state.call_results = [
                c._replace(exception_payload=pickle.dumps(RuntimeError(str(pickle.loads(c.exception_payload)))))
                if c.exception_payload is not None
                else c
                for c in state.call_results
            ]
        return state


@violates("DE-9")
def failures_replay_as_runtime_error(run: RunArgs) -> RunResult:
    """Normalizes recorded exceptions to RuntimeError on recovery."""
    return run.runner(store=_GenericFailures(run.store)).run(run.inputs)


@violates("PAY-3")
def trusted_payloads(run: RunArgs) -> RunResult:
    """Loads stored pickles with full cloudpickle ("our own store, our own data")."""
    return run.runner(codec=CloudpickleCodec(trusted=True)).run(run.inputs)


@violates("LIM-5")
def integer_limit_raised(run: RunArgs) -> RunResult:
    """Raises the integer-digit limit so big numbers from a record always load."""
    codec = CloudpickleCodec(limits=DecodeLimits(max_int_digits=1_000_000))
    return run.runner(codec=codec).run(run.inputs)


class _RemembersRefs(ForwardingStore):
    def __init__(self, inner: ActionStateStore) -> None:
        super().__init__(inner)
        self.refs: dict[tuple[str, int, str], StateRef] = {}

    def get(self, ref: StateRef) -> ActionState | None:
        self.refs[(ref.key, ref.seq, ref.action.name)] = ref
        return super().get(ref)


@violates("DE-10")
def undecodable_records_dropped(run: RunArgs) -> RunResult:
    """Heals a record it cannot decode by dropping it (and those after it) and running the action again."""
    store = _RemembersRefs(run.store)
    try:
        return run.runner(store=store).run(run.inputs)
    except PayloadDecodeError as exc:
        ref = store.refs[(exc.key or "", exc.seq or 0, exc.action or "")]
        store.truncate_call_results(ref, exc.call_index or 0)
        return run.runner(store=store).run(run.inputs)


class _DropsFailedReconciliation(ForwardingStore):
    """After a crash, does not persist a FAILED outcome for a slot that was PENDING ("ask again next time")."""

    def __init__(self, inner: ActionStateStore, injector: FaultInjector) -> None:
        super().__init__(inner)
        self.injector = injector

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        state = self.get(ref)
        was_pending = state is not None and index < len(state.call_results) and state.call_results[index].is_pending
        if self.injector.fired and was_pending and all(r.effective_status.value == "FAILED" for r in results):
            return
        super().put_call_results(ref, index, results)


@violates("DE-5")
def failed_reconciliation_not_recorded(run: RunArgs) -> RunResult:
    """Does not record a reconciler's exception, so the next recovery reconciles again."""
    return run.runner(store=_DropsFailedReconciliation(run.store, run.injector)).run(run.inputs)


def _thread_check_only(owner: int | None, what: str) -> None:
    if owner is not None and threading.get_ident() != owner:
        raise MemoryAccessError(f"{what} was used off the runner's thread")


@violates("DE-11")
def misuse_checked_by_thread_only(run: RunArgs) -> RunResult:
    """Guards memory by thread alone, as Flink Agents does: a synchronous durable function may touch it."""
    with (
        patched(memory, "check_action_access", _thread_check_only),
        patched(context, "check_action_access", _thread_check_only),
    ):
        return run.runner().run(run.inputs)


class _NotADurableError(Exception):
    pass


@violates("DE-11")
def misuse_recorded_as_failure(run: RunArgs) -> RunResult:
    """Records every exception of a durable function as its outcome, a MemoryAccessError included."""
    with patched(durable, "DurableError", _NotADurableError):
        return run.runner().run(run.inputs)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _started(awaitable: Any) -> Any:
    return asyncio.ensure_future(_await(awaitable))


@violates("DE-12")
def eager_async_calls(run: RunArgs) -> RunResult:
    """Starts ``durable_execute_async`` work at once, as a task, rather than when awaited."""
    original = RunnerContext.durable_execute_async
    with patched(RunnerContext, "durable_execute_async", lambda self, *a, **k: _started(original(self, *a, **k))):
        return run.runner().run(run.inputs)


@violates("DE-15")
def sync_calls_on_a_worker_thread(run: RunArgs) -> RunResult:
    """Runs ``durable_execute`` work on a worker thread and waits for it ("keeps the loop responsive")."""
    original = durable.ActionExecution.run

    def on_a_thread(self: Any, slot: Any) -> Any:
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(contextvars.copy_context().run, original, self, slot).result()

    with patched(durable.ActionExecution, "run", on_a_thread):
        return run.runner().run(run.inputs)


@violates("DE-16")
def replay_passes_every_point(run: RunArgs) -> RunResult:
    """Replays a recorded call through the same steps as an executed one, re-writing its record."""
    original = durable.ActionExecution.finalize

    def finalize(self: Any, slot: Any, outcome: Any, close: bool = False) -> Any:
        if slot[1] == "replay":
            slot = (slot[0], "execute", *slot[2:])
        return original(self, slot, outcome, close)

    with patched(durable.ActionExecution, "finalize", finalize):
        return run.runner().run(run.inputs)


@violates("DE-17")
def async_calls_reserve_their_slot(run: RunArgs) -> RunResult:
    """Persists PENDING before every asynchronous call "in case the pool loses it"."""
    original = durable.ActionExecution.execute_async

    async def execute_async(self: Any, func: Any, args: Any, kwargs: Any, **options: Any) -> Any:
        if options.get("reconciler") is None:
            options["reconciler"] = lambda: func(*args, **kwargs)
        return await original(self, func, args, kwargs, **options)

    with patched(durable.ActionExecution, "execute_async", execute_async):
        return run.runner().run(run.inputs)


@violates("RETRY-1")
def retries_every_exception(run: RunArgs) -> RunResult:
    """Retries whatever the call raised, ignoring ``retry_on``."""
    with patched(RetryPolicy, "should_retry", lambda self, exc, attempt: attempt < self.max_attempts):
        return run.runner().run(run.inputs)


@violates("RETRY-1")
def retries_without_backoff(run: RunArgs) -> RunResult:
    """Retries at once: the backoff is computed but never slept."""
    with patched(Backoff, "delay", lambda self, attempt, salt="": 0.0):
        return run.runner().run(run.inputs)


@violates("RETRY-2")
def attempts_recorded(run: RunArgs) -> RunResult:
    """Records each failed attempt as FAILED before retrying ("for observability")."""
    original = durable.ActionExecution.next_attempt

    def next_attempt(self: Any, retry: Any, error: Any, call: Any) -> Any:
        again = original(self, retry, error, call)
        if again is not None:
            self.write(
                call.call_id.call_index,
                [
                    self.encode(
                        call.function_id, call.args_digest, durable.Outcome(None, error), call.call_id.call_index
                    )
                ],
            )
        return again

    with patched(durable.ActionExecution, "next_attempt", next_attempt):
        return run.runner().run(run.inputs)


@violates("RETRY-4")
def attempts_counted_twice(run: RunArgs) -> RunResult:
    """Counts a failed attempt once for the failure and once for the retry: attempts 1, 3, 5, …"""
    original = durable.ActionExecution.next_attempt

    def next_attempt(self: Any, retry: Any, error: Any, call: Any) -> Any:
        again = original(self, retry, error, call)
        return None if again is None else (again[0]._replace(attempt=call.attempt + 2), again[1])

    with patched(durable.ActionExecution, "next_attempt", next_attempt):
        return run.runner().run(run.inputs)


@violates("RETRY-7")
def backoff_uncapped_growth(run: RunArgs) -> RunResult:
    """Computes the backoff as ``initial * multiplier ** attempt`` in floats before capping it."""

    def delay(self: Backoff, attempt: int, salt: str = "") -> float:
        return min(self.maximum, self.initial * float(self.multiplier) ** (attempt - 1))

    with patched(Backoff, "delay", delay):
        return run.runner().run(run.inputs)


@violates("DE-18")
def retry_of_a_batch_call_ignored(run: RunArgs) -> RunResult:
    """Runs batch calls once whatever their ``retry``."""
    original = batch.run_batch

    async def run_batch(ex: Any, calls: list[DurableCall], settings: Any) -> Any:
        return await original(ex, [dataclasses.replace(c, retry=None) for c in calls], settings)

    with patched(batch, "run_batch", run_batch):
        return run.runner().run(run.inputs)


_ATTEMPTS: dict[str, int] = {}


@violates("RETRY-5")
def attempts_resume_after_a_crash(run: RunArgs) -> RunResult:
    """Keeps each call's attempt count across failovers ("the budget is per call, not per process")."""
    original = durable.ActionExecution.next_attempt
    _ATTEMPTS.clear()

    def next_attempt(self: Any, retry: Any, error: Any, call: Any) -> Any:
        key = str(call.call_id)
        attempt = max(call.attempt, _ATTEMPTS.get(key, 0))
        _ATTEMPTS[key] = attempt + 1
        return original(self, retry, error, call._replace(attempt=attempt))

    with patched(durable.ActionExecution, "next_attempt", next_attempt):
        return run.runner().run(run.inputs)


@violates("BAT-6")
def batch_deadline_ignored(run: RunArgs) -> RunResult:
    """Never applies ``tool-call.batch.timeout.ms``: a batch waits for its slowest call."""
    return run.runner(config={**run.config, "tool-call.batch.timeout.ms": -1}).run(run.inputs)


@violates("RUN-17")
def pool_sized_by_default(run: RunArgs) -> RunResult:
    """Sizes its async pool at 32 threads whatever ``num-async-threads`` says."""
    return run.runner(async_threads=32).run(run.inputs)


class _NoCopy:
    @staticmethod
    def deepcopy(value: Any) -> Any:
        return value


@violates("MEM-3")
def memory_not_copied(run: RunArgs) -> RunResult:
    """Hands out and keeps memory values by reference ("no defensive copies")."""
    with patched(memory, "copy", _NoCopy):
        return run.runner().run(run.inputs)


class _NoShortTermReplay(ForwardingStore):
    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if state is not None and state.completed:
            state.short_term_memory_updates = []
        return state


@violates("MEM-13")
def short_term_not_replayed(run: RunArgs) -> RunResult:
    """Skips a completed action on recovery without replaying its short-term memory updates."""
    return run.runner(store=_NoShortTermReplay(run.store)).run(run.inputs)


@violates("PAY-7")
def inputs_not_checked(run: RunArgs) -> RunResult:
    """Takes inputs as they come; a bad one fails later, wherever it is used."""
    with (
        patched(runner_module, "check_value", lambda value, what: None),
        patched(runner_module, "check_text", lambda value, what: None),
    ):
        return run.runner().run(run.inputs)


@violates("CFG-3")
def bad_config_falls_back_to_defaults(run: RunArgs) -> RunResult:
    """Runs with the default configuration when the one given does not parse."""
    try:
        return run.runner().run(run.inputs)
    except ConfigError:
        return run.runner(config={}, mismatch="lenient").run(run.inputs)


@violates("CFG-4")
def unknown_keys_silenced(run: RunArgs) -> RunResult:
    """Silences the runtime's config warnings ("noisy in production")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownConfigKeyWarning)
        return run.runner().run(run.inputs)


@violates("KEY-1")
def collision_free_keys_by_default(run: RunArgs) -> RunResult:
    """Files every state under the collision-free key scheme instead of Java's."""
    return run.runner(key_scheme="collision-free").run(run.inputs)


@violates("KEY-2")
def repeats_share_a_state(run: RunArgs) -> RunResult:
    """Files a repeated execution of an action on identical attributes under the same key (Flink Agents #1084)."""
    scheme = key_schemes.JavaKeyScheme()

    class Same:
        name = "java"

        def state_key(self, key: str, seq: int, action: Any, event: Any, occurrence: int) -> str:
            return scheme.state_key(key, seq, action, event, 0)

    return run.runner(key_scheme=Same()).run(run.inputs)


class _CrashAsError:
    """The kit's injector, but a crash comes out as an ordinary exception."""

    def __init__(self, inner: FaultInjector) -> None:
        self.inner = inner

    def reach(self, point: Any) -> None:
        try:
            self.inner.reach(point)
        except SimulatedCrash as crash:
            raise RuntimeError(f"simulated crash at {crash.point}") from None

    def recorder(self) -> Callable[[Any], None]:
        return self.reach

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@violates("FLT-3")
def crash_as_an_exception(run: RunArgs) -> RunResult:
    """Signals a crash with a RuntimeError, which user code catching Exception swallows."""
    injector: Any = _CrashAsError(run.injector)
    return run.runner(injector=injector).run(run.inputs)


class _BestEffortWrites(ForwardingStore):
    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with contextlib.suppress(StoreError):
            super().put_call_results(ref, index, results)


@violates("FAIL-1")
def store_errors_ignored(run: RunArgs) -> RunResult:
    """Treats a failed record write as best effort and goes on."""
    return run.runner(store=_BestEffortWrites(run.store)).run(run.inputs)


@violates("TPC-5")
def two_phase_identity_from_state(run: RunArgs) -> RunResult:
    """Identifies a two-phase call by the operation object's state (its repr)."""
    with patched(two_phase, "identity", lambda op: (repr(vars(op)),)):
        return run.runner().run(run.inputs)


@violates("TPC-3")
def abort_never_called(run: RunArgs) -> RunResult:
    """Leaves a failed commit's prepared work in place (no abort)."""
    with patched(two_phase, "_abort", lambda op, identity, prepared: None):
        return run.runner().run(run.inputs)


@violates("TPC-7")
def two_phase_durable_id_ignored(run: RunArgs) -> RunResult:
    """Names two-phase calls by the operation's type whatever ``durable_id`` says."""
    original = context.execute_two_phase

    def execute_two_phase(ex: Any, op: Any, durable_id: str | None = None, **options: Any) -> Any:
        return original(ex, op, None, **options)

    with patched(context, "execute_two_phase", execute_two_phase):
        return run.runner().run(run.inputs)


@violates("RUN-5")
def never_returns_for_async_agents(run: RunArgs) -> RunResult:
    """Deadlocks when an agent has an async action: waits for an event its loop would set (it never does)."""
    if any(inspect.iscoroutinefunction(getattr(run.agent, name, None)) for name in dir(run.agent)):
        threading.Event().wait()
    return run.runner().run(run.inputs)


@violates("DE-1")
def every_call_reserved(run: RunArgs) -> RunResult:
    """Persists PENDING before every call, with a reconciler or not ("a uniform protocol")."""
    original = durable.ActionExecution.open_slot

    def open_slot(self: Any, index: int, func: Any, args: Any, kwargs: Any, *rest: Any, **options: Any) -> Any:
        slot = original(self, index, func, args, kwargs, *rest, **options)
        reconciler = rest[0] if rest else options.get("reconciler")
        if slot[1] == "execute" and reconciler is None and options.get("reserve", True):
            self.reserve((slot,))
        return slot

    with patched(durable.ActionExecution, "open_slot", open_slot):
        return run.runner().run(run.inputs)


@violates("BAT-2")
def batch_reserved_slot_by_slot(run: RunArgs) -> RunResult:
    """Reserves a batch's slots one write per slot ("simpler"), not in one persist."""
    original = durable.ActionExecution.reserve

    def reserve(self: Any, slots: Any) -> None:
        for slot in slots:
            original(self, (slot,))

    with patched(durable.ActionExecution, "reserve", reserve):
        return run.runner().run(run.inputs)


# -- every execution of an action (IDN-9, FLT-6, PLG-22) ------------------------------------------------------
class _CallIdWithoutOrdinal(CallId):
    """A call id spelled without the action's execution ordinal, as Flink Agents spells it."""

    __slots__ = ()

    def __str__(self) -> str:
        return str(CallId(self.key, self.seq, self.action, self.call_index))


@violates("IDN-9")
def call_ids_without_the_execution(run: RunArgs) -> RunResult:
    """Spells idempotency call ids ``key/seq/action/index`` as Flink Agents does, every execution of an action
    alike: a tool loop's rounds share one id, so an API deduplicating on it books one effect for all."""
    with patched(durable, "CallId", _CallIdWithoutOrdinal):
        return run.runner().run(run.inputs)


class _RepeatsUnswept(Runner):
    """Hands the fault points of an action's second and later executions for one input to no injector."""

    async def _run_action(
        self,
        spec: ActionSpec,
        ref: StateRef,
        short_term: FlatMemory,
        sensory: FlatMemory,
        pool: ThreadPoolExecutor | None,
        ordinal: int = 1,
    ) -> list[Event]:
        if ordinal == 1:
            return await super()._run_action(spec, ref, short_term, sensory, pool, ordinal)
        injector, self.injector = self.injector, FaultInjector(record_trace=False)
        try:
            return await super()._run_action(spec, ref, short_term, sensory, pool, ordinal)
        finally:
            self.injector = injector


@violates("FLT-6")
def repeated_executions_unswept(run: RunArgs) -> RunResult:
    """Reaches fault points only in the first execution of an action for one input ("the loop's later rounds
    are the same code"): a sweep never crashes a tool loop's second round."""
    return run.runner(_RepeatsUnswept).run(run.inputs)


#: Runs with nothing armed so far, for :func:`repeats_swept_every_other_run`.
_UNARMED_RUNS = itertools.count()


@violates("PLG-22")
def repeats_swept_every_other_run(run: RunArgs) -> RunResult:
    """Halves the cost of learning runs: every other run with no crash armed (a sweep's crash-free run) skips
    the fault points of an action's repeated executions, so one sweep crashes a tool loop's later rounds and
    the next one does not."""
    if not run.injector.plan and next(_UNARMED_RUNS) % 2:
        return run.runner(_RepeatsUnswept).run(run.inputs)
    return run.runner().run(run.inputs)
