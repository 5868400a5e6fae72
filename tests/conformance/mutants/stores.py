"""Broken stores: each one of the correct stores of :mod:`.base` with one plausible bug, and the clause
that bug violates (``VIOLATES``). Written through the public store protocol only."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import fnmatch
import json
import re
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Sequence
from typing import Any

from reference_runtime.errors import EventClassError, Location, RecordLimitError
from reference_runtime.events import Event
from reference_runtime.limits import decode_limits
from reference_runtime.records import ActionState, CallResult, CallStatus, StateRef

from .base import DictStore, FullReplayLog, LogStore, SqlStore

# -- serialization fidelity (STORE-1) --------------------------------------------------------------------------


class BoolAsInt(DictStore):
    """Booleans go through an integer column: True comes back as 1."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        return int(v) if isinstance(v, bool) else super().dump_value(v)


class IntegralFloatAsInt(DictStore):
    """A "compact" number encoding writes 1.0 as 1."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return super().dump_value(v)


class FloatRounded(DictStore):
    """Floats are stored with 10 decimals."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        return {"f": repr(round(v, 10))} if isinstance(v, float) else super().dump_value(v)


class BigIntToFloat(DictStore):
    """Integers beyond 64 bits become floats, as in a JSON library with double-only numbers."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
            return {"f": repr(float(v))}
        return super().dump_value(v)


class BytesAsText(DictStore):
    """Bytes are decoded as Latin-1 text and come back as str."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        return v.decode("latin-1") if isinstance(v, bytes) else super().dump_value(v)


class BytesUtf8Replace(DictStore):
    """Payload bytes pass through a UTF-8 text column with errors='replace'."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        if isinstance(v, bytes):
            return {"b": __import__("base64").b64encode(v.decode("utf-8", "replace").encode()).decode()}
        return super().dump_value(v)


class EmptyBytesAsNone(DictStore):
    """An empty payload is stored as "no payload"."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        return None if v == b"" else super().dump_value(v)


class NonAsciiReplaced(DictStore):
    """Text goes through an ASCII-only column: non-ASCII characters become '?'."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        if isinstance(v, str):
            return v.encode("ascii", "replace").decode()
        return super().dump_value(v)


class NulTerminated(DictStore):
    """Strings pass through a C API and end at the first NUL character."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        return v.split("\x00")[0] if isinstance(v, str) else super().dump_value(v)


class WhitespaceTrimmed(DictStore):
    """Strings are trimmed on the way in."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        return v.strip() if isinstance(v, str) else super().dump_value(v)


class IntLikeKeysBecomeInts(DictStore):
    """Map keys that look like numbers come back as numbers."""

    VIOLATES = "STORE-1"

    def load_value(self, v: Any) -> Any:
        out = super().load_value(v)
        if isinstance(v, dict) and "d" in v:
            return {int(k) if k.isdigit() else k: x for k, x in out.items()}
        return out


class LongStringsCut(DictStore):
    """A text column of 65 535 characters: longer strings are cut."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        return v[:65535] if isinstance(v, str) else super().dump_value(v)


class LargePayloadDropped(DictStore):
    """Payloads over 256 KiB exceed a value-size limit and are silently left out."""

    VIOLATES = "STORE-1"

    def dump_value(self, v: Any) -> Any:
        return None if isinstance(v, bytes) and len(v) > 256 * 1024 else super().dump_value(v)


class LegacyStatusBecomesSucceeded(DictStore):
    """A call result without status (a legacy record) is written with SUCCEEDED."""

    VIOLATES = "STORE-1"

    def dump_call(self, c: CallResult) -> str:
        return super().dump_call(c._replace(status=c.effective_status))


class EventLineageDropped(DictStore):
    """Events are stored without their upstream event id and action."""

    VIOLATES = "STORE-1"

    def dump_event(self, e: Any) -> Any:
        d = super().dump_event(e)
        if d is not None:
            d["upstream"] = [None, None]
        return d


