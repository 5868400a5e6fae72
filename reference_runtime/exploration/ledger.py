"""The side-effect ledger (spec PLG-3): count external effects per idempotency call id and classify them
Jepsen-style against a crash-free run.

Wrap the things that touch the outside world — a function, a client object, a reconciler — and every
call is booked under the idempotency id of the durable call it ran in (``key/seq/action/index``, the same
on every recovery). An effect made outside any durable call is booked under ``outside:`` plus its
arguments, which is exactly the kind of effect a crash duplicates.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

Status = Literal["ok", "duplicated", "lost", "reconciled", "unexpected"]
#: Statuses that mean an effect did not happen exactly once.
ANOMALIES: frozenset[Status] = frozenset({"duplicated", "lost", "unexpected"})


@dataclass(frozen=True)
class Effect:
    """One booked effect: which effect (``name``), under which idempotency id, in which run, and the key
    the external system deduplicates it on (None: it does not, every call is a new effect)."""

    name: str
    call_id: str
    run: int
    dedup: str | None = None


@dataclass(frozen=True)
class LedgerRow:
    """The classification of one (effect, idempotency id) pair in the current run."""

    name: str
    call_id: str
    expected: int
    happened: int
    reconciled: int
    status: Status
    attempts: int = 0
    """Calls made, counting those the external system deduplicated (``happened`` does not)."""


class LedgerError(AssertionError):
    """Raised by :meth:`Ledger.assert_exactly_once`; its message is the ledger table."""


def _call_id(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    from reference_runtime.durable import current_call
    from reference_runtime.memory import _in_durable_call

    if _in_durable_call.get() is not None:
        return current_call().idempotency_key
    shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in sorted(kwargs.items()))])
    return f"outside:({shown})"


class Ledger:
    """Books effects per run and classifies the current run against an expectation.

    The expectation is the effects of a crash-free run: the harness books one (:meth:`new_run` with
    ``baseline=True``) before its crash runs. Without one, every id is expected once.

    ``executions=True`` declares that every execution of every durable call is booked once (the conformance
    kit's agents do): the verdict then judges a repeat by REC-3 and REC-5 (once more per crash before the
    call's record was persisted, never after) instead of calling every repeat a duplicated effect (PLG-3).
    """

    def __init__(self, *, executions: bool = False) -> None:
        self.executions = executions
        self._lock = threading.Lock()
        self._effects: list[Effect] = []
        self._reconciles: list[Effect] = []
        self._run = 0
        self._baseline: Counter[tuple[str, str]] | None = None
        self._baseline_run: int | None = None
        self._on_new_run: list[Callable[[], object]] = []
        self.label = "run 0"

    @property
    def booked(self) -> bool:
        """Whether any effect or reconciliation was booked at all, in any run: a ledger that booked nothing
        (none declared, or a ``durable.world()`` whose fakes book nothing) checked no effect (PLG-24)."""
        return bool(self._effects or self._reconciles)

    # -- booking -----------------------------------------------------------------------------------------

    def book(self, name: str, call_id: str | None = None) -> None:
        """Book one effect of ``name`` now; ``call_id`` defaults to the running durable call's id."""
        with self._lock:
            self._effects.append(Effect(name, call_id or _call_id((), {}), self._run))

    def book_reconciled(self, name: str, call_id: str | None = None) -> None:
        """Book that a reconciler confirmed ``name`` already happened (instead of doing it again)."""
        with self._lock:
            self._reconciles.append(Effect(name, call_id or _call_id((), {}), self._run))

    def wrap(
        self, fn: Callable[P, R], name: str | None = None, *, dedup: Callable[..., object] | None = None
    ) -> Callable[P, R]:
        """``fn`` with every call booked. The wrapper keeps ``__module__``/``__qualname__``, so a wrapped
        durable function keeps its function id and its recorded calls still replay.

        ``dedup`` declares that the external system deduplicates: called with ``fn``'s arguments it returns
        the key it deduplicates on (e.g. a request id), or None for a call it will not deduplicate. Calls
        repeating a key count as one effect; a re-execution that sends a *different* key is a duplicate."""
        label: str = name or str(getattr(fn, "__qualname__", repr(fn)))

        @functools.wraps(fn)
        def booked(*args: P.args, **kwargs: P.kwargs) -> R:
            found = None if dedup is None else dedup(*args, **kwargs)
            key = None if found is None else str(found)
            with self._lock:
                self._effects.append(Effect(label, _call_id(args, kwargs), self._run, key))
            return fn(*args, **kwargs)

        return booked

    def wrap_reconciler(self, fn: Callable[[], R], name: str) -> Callable[[], R]:
        """A reconciler that books ``name`` as reconciled when it answers (returns without raising)."""

        @functools.wraps(fn)
        def reconcile() -> R:
            value = fn()
            self.book_reconciled(name)
            return value

        return reconcile

    def client(self, obj: Any, name: str | None = None, methods: Iterable[str] | None = None) -> Any:
        """A proxy over an HTTP-like client or DB handle: each public method call (or only ``methods``)
        is booked as ``name.method``."""
        return _BookedClient(self, obj, name or type(obj).__name__, frozenset(methods) if methods else None)

    # -- runs ----------------------------------------------------------------------------------------------

    def new_run(self, label: str, *, baseline: bool = False) -> None:
        """Start booking a new run; with ``baseline`` it becomes the expectation for the runs after it."""
        with self._lock:
            self._run += 1
            self.label = label
            if baseline:
                self._baseline_run = self._run
        for callback in self._on_new_run:
            callback()

    @property
    def run(self) -> int:
        """The number of the current run (1 for the first :meth:`new_run`)."""
        return self._run

    def position(self) -> tuple[int, int]:
        """How many effects and reconciliations are booked so far, across runs."""
        with self._lock:
            return len(self._effects), len(self._reconciles)

    def rebook(self, run: int, start: tuple[int, int], end: tuple[int, int]) -> None:
        """Book again, in the current run, what ``run`` booked between positions ``start`` and ``end``: a
        sweep scenario started from a snapshot takes on the effects of the run before its crash (PLG-16)."""
        with self._lock:
            now = self._run
            self._effects.extend(
                Effect(e.name, e.call_id, now, e.dedup) for e in self._effects[start[0] : end[0]] if e.run == run
            )
            self._reconciles.extend(
                Effect(e.name, e.call_id, now, e.dedup) for e in self._reconciles[start[1] : end[1]] if e.run == run
            )

    def has_run_hooks(self) -> bool:
        """Whether something (``durable.world``) resets state of its own at every new run."""
        return bool(self._on_new_run)

    def on_new_run(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` whenever a run starts (``durable.world`` makes its fresh fake there)."""
        self._on_new_run.append(callback)

    def _counts(self, items: list[Effect], run: int) -> Counter[tuple[str, str]]:
        return Counter((e.name, e.call_id) for e in items if e.run == run)

    def _delivered(self, run: int) -> Counter[tuple[str, str]]:
        # Deduplicated effects count once per distinct key; others once per call.
        seen: set[tuple[str, str, str]] = set()
        out: Counter[tuple[str, str]] = Counter()
        for e in self._effects:
            if e.run != run:
                continue
            if e.dedup is not None:
                if (e.name, e.call_id, e.dedup) in seen:
                    continue
                seen.add((e.name, e.call_id, e.dedup))
            out[(e.name, e.call_id)] += 1
        return out

    def rows(self) -> list[LedgerRow]:
        """Every (effect, id) pair of the current run with its classification, sorted."""
        with self._lock:
            attempts = self._counts(self._effects, self._run)
            happened = self._delivered(self._run)
            reconciled = self._counts(self._reconciles, self._run)
            if self._baseline_run is not None and self._baseline_run != self._run:
                expected = self._delivered(self._baseline_run)
            else:
                expected = Counter(dict.fromkeys(happened, 1))
        rows = []
        for pair in sorted(set(happened) | set(expected) | set(reconciled)):
            want, got, rec = expected.get(pair, 0), happened.get(pair, 0), reconciled.get(pair, 0)
            status: Status
            if want == 0:
                status = "unexpected"
            elif got > want:
                status = "duplicated"
            elif got < want:
                status = "lost"
            elif rec:
                status = "reconciled"
            else:
                status = "ok"
            rows.append(LedgerRow(pair[0], pair[1], want, got, rec, status, attempts.get(pair, 0)))
        return rows

    def anomalies(self) -> list[LedgerRow]:
        """Rows that are duplicated, lost or unexpected."""
        return [r for r in self.rows() if r.status in ANOMALIES]

    def counts(self) -> Counter[str]:
        """How many rows of the current run have each status."""
        return Counter(r.status for r in self.rows())

    def table(self, rows: list[LedgerRow] | None = None) -> str:
        """The ledger as an aligned text table."""
        rows = self.rows() if rows is None else rows
        head = ("effect", "idempotency id", "expected", "happened", "attempts", "reconciled", "status")
        body = [
            (r.name, r.call_id, str(r.expected), str(r.happened), str(r.attempts), str(r.reconciled), r.status)
            for r in rows
        ]
        widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
        return "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in [head, *body]
        )

    def violations(self, rows: list[LedgerRow] | None = None) -> list[str]:
        """One PLG-3 message per anomaly of the current run (of ``rows``, when given: :meth:`rows` once read)."""
        return [
            f"PLG-3: effect {r.name} for {r.call_id} {r.status} in {self.label} "
            f"(expected {r.expected}, happened {r.happened})"
            for r in (self.rows() if rows is None else rows)
            if r.status in ANOMALIES
        ]

    def assert_exactly_once(self) -> None:
        """Fail with the ledger table unless every effect of the current run happened as expected."""
        bad = self.anomalies()
        if bad:
            raise LedgerError(f"side effects not exactly once in {self.label} (PLG-3):\n{self.table()}")


class _BookedClient:
    def __init__(self, ledger: Ledger, obj: Any, name: str, methods: frozenset[str] | None) -> None:
        self._ledger, self._obj, self._name, self._methods = ledger, obj, name, methods

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._obj, attr)
        wanted = attr in self._methods if self._methods is not None else not attr.startswith("_")
        if callable(value) and wanted:
            return self._ledger.wrap(value, f"{self._name}.{attr}")
        return value
