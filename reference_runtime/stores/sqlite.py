"""SQLite store: the embedded default. One file (isolated stores may share it, each with its own table
prefix), WAL journal, ``synchronous=FULL``; every write is one transaction, so a process killed mid-write
leaves the previous committed state intact."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from ..errors import CorruptRecordError, Location, StoreDataLostError, StoreError, location
from ..records import ActionState, CallResult, StateRef
from .base import RecoveryMarker
from .native import decode_call_result, decode_state, encode_call_result, encode_state
from .scheme import InspectedState, StoreUrl, bad_url

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {p}action_states (
    state_key TEXT PRIMARY KEY,
    business_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    action TEXT NOT NULL,
    header BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}action_states_by_key ON {p}action_states (business_key, seq);
CREATE TABLE IF NOT EXISTS {p}call_results (
    state_key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (state_key, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {p}meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO {p}meta VALUES ('writes', 0);
INSERT OR IGNORE INTO {p}meta VALUES ('epoch', abs(random()));
"""


def _describe(exc: sqlite3.Error) -> str:
    """The error with its SQLite error name (SQLITE_FULL, SQLITE_BUSY, ...) when the module knows it."""
    name = getattr(exc, "sqlite_errorname", None)
    return f"{exc} ({name})" if name else str(exc)


_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
#: The WAL size (pages) at which a store that syncs on every commit checkpoints; SQLite's default otherwise.
FULL_WAL_AUTOCHECKPOINT = 100


def wal_autocheckpoint(synchronous: str) -> int:
    """The WAL size in pages at which a store at ``synchronous`` checkpoints (spec COST-6). A commit that
    appends to the WAL syncs the file's new size too (a journal commit of the file system), one that
    rewrites WAL space already there does not: at FULL and EXTRA, which sync every commit, a small WAL is
    reused from its start after ~50 calls instead of ~500. NORMAL and OFF sync only at checkpoints, so
    they keep SQLite's 1 000."""
    return FULL_WAL_AUTOCHECKPOINT if synchronous.upper() in ("FULL", "EXTRA") else 1000


_NAMESPACE = re.compile(r"^[A-Za-z0-9_]{0,64}$")