class EventIdRegenerated(DictStore):
    """Events are rebuilt with a fresh id on read."""

    VIOLATES = "STORE-1"

    def load_event(self, d: Any, loc: Location | None = None) -> Any:
        e = super().load_event(d, loc)
        if e is not None:
            e.id = __import__("uuid").uuid4()
        return e


class OutputEventsNewestFirst(DictStore):
    """Output events are read back newest first (pushed on a stack)."""

    VIOLATES = "STORE-1"

    def load_header(self, text: str, loc: Location | None = None) -> ActionState:
        s = super().load_header(text, loc)
        s.output_events.reverse()
        return s


class ObjectCreationLost(DictStore):
    """The object-creation flag of memory updates is not stored."""

    VIOLATES = "STORE-1"

    def load_updates(self, raw: Any) -> Any:
        return [u.__class__(u.path, u.value) for u in super().load_updates(raw)]


class SensoryNotStored(DictStore):
    """Sensory-memory updates are "transient" and not stored."""

    VIOLATES = "STORE-1"

    def load_header(self, text: str, loc: Location | None = None) -> ActionState:
        s = super().load_header(text, loc)
        s.sensory_memory_updates = []
        return s


class FirstPutWins(SqlStore):
    """``INSERT OR IGNORE``: a second put of a state key keeps the first."""

    VIOLATES = "STORE-1"

    def header_statements(self, ref: StateRef, state: ActionState) -> list[tuple[str, Sequence[Any]]]:
        exists = self.conn.execute("SELECT 1 FROM states WHERE sk = ?", (ref.state_key,)).fetchone()
        if exists:
            return []
        return super().header_statements(ref, state)

    def call_statements(self, ref: StateRef, state: ActionState) -> list[tuple[str, Sequence[Any]]]:
        return [(s.replace("INSERT", "INSERT OR IGNORE"), p) for s, p in super().call_statements(ref, state)]


class PutKeepsStaleCallRows(SqlStore):
    """A put upserts its call rows but never deletes rows past its own count."""

    VIOLATES = "STORE-1"

    def header_statements(self, ref: StateRef, state: ActionState) -> list[tuple[str, Sequence[Any]]]:
        return super().header_statements(ref, state)[:1]

    def call_statements(self, ref: StateRef, state: ActionState) -> list[tuple[str, Sequence[Any]]]:
        return [(s.replace("INSERT", "INSERT OR REPLACE"), p) for s, p in super().call_statements(ref, state)]


class CompletedPutKeepsCalls(SqlStore):
    """Completing a state rewrites its header only; the old call rows stay."""

    VIOLATES = "STORE-8"

    def header_statements(self, ref: StateRef, state: ActionState) -> list[tuple[str, Sequence[Any]]]:
        stmts = super().header_statements(ref, state)
        return stmts[:1] if state.completed else stmts


class CompletedFlagLost(DictStore):
    """The completed flag is not part of the stored header."""

    VIOLATES = "STORE-8"

    def load_header(self, text: str, loc: Location | None = None) -> ActionState:
        s = super().load_header(text, loc)
        s.completed = False
        return s


# -- aliasing (STORE-15) ----------------------------------------------------------------------------------------


class KeepsCallersState(DictStore):
    """Stores the caller's state object itself, "to save a copy"."""

    VIOLATES = "STORE-15"

    def put(self, ref: StateRef, state: ActionState) -> None:
        with self.lock:
            self.entries()[ref.state_key] = [ref.key, ref.seq, state]

    def load_entry(self, e: list[Any], loc: Location | None = None) -> ActionState:
        state: ActionState = copy.deepcopy(e[2])
        return state

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with self.lock:
            calls = self.entries()[ref.state_key][2].call_results
            calls[index : index + len(results)] = results

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        with self.lock:
            del self.entries()[ref.state_key][2].call_results[index:]


