"""Broken runners: each a :class:`~conformance.RunFunction` built on the reference runtime with one plausible
bug, and the clause it violates (``VIOLATES``). The kit sees only the run function; how a mutant changes the
runtime underneath (wrapping its store, overriding a step of :class:`~reference_runtime.Runner`) is the
mutant's own business, as it would be a third-party runner's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from conformance import RunFunction
from reference_runtime import ActionFailedError, FaultInjector, Runner, RunResult
from reference_runtime.records import ActionState, CallResult, MemoryUpdate, StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.forwarding import ForwardingStore

from ..broken_runners import RunArgs, always_lenient, forgetful, no_reconcilers, reruns_completed, run_function

MUTANTS: dict[str, tuple[str, RunFunction]] = {}


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