class SqliteStore:
    """An :class:`~reference_runtime.stores.base.ActionStateStore` in one SQLite file."""

    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: str = "FULL", namespace: str = "", timeout: float = 5.0
    ) -> None:
        """``namespace`` prefixes the store's tables, so isolated stores share one file; ``timeout`` is how
        long an operation waits for a file locked by another process before it fails (spec FAIL-2; the run
        then stops with that one error)."""
        if synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"SQLite store synchronous={synchronous!r}: use one of {', '.join(_SYNCHRONOUS)}")
        if not _NAMESPACE.match(namespace):
            raise ValueError(f"SQLite store namespace {namespace!r}: letters, digits and '_' only")
        self.path = Path(path)
        self.namespace = namespace
        self.url = f"sqlite:{self.path}"
        # Isolated stores share one file, each in its own tables (spec STORE-10).
        self._p = f"{namespace}__" if namespace else ""
        if self.path.is_dir():
            raise StoreError(
                f"cannot open SQLite store {self.url}: {self.path} is a directory; sqlite:PATH names one database file"
            )
        try:
            self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=timeout)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
            self._conn.execute(f"PRAGMA wal_autocheckpoint={wal_autocheckpoint(synchronous)}")
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            self._conn.executescript(_SCHEMA.format(p=self._p))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.url}: {exc}") from exc
        self._lock = threading.RLock()
        self.bytes_written = 0
        # Built once: the same string object every call, so the connection's statement cache finds it
        # without formatting or hashing a new string. The guard (the state exists, the record leaves no gap)
        # is the inserted row's index: NULL when it fails, which the NOT NULL column refuses with an
        # IntegrityError, rolling the statement back. An INSERT ... SELECT ... WHERE guard reading the table
        # it writes would make SQLite copy its one row into a temporary table first (spec COST-5).
        self._guarded_insert = (
            f"INSERT OR REPLACE INTO {self._p}call_results VALUES (?1, CASE WHEN"
            f" EXISTS (SELECT 1 FROM {self._p}action_states WHERE state_key = ?1)"
            # The last record's index by one backward seek; MAX(idx) seeks the same but runs the aggregate.
            f" AND ?2 <= COALESCE((SELECT idx FROM {self._p}call_results WHERE state_key = ?1"
            " ORDER BY idx DESC LIMIT 1) + 1, 0)"
            " THEN ?2 END, ?3)"
        )

    def _tx(
        self,
        statements: Sequence[tuple[str, Sequence[object]]],
        guard: Callable[[], None] | None = None,
        *,
        count: bool = True,
    ) -> None:
        """Run ``statements`` in one transaction. With ``guard``, a statement refused by a constraint
        (the guarded insert's NULL index) makes ``guard`` raise the reason, and the transaction is rolled
        back. ``count`` bumps the write counter that recovery markers report; call records skip it, which
        saves a page write per durable call (the counter only has to move when action states change)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    for sql, params in statements:
                        try:
                            self._conn.execute(sql, params)
                        except sqlite3.IntegrityError:
                            if guard is None:
                                raise
                            guard()
                    if count:
                        self._conn.execute(f"UPDATE {self._p}meta SET value = value + 1 WHERE name = 'writes'")
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
        header = encode_state(state, ref=ref)
        calls = [encode_call_result(r, ref, i) for i, r in enumerate(state.call_results)]
        stmts: list[tuple[str, Sequence[object]]] = [
            (
                f"INSERT OR REPLACE INTO {self._p}action_states VALUES (?, ?, ?, ?, ?)",
                (ref.state_key, ref.key, ref.seq, ref.action.name, header),
            ),
            (f"DELETE FROM {self._p}call_results WHERE state_key = ?", (ref.state_key,)),
        ]
        stmts += [
            (f"INSERT INTO {self._p}call_results VALUES (?, ?, ?)", (ref.state_key, i, c)) for i, c in enumerate(calls)
        ]
        self._tx(stmts)
        self.bytes_written += len(header) + sum(len(c) for c in calls)

    def get(self, ref: StateRef) -> ActionState | None:
        with self._lock:
            try:
                row = self._conn.execute(
                    f"SELECT header FROM {self._p}action_states WHERE state_key = ?", (ref.state_key,)
                ).fetchone()
                if row is None:
                    # STORE-3; the usual miss (a new input) finds nothing later and writes nothing.
                    later = self._conn.execute(
                        f"SELECT 1 FROM {self._p}action_states WHERE business_key = ? AND seq > ? LIMIT 1",
                        (ref.key, ref.seq),
                    ).fetchone()
                    if later is None:
                        return None
                    self._tx(
                        [
                            (
                                f"DELETE FROM {self._p}call_results WHERE state_key IN (SELECT state_key"
                                f" FROM {self._p}action_states WHERE business_key = ? AND seq > ?)",
                                (ref.key, ref.seq),
                            ),
                            (
                                f"DELETE FROM {self._p}action_states WHERE business_key = ? AND seq > ?",
                                (ref.key, ref.seq),
                            ),
                        ]
                    )
                    return None
                calls = self._conn.execute(
                    f"SELECT idx, body FROM {self._p}call_results WHERE state_key = ? ORDER BY idx", (ref.state_key,)
                ).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.url} read failed [{location(ref)}]: {_describe(exc)}") from exc
        state = decode_state(row[0], location(ref))
        results = []
        for expected, (idx, body) in enumerate(calls):
            if idx != expected:
                raise CorruptRecordError(f"call results have a gap before index {idx}", location(ref, expected))
            results.append(decode_call_result(body, location(ref, idx)))
        state.call_results = results
        return state

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        if not results:
            return
        # A record is written only if its state exists and it leaves no gap; both are index lookups on the
        # primary keys, so a call costs the same after 10 or 100 000 earlier calls.
        if len(results) == 1:
            # A durable call's path. One statement outside BEGIN is its own transaction; it takes the write
            # lock before it reads (a write statement starts with it), so it is as atomic and waits on a
            # lock like the rest, and saves the BEGIN and COMMIT round trips on every durable call.
            body = encode_call_result(results[0], ref, index)
            with self._lock:
                try:
                    self._conn.execute(self._guarded_insert, (ref.state_key, index, body))
                except sqlite3.IntegrityError:
                    pass  # the guard failed: nothing was written; why is read below, under the same lock
                except sqlite3.Error as exc:
                    raise StoreError(f"SQLite store {self.url} write failed: {_describe(exc)}") from exc
                else:
                    self.bytes_written += len(body)
                    return
                self._refuse_put(ref, index)
        encoded = [encode_call_result(r, ref, index + i) for i, r in enumerate(results)]
        # Every record through the guarded statement: once the first passes, each later one does too (the
        # one before it is there), and one statement is one entry of the connection's statement cache.
        stmts = [(self._guarded_insert, (ref.state_key, index + i, body)) for i, body in enumerate(encoded)]
        self._tx(stmts, guard=lambda: self._refuse_put(ref, index), count=False)
        self.bytes_written += sum(len(c) for c in encoded)

    def _refuse_put(self, ref: StateRef, index: int) -> None:
        """Why the guarded insert of the record at ``index`` was refused (after its statement was rolled
        back; in a batch's transaction, before that is)."""
        exists = self._conn.execute(
            f"SELECT 1 FROM {self._p}action_states WHERE state_key = ?", (ref.state_key,)
        ).fetchone()
        if exists is None:
            raise StoreError(f"no action state to add call results to [{location(ref, index)}]")
        (count,) = self._conn.execute(
            f"SELECT COALESCE(MAX(idx) + 1, 0) FROM {self._p}call_results WHERE state_key = ?", (ref.state_key,)
        ).fetchone()
        raise StoreError(f"call index {index} leaves a gap after {count} records [{location(ref, index)}]")

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self._tx([(f"DELETE FROM {self._p}call_results WHERE state_key = ? AND idx >= ?", (ref.state_key, index))])

    def prune_state(self, key: str, seq: int) -> None:
        self._tx(
            [
                (
                    f"DELETE FROM {self._p}call_results WHERE state_key IN"
                    f" (SELECT state_key FROM {self._p}action_states WHERE business_key = ? AND seq <= ?)",
                    (key, seq),
                ),
                (f"DELETE FROM {self._p}action_states WHERE business_key = ? AND seq <= ?", (key, seq)),
            ]
        )

    def _bookkeeping(self) -> tuple[int, int]:
        """The write counter and the epoch (a random number the tables got when they were created)."""
        with self._lock:
            try:
                rows = dict(
                    self._conn.execute(
                        f"SELECT name, value FROM {self._p}meta WHERE name IN ('writes', 'epoch')"
                    ).fetchall()
                )
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.url} read failed: {_describe(exc)}") from exc
        writes, epoch = rows.get("writes"), rows.get("epoch")
        if not isinstance(writes, int) or not isinstance(epoch, int):
            raise StoreError(f"SQLite store {self.url}: its meta table holds {rows!r}, not a write count and an epoch")
        return writes, epoch

    def get_recovery_marker(self) -> RecoveryMarker:
        writes, epoch = self._bookkeeping()
        return {"writes": writes, "epoch": epoch}

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        # Committed transactions are already durable in the file; nothing to replay. The markers must have
        # been taken on these tables (their epoch) and not after writes the file no longer has (FAIL-4).
        writes, epoch = self._bookkeeping()
        for marker in markers:
            taken = marker.get("epoch") if isinstance(marker, dict) else None
            counted = marker.get("writes") if isinstance(marker, dict) else None
            if not isinstance(counted, int) or not isinstance(taken, int | None):
                raise StoreError(f"SQLite store {self.url}: recovery marker {marker!r} is not a SQLite marker")
            if (taken is not None and taken != epoch) or counted > writes:
                raise StoreDataLostError(
                    f"SQLite store {self.url} lost data since the checkpoint: the marker was taken at write {counted}"
                    f" of epoch {taken}, the tables are at write {writes} of epoch {epoch} (the file was replaced, "
                    "or its tables dropped and created again); recovering would run completed durable calls again"
                )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def destroy(self) -> None:
        """Close the store and drop its tables: what a test run leaves behind in a shared file. Works on
        a closed store too (it opens its own connection); the file itself stays."""
        self.close()
        drop_namespaces(self.path, [self.namespace])