class ReturnsItsOwnState(KeepsCallersState):
    """Copies on put, but get hands out the stored object itself."""

    VIOLATES = "STORE-15"

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, copy.deepcopy(state))

    def load_entry(self, e: list[Any], loc: Location | None = None) -> ActionState:
        state: ActionState = e[2]
        return state


class ShallowCopy(KeepsCallersState):
    """Copies the state with ``copy.copy``: the lists inside are still the caller's."""

    VIOLATES = "STORE-15"

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, copy.copy(state))


class LazyDeltaLog(DictStore):
    """Keeps each delta's list of records as handed over and applies them on read."""

    VIOLATES = "STORE-15"

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with self.lock:
            self.entries()[ref.state_key].append((index, results))

    def load_entry(self, e: list[Any], loc: Location | None = None) -> ActionState:
        state = self.load_header(e[2], loc)
        calls = [self.load_call(c) for c in e[3]]
        for index, results in e[4:]:
            calls[index : index + len(results)] = results
        state.call_results = calls
        return state

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        with self.lock:
            e = self.entries()[ref.state_key]
            state = self.get(ref)
            assert state is not None
            e[3:] = [[self.dump_call(c) for c in state.call_results[:index]]]


# -- addressing, ordering, comparison (STORE-2/3/4) ------------------------------------------------------------


class KeysCaseInsensitive(DictStore):
    """A case-insensitive collation: business key "A" is key "a"."""

    VIOLATES = "STORE-2"

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(self.fold(ref), state)

    def get(self, ref: StateRef) -> ActionState | None:
        return super().get(self.fold(ref))

    def fold(self, ref: StateRef) -> StateRef:
        return StateRef(ref.key.lower(), ref.seq, ref.action, ref.event, ref.state_key.lower(), ref.occurrence)


class FiledByKeyAndSeq(DictStore):
    """Files states under "key/seq", forgetting the action."""

    VIOLATES = "STORE-2"

    def sk(self, ref: StateRef) -> StateRef:
        return StateRef(ref.key, ref.seq, ref.action, ref.event, f"{ref.key}/{ref.seq}", ref.occurrence)

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(self.sk(ref), state)

    def get(self, ref: StateRef) -> ActionState | None:
        return super().get(self.sk(ref))

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        super().put_call_results(self.sk(ref), index, results)

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        super().truncate_call_results(self.sk(ref), index)


class MissComparesSeqAsText(DictStore):
    """The miss rule compares sequence numbers as strings ("10" < "9")."""

    VIOLATES = "STORE-3"

    def later(self, key: str, seq: int) -> list[str]:
        return [sk for sk, e in self.entries().items() if e[0] == key and str(e[1]) > str(seq)]


class MissHidesPrefixedKeys(DictStore):
    """The miss rule matches business keys by prefix."""

    VIOLATES = "STORE-3"

    def later(self, key: str, seq: int) -> list[str]:
        return [sk for sk, e in self.entries().items() if e[0].startswith(key) and e[1] > seq]


class MissHidesEveryKey(DictStore):
    """The miss rule forgets to filter by business key."""

    VIOLATES = "STORE-3"

    def later(self, key: str, seq: int) -> list[str]:
        return [sk for sk, e in self.entries().items() if e[1] > seq]


class MissDoesNotHide(DictStore):
    """A miss is just a miss."""

    VIOLATES = "STORE-3"

    def later(self, key: str, seq: int) -> list[str]:
        return []


class MissWatermarkHidesLaterPuts(DictStore):
    """Implements the miss rule with a per-key watermark that also hides states put afterwards."""

    VIOLATES = "STORE-3"

    def get(self, ref: StateRef) -> ActionState | None:
        marks = self.disk.setdefault("marks", {})
        if ref.key in marks and ref.seq > marks[ref.key]:
            return None
        got = super().get(ref)
        if got is None:
            marks[ref.key] = min(ref.seq, marks.get(ref.key, ref.seq))
        return got


