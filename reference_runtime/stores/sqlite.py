"""SQLite store: the embedded default. One file, WAL journal, ``synchronous=FULL``; every write is one
transaction, so a process killed mid-write leaves the previous committed state intact."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import CorruptRecordError, Location, StoreError
from ..records import ActionState, CallResult, StateRef
from .base import RecoveryMarker
from .native import decode_call_result, decode_state, encode_call_result, encode_state

_SCHEMA = """
CREATE TABLE IF NOT EXISTS action_states (
    state_key TEXT PRIMARY KEY,
    business_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    action TEXT NOT NULL,
    header BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS action_states_by_key ON action_states (business_key, seq);
CREATE TABLE IF NOT EXISTS call_results (
    state_key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (state_key, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('writes', 0);
"""


def _describe(exc: sqlite3.Error) -> str:
    """The error with its SQLite error name (SQLITE_FULL, SQLITE_BUSY, ...) when the module knows it."""
    name = getattr(exc, "sqlite_errorname", None)
    return f"{exc} ({name})" if name else str(exc)


def _loc(ref: StateRef, index: int | None = None) -> Location:
    return Location(ref.key, ref.seq, ref.action.name, index)


class SqliteStore:
    """An :class:`~reference_runtime.stores.base.ActionStateStore` in one SQLite file."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL", timeout: float = 5.0) -> None:
        """``timeout``: how long an operation waits for a file locked by another process before it fails
        (spec FAIL-2; the run then stops with that one error)."""
        self.path = Path(path)
        self.url = f"sqlite:{self.path}"
        try:
            self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None,
                                         timeout=timeout)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.url}: {exc}") from exc
        self._lock = threading.RLock()
        self.bytes_written = 0

    def _tx(
        self,
        statements: Sequence[tuple[str, Sequence[object]]],
        guard: Callable[[], None] | None = None,
        *,
        count: bool = True,
    ) -> None:
        """Run ``statements`` in one transaction. With ``guard``, the first statement must change a row;
        if it changed none, ``guard`` raises the reason and the transaction is rolled back. ``count``
        bumps the write counter that recovery markers report; call records skip it, which saves a page
        write per durable call (the counter only has to move when action states change)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    for n, (sql, params) in enumerate(statements):
                        cur = self._conn.execute(sql, params)
                        if n == 0 and guard is not None and cur.rowcount == 0:
                            guard()
                    if count:
                        self._conn.execute("UPDATE meta SET value = value + 1 WHERE name = 'writes'")
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.url} write failed: {_describe(exc)}") from exc

    def _rollback(self) -> None:
        # After a full disk or an I/O error SQLite has often rolled the transaction back itself; a second
        # ROLLBACK would then fail with "no transaction is active" and hide the real cause (spec FAIL-3).
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def put(self, ref: StateRef, state: ActionState) -> None:
        header = encode_state(state)
        calls = [encode_call_result(r) for r in state.call_results]
        stmts: list[tuple[str, Sequence[object]]] = [
            (
                "INSERT OR REPLACE INTO action_states VALUES (?, ?, ?, ?, ?)",
                (ref.state_key, ref.key, ref.seq, ref.action.name, header),
            ),
            ("DELETE FROM call_results WHERE state_key = ?", (ref.state_key,)),
        ]
        stmts += [
            ("INSERT INTO call_results VALUES (?, ?, ?)", (ref.state_key, i, c)) for i, c in enumerate(calls)
        ]
        self._tx(stmts)
        self.bytes_written += len(header) + sum(len(c) for c in calls)

    def get(self, ref: StateRef) -> ActionState | None:
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT header FROM action_states WHERE state_key = ?", (ref.state_key,)
                ).fetchone()
                if row is None:
                    # STORE-3; the usual miss (a new input) finds nothing later and writes nothing.
                    later = self._conn.execute(
                        "SELECT 1 FROM action_states WHERE business_key = ? AND seq > ? LIMIT 1", (ref.key, ref.seq)
                    ).fetchone()
                    if later is None:
                        return None
                    self._tx([
                        ("DELETE FROM call_results WHERE state_key IN (SELECT state_key FROM action_states"
                         " WHERE business_key = ? AND seq > ?)", (ref.key, ref.seq)),
                        ("DELETE FROM action_states WHERE business_key = ? AND seq > ?", (ref.key, ref.seq)),
                    ])
                    return None
                calls = self._conn.execute(
                    "SELECT idx, body FROM call_results WHERE state_key = ? ORDER BY idx", (ref.state_key,)
                ).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.url} read failed [{_loc(ref)}]: {_describe(exc)}") from exc
        state = decode_state(row[0], _loc(ref))
        results = []
        for expected, (idx, body) in enumerate(calls):
            if idx != expected:
                raise CorruptRecordError(f"call results have a gap before index {idx}", _loc(ref, expected))
            results.append(decode_call_result(body, _loc(ref, idx)))
        state.call_results = results
        return state

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        encoded = [encode_call_result(r) for r in results]
        if not encoded:
            return
        # The first record is written only if its state exists and it leaves no gap (STORE-9); both are
        # index lookups on the primary keys, so a call costs the same after 10 or 100 000 earlier calls.
        first: tuple[str, Sequence[object]] = (
            "INSERT OR REPLACE INTO call_results SELECT ?1, ?2, ?3"
            " WHERE EXISTS (SELECT 1 FROM action_states WHERE state_key = ?1)"
            " AND ?2 <= (SELECT COALESCE(MAX(idx) + 1, 0) FROM call_results WHERE state_key = ?1)",
            (ref.state_key, index, encoded[0]),
        )
        rest = [
            ("INSERT OR REPLACE INTO call_results VALUES (?, ?, ?)", (ref.state_key, index + i, body))
            for i, body in enumerate(encoded[1:], start=1)
        ]
        self._tx([first, *rest], guard=lambda: self._refuse_put(ref, index), count=False)
        self.bytes_written += sum(len(c) for c in encoded)

    def _refuse_put(self, ref: StateRef, index: int) -> None:
        """Why the guarded first insert wrote nothing (runs inside the rolled-back transaction)."""
        exists = self._conn.execute("SELECT 1 FROM action_states WHERE state_key = ?", (ref.state_key,)).fetchone()
        if exists is None:
            raise StoreError(f"no action state to add call results to [{_loc(ref, index)}]")
        (count,) = self._conn.execute(
            "SELECT COALESCE(MAX(idx) + 1, 0) FROM call_results WHERE state_key = ?", (ref.state_key,)
        ).fetchone()
        raise StoreError(f"call index {index} leaves a gap after {count} records [{_loc(ref, index)}]")

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self._tx([("DELETE FROM call_results WHERE state_key = ? AND idx >= ?", (ref.state_key, index))])

    def prune_state(self, key: str, seq: int) -> None:
        self._tx([
            ("DELETE FROM call_results WHERE state_key IN (SELECT state_key FROM action_states"
             " WHERE business_key = ? AND seq <= ?)", (key, seq)),
            ("DELETE FROM action_states WHERE business_key = ? AND seq <= ?", (key, seq)),
        ])

    def get_recovery_marker(self) -> RecoveryMarker:
        with self._lock:
            try:
                row = self._conn.execute("SELECT value FROM meta WHERE name = 'writes'").fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.url} read failed: {_describe(exc)}") from exc
        return {"writes": int(row[0])}

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        # Committed transactions are already durable in the file; nothing to replay.
        return None

    def close(self) -> None:
        with self._lock:
            self._conn.close()