def drop_namespaces(path: str | os.PathLike[str], namespaces: Sequence[str]) -> None:
    """Drop the tables of the stores with these namespaces in the file ``path``, in one transaction."""
    bad = [n for n in namespaces if not _NAMESPACE.match(n)]
    if bad:
        raise ValueError(f"SQLite store namespaces {bad!r}: letters, digits and '_' only")
    try:
        conn = sqlite3.connect(str(path), isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("BEGIN IMMEDIATE")  # one transaction: one sync, not one per table
            for namespace in namespaces:
                prefix = f"{namespace}__" if namespace else ""
                for table in ("call_results", "action_states", "meta"):
                    conn.execute(f"DROP TABLE IF EXISTS {prefix}{table}")
            conn.execute("COMMIT")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(
            f"SQLite store sqlite:{path}: cannot drop the tables of {len(namespaces)} store(s): {exc}"
        ) from exc


def parse_sqlite_url(url: str) -> StoreUrl:
    """``sqlite:PATH`` or ``sqlite://PATH``; an empty path means a file in a directory the caller gives."""
    path = url.partition(":")[2]
    return StoreUrl(url, "sqlite", path=path[2:] if path.startswith("//") else path)


#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def check_sqlite_url(parsed: StoreUrl) -> None:
    """Refuse, before anything is created or written, a path that is a directory, whose directory does not
    exist, or that is a file other than a SQLite database (an empty file is fine: SQLite makes it one).
    The file is only read (CLI-4)."""
    if not parsed.path:
        return
    path = Path(parsed.path)
    if path.is_dir():
        raise _a_directory(parsed.text, path)
    if path.exists():
        try:
            with path.open("rb") as file:
                head = file.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise StoreError(f"store URL {parsed.text!r}: cannot read {path}: {exc.strerror or exc}") from None
        if head and head != SQLITE_HEADER:
            raise StoreError(
                f"store URL {parsed.text!r}: {path} is not a SQLite database; name a new file or an existing "
                "database (the file was left as it is)"
            )
    if not path.parent.is_dir():
        # A mistyped path must not leave a tree of new directories and an empty database behind.
        raise StoreError(
            f"store URL {parsed.text!r}: the directory {path.parent} does not exist; "
            "create it or name a file in an existing directory"
        )


def _a_directory(url: str, path: Path) -> StoreError:
    return StoreError(f"store URL {url!r}: {path} is a directory; sqlite:PATH names one database file")


def require_path(parsed: StoreUrl) -> str:
    """The file of ``sqlite:PATH``; ``sqlite:`` alone names none."""
    if not parsed.path:
        raise bad_url(parsed.text, "sqlite: needs a file path (sqlite:PATH)")
    return parsed.path


def _open_read_only(file: Path, path: str) -> sqlite3.Connection:
    """A read-only connection to the database ``file``, on read-only media too (spec INS-5, INS-9).

    A WAL database is opened with its shared-memory file, which SQLite creates if it is missing: on a
    read-only directory that fails ("unable to open database file") though nothing needs writing. Without a
    ``-wal`` file holding changes, everything is in the database file, so it is opened ``immutable`` (no
    shared memory, no locks); with one, SQLite cannot read it without ``-shm``, and the error says so."""
    uri = file.resolve().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"sqlite:{path}: cannot open read-only: {exc}") from exc
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # opening is lazy: this opens it
        return conn
    except sqlite3.Error as exc:
        conn.close()
        first = exc
    wal = Path(f"{file}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreError(
            f"sqlite:{path}: cannot open read-only ({first}): its write-ahead log {wal.name} holds changes SQLite can "
            f"read only with {file.name}-shm, which it cannot create here; copy the files to writable storage"
        )
    try:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"sqlite:{path}: cannot open read-only: {exc}") from exc