class NegativeCache(DictStore):
    """Caches misses; a later put does not clear the cached miss."""

    VIOLATES = "STORE-3"

    def get(self, ref: StateRef) -> ActionState | None:
        misses = self.disk.setdefault("misses", set())
        if ref.state_key in misses:
            return None
        got = super().get(ref)
        if got is None:
            misses.add(ref.state_key)
        return got


class PruneComparesSeqAsText(DictStore):
    """Prune compares sequence numbers as strings."""

    VIOLATES = "STORE-4"

    def upto(self, key: str, seq: int) -> list[str]:
        return [sk for sk, e in self.entries().items() if e[0] == key and str(e[1]) <= str(seq)]


class PruneOffByOne(DictStore):
    """Prune keeps the state at seq itself."""

    VIOLATES = "STORE-4"

    def upto(self, key: str, seq: int) -> list[str]:
        return [sk for sk, e in self.entries().items() if e[0] == key and e[1] < seq]


class PruneByStateKeyPattern(DictStore):
    """Prunes by a glob over state keys ("{key}|*"), as a SCAN MATCH would: key "a" takes "a|0" along."""

    VIOLATES = "STORE-4"

    def upto(self, key: str, seq: int) -> list[str]:
        return [
            sk
            for sk, e in self.entries().items()
            if fnmatch.fnmatchcase(sk, f"{key}|*") and int(sk.rsplit("|", 2)[1]) <= seq
        ]


class PruneByKeyPrefix(DictStore):
    """Prunes every business key starting with the given one."""

    VIOLATES = "STORE-4"

    def upto(self, key: str, seq: int) -> list[str]:
        return [sk for sk, e in self.entries().items() if e[0].startswith(key) and e[1] <= seq]


class PruneIgnored(DictStore):
    """Prune is a no-op ("states expire anyway")."""

    VIOLATES = "STORE-4"

    def prune_state(self, key: str, seq: int) -> None:
        return None


class SqlSeqAsText(SqlStore):
    """The seq column is TEXT, so SQL compares sequence numbers as strings."""

    VIOLATES = "STORE-4"
    SCHEMA = SqlStore.SCHEMA.replace("seq INTEGER", "seq TEXT")

    def header_statements(self, ref: StateRef, state: ActionState) -> list[tuple[str, Sequence[Any]]]:
        (sql, p), *rest = super().header_statements(ref, state)
        return [(sql, (p[0], p[1], str(p[2]), p[3])), *rest]

    def delete(self, where: str, params: Sequence[Any]) -> None:
        super().delete(where, (params[0], str(params[1])))


class SqlPruneLike(SqlStore):
    """Prunes with ``sk LIKE key || '|%'``: wildcards and prefixed keys match too."""

    VIOLATES = "STORE-4"

    def prune_state(self, key: str, seq: int) -> None:
        rows = self.conn.execute("SELECT sk, seq FROM states WHERE sk LIKE ?", (f"{key}|%",)).fetchall()
        for sk, s in rows:
            if s <= seq:
                self.tx(("DELETE FROM calls WHERE sk = ?", (sk,)), ("DELETE FROM states WHERE sk = ?", (sk,)))


# -- deltas (STORE-5) ------------------------------------------------------------------------------------------


class FinalizeAppends(DictStore):
    """A delta is always appended, never written in place."""

    VIOLATES = "STORE-5"

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with self.lock:
            self.entries()[ref.state_key][3].extend(self.dump_call(r) for r in results)


class DeltaWritesFirstRecordOnly(DictStore):
    """A multi-record delta writes its first record only."""

    VIOLATES = "STORE-5"

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        super().put_call_results(ref, index, results[:1])


class TruncateOffByOne(DictStore):
    """Truncation keeps the record at the index."""

    VIOLATES = "STORE-5"

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        super().truncate_call_results(ref, index + 1)


class SlotsSortedAsText(DictStore):
    """Slots live in a map keyed by the index as text and are read back in key order ("10" < "2")."""

    VIOLATES = "STORE-5"

    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if state is not None:
            order = sorted(range(len(state.call_results)), key=str)
            state.call_results = [state.call_results[i] for i in order]
        return state


class TruncationResurfaces(DictStore):
    """Truncation lowers a length field; the next append sets it from the highest slot ever written."""

    VIOLATES = "STORE-5"

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, state)
        self.entries()[ref.state_key].append(len(state.call_results))

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with self.lock:
            e = self.entries()[ref.state_key]
            e[3][index : index + len(results)] = [self.dump_call(r) for r in results]
            e[4] = len(e[3])

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        with self.lock:
            e = self.entries()[ref.state_key]
            e[4] = min(e[4], index)

    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if state is not None:
            state.call_results = state.call_results[: self.entries()[ref.state_key][4]]
        return state


class ReadCacheMissesDeltas(DictStore):
    """A read cache filled on get and refreshed on put only."""

    VIOLATES = "STORE-5"

    def get(self, ref: StateRef) -> ActionState | None:
        cache = self.disk.setdefault("cache", {})
        if ref.state_key not in cache:
            got = super().get(ref)
            if got is None:
                return None
            cache[ref.state_key] = got
        return copy.deepcopy(cache[ref.state_key])

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, state)
        self.disk.setdefault("cache", {}).pop(ref.state_key, None)


class RacyCopyOnWrite(DictStore):
    """Writes replace the whole table with an updated copy, without a lock (a lost update under threads)."""

    VIOLATES = "STORE-5"

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        table = dict(self.entries())
        e = list(table[ref.state_key])
        calls = list(e[3])
        calls[index : index + len(results)] = [self.dump_call(r) for r in results]
        e[3] = calls
        table[ref.state_key] = e
        time.sleep(0)  # encoding work elsewhere; lets another writer in
        self.disk["states"] = table


# -- threads (STORE-16) ------------------------------------------------------------------------------------------


class ThreadLocalSession(DictStore):
    """Keeps a "session" per thread: writes land in the writing thread's own table."""

    VIOLATES = "STORE-16"

    def entries(self) -> dict[str, list[Any]]:
        tables = self.disk.setdefault("per_thread", {})
        states: dict[str, list[Any]] = tables.setdefault(threading.get_ident(), {})
        return states


class SqlDefaultThreadCheck(SqlStore):
    """Opens its connection with sqlite3's default ``check_same_thread=True``."""

    VIOLATES = "STORE-16"

    def connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.executescript(self.SCHEMA)
        return conn


# -- restarts and markers (STORE-6/7) -------------------------------------------------------------------------


class MarkerCompactsLog(LogStore):
    """Taking a marker compacts the log: records before it are dropped and offsets restart at 0."""

    VIOLATES = "STORE-6"

    def get_recovery_marker(self) -> Any:
        del self.disk["log"][:]
        return {"offset": 0}


class RebuildFromLatestMarker(LogStore):
    """Replays from the largest marker offset instead of the smallest."""

    VIOLATES = "STORE-6"

    def rebuild_state(self, markers: Sequence[Any]) -> None:
        start = max((m["offset"] for m in markers), default=0)
        super().rebuild_state([{"offset": start}])


class RebuildFromFirstMarkerListed(LogStore):
    """Replays from the first marker handed over."""

    VIOLATES = "STORE-6"

    def rebuild_state(self, markers: Sequence[Any]) -> None:
        super().rebuild_state(list(markers[:1]))


class DeltasNotLogged(LogStore):
    """Deltas update the cache only; the log has the puts."""

    VIOLATES = "STORE-6"

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with self.lock:
            self.apply(("C", ref.state_key, index, [self.dump_call(r) for r in results]))