def read_states(path: str) -> Iterator[InspectedState]:
    """Every state in the SQLite file ``path`` (the default, un-prefixed tables), read through a read-only
    connection: nothing is created or written."""
    file = Path(path)
    if file.is_dir():
        raise _a_directory(f"sqlite:{path}", file)
    if not file.is_file():
        raise StoreError(f"sqlite:{path}: no such file")
    conn = _open_read_only(file, path)
    try:
        rows = conn.execute("SELECT state_key, business_key, seq, action, header FROM action_states").fetchall()
        calls: dict[str, list[tuple[int, bytes]]] = {}
        for sk, idx, body in conn.execute("SELECT state_key, idx, body FROM call_results ORDER BY state_key, idx"):
            calls.setdefault(sk, []).append((idx, body))
    except sqlite3.Error as exc:
        raise StoreError(f"sqlite:{path}: not a pytest-durable store: {exc}") from exc
    finally:
        conn.close()
    for sk, key, seq, action, header in rows:
        loc = Location(key, seq, action)

        def decode(header: bytes = header, sk: str = sk, loc: Location = loc) -> tuple[ActionState, str]:
            state = decode_state(header, loc)
            for expected, (idx, body) in enumerate(calls.get(sk, [])):
                if idx != expected:
                    raise CorruptRecordError(
                        f"call results have a gap before index {idx}", Location(loc.key, loc.seq, loc.action, expected)
                    )
                state.call_results.append(decode_call_result(body, Location(loc.key, loc.seq, loc.action, idx)))
            return state, "native"

        yield sk, key, seq, action, decode