class PruneNotLogged(LogStore):
    """Prune drops states from the cache only: they come back on replay."""

    VIOLATES = "STORE-6"

    def prune_state(self, key: str, seq: int) -> None:
        with self.lock:
            for sk in [sk for sk, x in self.cache.items() if x[0] == key and x[1] <= seq]:
                self.apply(("D", sk))


class RebuildConsumesLog(LogStore):
    """``rebuild_state`` trims the log to what it replayed, so an older marker points past the end."""

    VIOLATES = "STORE-6"

    def rebuild_state(self, markers: Sequence[Any]) -> None:
        super().rebuild_state(markers)
        start = min((m["offset"] for m in markers), default=0)
        del self.disk["log"][:start]


class TruncateNotLogged(LogStore):
    """Truncation updates the cache only."""

    VIOLATES = "STORE-7"

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        with self.lock:
            self.apply(("T", ref.state_key, index))


# -- what recovery must be able to trust (LIM-9, FAIL-6) --------------------------------------------------------


class AcknowledgesWhatItCannotRead(DictStore):
    """Writes any record, but its reader refuses payloads of half the record limit or more: acknowledged,
    then unreadable on recovery."""

    VIOLATES = "LIM-9"

    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if state is not None and any(
            len(c.result_payload or b"") >= decode_limits().max_payload_bytes // 2 for c in state.call_results
        ):
            raise RecordLimitError("call record exceeds max_payload_bytes", Location(ref.key, ref.seq, ref.action.name))
        return state


class MarkersWithoutIdentity(LogStore):
    """Markers are bare log offsets: a store handed another store's markers recovers from what it has."""

    VIOLATES = "FAIL-6"

    def get_recovery_marker(self) -> Any:
        return {"offset": len(self.disk["log"])}

    def rebuild_state(self, markers: Sequence[Any]) -> None:
        start = min((min(m["offset"], len(self.disk["log"])) for m in markers), default=0)
        super().rebuild_state([{"offset": start}])


class SplitPutTransactions(SqlStore):
    """A put commits the header, then the call rows in a second transaction."""

    VIOLATES = "STORE-7"

    def put(self, ref: StateRef, state: ActionState) -> None:
        self.tx(*self.header_statements(ref, state))
        self.tx(*self.call_statements(ref, state))


class DeltaRowByRow(SqlStore):
    """A multi-record delta commits each record on its own."""

    VIOLATES = "STORE-7"

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        for i, r in enumerate(results):
            super().put_call_results(ref, index + i, [r])


class WriteBehind(SqlStore):
    """Buffers writes and commits every 8th write (and on close): fast, until the process dies."""

    VIOLATES = "STORE-7"

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self.pending: list[tuple[str, Sequence[Any]]] = []
        self.count = 0

    def tx(self, *statements: tuple[str, Sequence[Any]]) -> None:
        with self.lock:
            self.pending.extend(statements)
            self.count += 1
            if self.count % 8 == 0:
                self.flush()

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        if pending:
            super().tx(*pending)

    def get(self, ref: StateRef) -> ActionState | None:
        self.flush()
        return super().get(ref)

    def close(self) -> None:
        with self.lock:
            with contextlib.suppress(sqlite3.ProgrammingError):  # already closed
                self.flush()
            super().close()


# -- sequences and payloads broken stores got wrong (conformance.store_regressions, issue 29) --------------------


class KeysNormalizedNFC(DictStore):
    """Normalizes business keys to NFC "so equal-looking keys match": café composed and decomposed collide."""

    VIOLATES = "STORE-2"

    def nfc(self, ref: StateRef) -> StateRef:
        return dataclasses.replace(
            ref, key=unicodedata.normalize("NFC", ref.key), state_key=unicodedata.normalize("NFC", ref.state_key)
        )

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(self.nfc(ref), state)

    def get(self, ref: StateRef) -> ActionState | None:
        return super().get(self.nfc(ref))

    def prune_state(self, key: str, seq: int) -> None:
        super().prune_state(unicodedata.normalize("NFC", key), seq)


class KeyFromStateKey(DictStore):
    """Files a state under the business key it parses from the state key, up to the first separator."""

    VIOLATES = "STORE-2"

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(dataclasses.replace(ref, key=re.split(r"[_|]", ref.state_key, maxsplit=1)[0]), state)

    def get(self, ref: StateRef) -> ActionState | None:
        return super().get(dataclasses.replace(ref, key=re.split(r"[_|]", ref.state_key, maxsplit=1)[0]))


class ExceptionPayloadAsText(DictStore):
    """Keeps exception payloads in a text column, decoded as UTF-8 ("they are error messages")."""

    VIOLATES = "STORE-1"

    def dump_call(self, c: CallResult) -> str:
        if c.exception_payload is None:
            return super().dump_call(c)
        text = c.exception_payload.decode("utf-8")
        return json.dumps(
            [c.function_id, c.args_digest, None, {"t": text}, None if c.status is None else c.status.value]
        )

    def load_call(self, text: str) -> CallResult:
        f, d, r, x, st = json.loads(text)
        if isinstance(x, dict) and "t" in x:
            return CallResult(f, d, self.load_value(r), x["t"].encode("utf-8"), None if st is None else CallStatus(st))
        return super().load_call(text)


class ReadsFirstPage(SqlStore):
    """Reads call records one page of 256 rows: a state with more comes back cut."""

    VIOLATES = "STORE-1"

    def get(self, ref: StateRef) -> ActionState | None:
        state = super().get(ref)
        if state is not None:
            state.call_results = state.call_results[:256]
        return state


class SlotIndexAsByte(DictStore):
    """Keeps a delta's slot index in one byte: slot 300 is written at 44."""

    VIOLATES = "STORE-5"

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        super().put_call_results(ref, index % 256 if index < len(self.entries()[ref.state_key][3]) else index, results)


class HeaderCapped(DictStore):
    """Refuses a state whose header (task event, memory updates, outputs) passes 400 KB, as a document store
    with a 400 KB item limit does."""

    VIOLATES = "STORE-1"

    def dump_header(self, s: ActionState) -> str:
        text = super().dump_header(s)
        if len(text) > 400_000:
            raise ValueError(f"item size {len(text)} exceeds the 400 KB limit")
        return text


class HeaderMergedOnPut(DictStore):
    """A second put keeps the first put's memory updates and outputs where the new state has none (an upsert
    with COALESCE)."""

    VIOLATES = "STORE-1"

    def put(self, ref: StateRef, state: ActionState) -> None:
        old = self.entries().get(ref.state_key)
        if old is not None:
            before = self.load_header(old[2])
            state = dataclasses.replace(
                state,
                sensory_memory_updates=state.sensory_memory_updates or before.sensory_memory_updates,
                short_term_memory_updates=state.short_term_memory_updates or before.short_term_memory_updates,
                output_events=state.output_events or before.output_events,
            )
        super().put(ref, state)


class PrunesOnlySinceMarker(FullReplayLog):
    """Writes prune tombstones only for states put since the last marker ("older ones are compacted away"):
    after a full replay they come back."""

    VIOLATES = "STORE-4"

    def __init__(self, disk: dict[str, Any] | None = None) -> None:
        super().__init__(disk)
        self.since_marker: set[str] = set()

    def put(self, ref: StateRef, state: ActionState) -> None:
        super().put(ref, state)
        self.since_marker.add(ref.state_key)

    def get_recovery_marker(self) -> Any:
        self.since_marker.clear()
        return super().get_recovery_marker()

    def prune_state(self, key: str, seq: int) -> None:
        with self.lock:
            for sk in [sk for sk, x in self.cache.items() if x[0] == key and x[1] <= seq]:
                if sk in self.since_marker:
                    self.write(("D", sk))
                else:
                    self.apply(("D", sk))


class MarkerCountsReads(LogStore):
    """Its marker is an operation counter that counts reads too, so it points past the log's end."""

    VIOLATES = "STORE-6"

    def get(self, ref: StateRef) -> ActionState | None:
        self.disk["reads"] = self.disk.get("reads", 0) + 1
        return super().get(ref)

    def get_recovery_marker(self) -> Any:
        return {"offset": len(self.disk["log"]) + self.disk.get("reads", 0)}


class MissNotLogged(LogStore):
    """A miss drops the later states from the cache only: a replay brings them back."""

    VIOLATES = "STORE-3"

    def get(self, ref: StateRef) -> ActionState | None:
        with self.lock:
            if ref.state_key not in self.cache:
                for sk in [sk for sk, x in self.cache.items() if x[0] == ref.key and x[1] > ref.seq]:
                    self.apply(("D", sk))
                return None
        return super().get(ref)


class DeferredTombstones(LogStore):
    """Batches prune tombstones and appends them after the next write: a state put again right after its
    prune is deleted by the replay."""

    VIOLATES = "STORE-4"

    def __init__(self, disk: dict[str, Any] | None = None) -> None:
        super().__init__(disk)
        self.tombstones: list[tuple[Any, ...]] = []

    def prune_state(self, key: str, seq: int) -> None:
        with self.lock:
            for sk in [sk for sk, x in self.cache.items() if x[0] == key and x[1] <= seq]:
                self.apply(("D", sk))
                self.tombstones.append(("D", sk))

    def write(self, *records: tuple[Any, ...]) -> None:
        with self.lock:
            super().write(*records)
            tombstones, self.tombstones = self.tombstones, []
            self.append(*tombstones)


class PlainEventForUnknownClass(DictStore):
    """Reads an event whose class is gone as a plain event ("lenient decoding")."""

    VIOLATES = "EVT-2"

    def load_event(self, d: Any, loc: Location | None = None) -> Any:
        try:
            return super().load_event(d, loc)
        except EventClassError:
            return Event(d.get("type", ""), d.get("attributes", {})) if isinstance(d, dict) else None


class BusyWhileWriting(DictStore):
    """One connection, no queue: a write while another is in flight fails with "store busy"."""

    VIOLATES = "STORE-5"

    def __init__(self, disk: dict[str, Any] | None = None) -> None:
        super().__init__(disk)
        self.connection = threading.Lock()

    def put(self, ref: StateRef, state: ActionState) -> None:
        if not self.connection.acquire(blocking=False):
            raise RuntimeError("store busy: one write at a time")
        try:
            time.sleep(0.001)  # the round trip
            super().put(ref, state)
        finally:
            self.connection.release()


class ClaimsConcurrentWriters(BusyWhileWriting):
    """:class:`BusyWhileWriting`, declaring ``concurrent_writers``: the kit tries the claim and refuses it."""

    VIOLATES = "CONF-1"


class NonReentrantLock(DictStore):
    """Guards its table with a plain Lock, and the miss path takes it again: the first miss deadlocks."""

    VIOLATES = "STORE-3"
    TIMEOUT = 3.0

    def __init__(self, disk: dict[str, Any] | None = None) -> None:
        super().__init__(disk)
        self.lock = threading.Lock()  # type: ignore[assignment]

    def later(self, key: str, seq: int) -> list[str]:
        with self.lock:  # already held by get: blocks forever
            return super().later(key, seq)


class EventsLoseTheirClass(DictStore):
    """Keeps events as type and attributes only: a user event class comes back as a plain Event."""

    VIOLATES = "EVT-1"

    def dump_event(self, e: Any) -> Any:
        d = super().dump_event(e)
        if isinstance(d, dict):
            d.pop("py", None)
            d.pop("fields", None)
        return d
