"""Three correct stores written as a third-party author would, through the public store protocol only; the
store mutants are each one of them with one plausible bug.

* :class:`DictStore` — JSON documents in a dict that outlives the store object (its "disk").
* :class:`LogStore` — a Kafka-like write-ahead log; ``rebuild_state`` replays from the minimum marker only,
  so states put before the markers are not restored (what STORE-6 allows).
* :class:`SqlStore` — a SQLite file, one transaction per write; its data outlives a killed process.
* :class:`FullReplayLog` — the log store replaying its whole log on ``rebuild_state``, as the Kafka store
  does, so states put before the markers come back too.

All four certify FULL (``test_mutants.py`` checks them as controls).
"""

from __future__ import annotations

import base64
import json
import sqlite3
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference_runtime.errors import Location, StoreDataLostError
from reference_runtime.events import Event
from reference_runtime.records import ActionState, CallResult, CallStatus, MemoryUpdate, StateRef
from reference_runtime.stores.native import decode_event, encode_event


def new_epoch() -> str:
    """An id for a store's data, made when the data is: markers of other data do not carry it (FAIL-6)."""
    return uuid.uuid4().hex


def check_markers(markers: Sequence[Any], epoch: str, position: str = "", now: int = 0) -> None:
    """Refuse markers taken on other data (another epoch) or past what the data holds (FAIL-4, FAIL-6)."""
    for marker in markers:
        if marker.get("epoch", epoch) != epoch or marker.get(position, 0) > now:
            raise StoreDataLostError(f"marker {marker!r} was taken on data this store does not hold")


class JsonCodec:
    """Action states as JSON text; every Python type memory may hold (MEM-2) is tagged."""

    def dump_value(self, v: Any) -> Any:
        if v is None or isinstance(v, bool | int | str):
            return v
        if isinstance(v, float):
            return {"f": repr(v)}
        if isinstance(v, bytes):
            return {"b": base64.b64encode(v).decode("ascii")}
        if isinstance(v, list):
            return [self.dump_value(x) for x in v]
        if isinstance(v, dict):
            return {"d": {k: self.dump_value(x) for k, x in v.items()}}
        raise TypeError(f"cannot store {type(v).__name__}")

    def load_value(self, v: Any) -> Any:
        if isinstance(v, list):
            return [self.load_value(x) for x in v]
        if isinstance(v, dict):
            ((tag, inner),) = v.items()
            if tag == "f":
                return float(inner)
            if tag == "b":
                return base64.b64decode(inner)
            return {k: self.load_value(x) for k, x in inner.items()}
        return v

    def dump_event(self, e: Event | None) -> Any:
        # Events go through the runtime's own event encoding (public in reference_runtime.stores.native),
        # as a third-party store would reuse it: it keeps an event's id, lineage and (where the runtime
        # supports it) its class.
        return None if e is None else encode_event(e)

    def load_event(self, d: Any, loc: Location | None = None) -> Event | None:
        # The state's location goes with every decoding error (EVT-2, STORE-9).
        return None if d is None else decode_event(d, "event", loc or Location())

    def dump_updates(self, updates: list[MemoryUpdate]) -> Any:
        return [[u.path, self.dump_value(u.value), u.object_creation] for u in updates]

    def load_updates(self, raw: Any) -> list[MemoryUpdate]:
        return [MemoryUpdate(p, self.load_value(v), bool(o)) for p, v, o in raw]

    def dump_header(self, s: ActionState) -> str:
        return json.dumps(
            {
                "task": self.dump_event(s.task_event),
                "sensory": self.dump_updates(s.sensory_memory_updates),
                "short": self.dump_updates(s.short_term_memory_updates),
                "out": [self.dump_event(e) for e in s.output_events],
                "completed": s.completed,
            }
        )

    def load_header(self, text: str, loc: Location | None = None) -> ActionState:
        d = json.loads(text)
        return ActionState(
            task_event=self.load_event(d["task"], loc),
            sensory_memory_updates=self.load_updates(d["sensory"]),
            short_term_memory_updates=self.load_updates(d["short"]),
            output_events=[e for e in (self.load_event(x, loc) for x in d["out"]) if e is not None],
            completed=d["completed"],
        )

    def dump_call(self, c: CallResult) -> str:
        return json.dumps(
            [
                c.function_id,
                c.args_digest,
                self.dump_value(c.result_payload),
                self.dump_value(c.exception_payload),
                None if c.status is None else c.status.value,
            ]
        )

    def load_call(self, text: str) -> CallResult:
        f, d, r, x, st = json.loads(text)
        return CallResult(f, d, self.load_value(r), self.load_value(x), None if st is None else CallStatus(st))

    def calls_for(self, state: ActionState) -> list[str]:
        return [] if state.completed else [self.dump_call(c) for c in state.call_results]

    def load_entry(self, e: list[Any], loc: Location | None = None) -> ActionState:
        """The state an entry ``[key, seq, header, calls]`` holds (a mutant may keep entries its own way)."""
        state = self.load_header(e[2], loc)
        state.call_results = [self.load_call(c) for c in e[3]]
        return state


class DictStore(JsonCodec):
    """A correct store: ``disk["states"][state_key] = [key, seq, header, [call, …]]``, under a lock."""

    def __init__(self, disk: dict[str, Any] | None = None) -> None:
        self.disk: dict[str, Any] = disk if disk is not None else {"states": {}, "writes": 0, "epoch": new_epoch()}
        self.lock = threading.RLock()

    def entries(self) -> dict[str, list[Any]]:
        states: dict[str, list[Any]] = self.disk["states"]
        return states

    def later(self, key: str, seq: int) -> list[str]:
        return [sk for sk, e in self.entries().items() if e[0] == key and e[1] > seq]

    def upto(self, key: str, seq: int) -> list[str]:
        return [sk for sk, e in self.entries().items() if e[0] == key and e[1] <= seq]

    def put(self, ref: StateRef, state: ActionState) -> None:
        with self.lock:
            self.entries()[ref.state_key] = [ref.key, ref.seq, self.dump_header(state), self.calls_for(state)]
            self.disk["writes"] += 1

    def get(self, ref: StateRef) -> ActionState | None:
        with self.lock:
            e = self.entries().get(ref.state_key)
            if e is None:
                for sk in self.later(ref.key, ref.seq):
                    del self.entries()[sk]
                return None
            return self.load_entry(e, Location(ref.key, ref.seq, ref.action.name))

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        with self.lock:
            calls = self.entries()[ref.state_key][3]
            calls[index : index + len(results)] = [self.dump_call(r) for r in results]
            self.disk["writes"] += 1

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        with self.lock:
            e = self.entries().get(ref.state_key)
            if e is not None:
                del e[3][index:]
            self.disk["writes"] += 1

    def prune_state(self, key: str, seq: int) -> None:
        with self.lock:
            for sk in self.upto(key, seq):
                del self.entries()[sk]

    def get_recovery_marker(self) -> Any:
        return {"writes": self.disk["writes"], "epoch": self.disk["epoch"]}

    def rebuild_state(self, markers: Sequence[Any]) -> None:
        check_markers(markers, self.disk["epoch"], "writes", self.disk["writes"])

    def close(self) -> None:
        return None

    def reopen(self) -> DictStore:
        return type(self)(self.disk)


class LogStore(JsonCodec):
    """A correct Kafka-like store: every write appends records to ``disk["log"]``; reads come from a cache
    rebuilt on ``rebuild_state`` by replaying the log from the minimum marker offset."""

    def __init__(self, disk: dict[str, Any] | None = None) -> None:
        self.disk: dict[str, Any] = disk if disk is not None else {"log": [], "epoch": new_epoch()}
        self.cache: dict[str, list[Any]] = {}
        self.lock = threading.RLock()

    def append(self, *records: tuple[Any, ...]) -> None:
        self.disk["log"].extend(records)

    def apply(self, record: tuple[Any, ...]) -> None:
        kind, sk = record[0], record[1]
        if kind == "S":
            self.cache[sk] = [record[2], record[3], record[4], list(record[5])]
        elif kind == "C" and sk in self.cache:
            calls = self.cache[sk][3]
            calls[record[2] : record[2] + len(record[3])] = record[3]
        elif kind == "T" and sk in self.cache:
            del self.cache[sk][3][record[2] :]
        elif kind == "D":
            self.cache.pop(sk, None)

    def write(self, *records: tuple[Any, ...]) -> None:
        with self.lock:
            self.append(*records)
            for r in records:
                self.apply(r)

    def put(self, ref: StateRef, state: ActionState) -> None:
        self.write(("S", ref.state_key, ref.key, ref.seq, self.dump_header(state), tuple(self.calls_for(state))))

    def get(self, ref: StateRef) -> ActionState | None:
        with self.lock:
            e = self.cache.get(ref.state_key)
            if e is None:
                self.write(*[("D", sk) for sk, x in self.cache.items() if x[0] == ref.key and x[1] > ref.seq])
                return None
            return self.load_entry(e, Location(ref.key, ref.seq, ref.action.name))

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        self.write(("C", ref.state_key, index, [self.dump_call(r) for r in results]))

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self.write(("T", ref.state_key, index))

    def prune_state(self, key: str, seq: int) -> None:
        with self.lock:
            self.write(*[("D", sk) for sk, x in self.cache.items() if x[0] == key and x[1] <= seq])

    def get_recovery_marker(self) -> Any:
        return {"offset": len(self.disk["log"]), "epoch": self.disk["epoch"]}

    def rebuild_state(self, markers: Sequence[Any]) -> None:
        check_markers(markers, self.disk["epoch"], "offset", len(self.disk["log"]))
        start = min((m["offset"] for m in markers), default=0)
        with self.lock:
            self.cache = {}
            for record in self.disk["log"][start:]:
                self.apply(record)

    def close(self) -> None:
        return None

    def reopen(self) -> LogStore:
        return type(self)(self.disk)


class FullReplayLog(LogStore):
    """A correct Kafka-like store that replays its log from the start, whatever the markers say."""

    def rebuild_state(self, markers: Sequence[Any]) -> None:
        # Markers of other data are still refused (FAIL-6); only what it replays ignores them.
        check_markers(markers, self.disk["epoch"], "offset", len(self.disk["log"]))
        super().rebuild_state([{"offset": 0, "epoch": self.disk["epoch"]}])


class SqlStore(JsonCodec):
    """A correct SQLite store: one file, one transaction per write."""

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS states (sk TEXT PRIMARY KEY, key TEXT, seq INTEGER, header TEXT);"
        "CREATE TABLE IF NOT EXISTS calls (sk TEXT, idx INTEGER, body TEXT, PRIMARY KEY (sk, idx));"
        "CREATE TABLE IF NOT EXISTS epoch (id TEXT);"
        "INSERT INTO epoch SELECT hex(randomblob(16)) WHERE NOT EXISTS (SELECT 1 FROM epoch);"
    )

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = self.connect()
        self.lock = threading.RLock()

    def connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.executescript(self.SCHEMA)
        return conn

    def tx(self, *statements: tuple[str, Sequence[Any]]) -> None:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    self.conn.execute(sql, params)
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def header_statements(self, ref: StateRef, state: ActionState) -> list[tuple[str, Sequence[Any]]]:
        return [
            (
                "INSERT OR REPLACE INTO states VALUES (?, ?, ?, ?)",
                (ref.state_key, ref.key, ref.seq, self.dump_header(state)),
            ),
            ("DELETE FROM calls WHERE sk = ?", (ref.state_key,)),
        ]

    def call_statements(self, ref: StateRef, state: ActionState) -> list[tuple[str, Sequence[Any]]]:
        return [
            ("INSERT INTO calls VALUES (?, ?, ?)", (ref.state_key, i, c)) for i, c in enumerate(self.calls_for(state))
        ]

    def put(self, ref: StateRef, state: ActionState) -> None:
        self.tx(*self.header_statements(ref, state), *self.call_statements(ref, state))

    def get(self, ref: StateRef) -> ActionState | None:
        with self.lock:
            row = self.conn.execute("SELECT header FROM states WHERE sk = ?", (ref.state_key,)).fetchone()
            if row is None:
                self.delete("key = ? AND seq > ?", (ref.key, ref.seq))
                return None
            calls = self.conn.execute("SELECT body FROM calls WHERE sk = ? ORDER BY idx", (ref.state_key,)).fetchall()
        state = self.load_header(row[0], Location(ref.key, ref.seq, ref.action.name))
        state.call_results = [self.load_call(c[0]) for c in calls]
        return state

    def delete(self, where: str, params: Sequence[Any]) -> None:
        self.tx(
            (f"DELETE FROM calls WHERE sk IN (SELECT sk FROM states WHERE {where})", params),
            (f"DELETE FROM states WHERE {where}", params),
        )

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        self.tx(
            *[
                ("INSERT OR REPLACE INTO calls VALUES (?, ?, ?)", (ref.state_key, index + i, self.dump_call(r)))
                for i, r in enumerate(results)
            ]
        )

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self.tx(("DELETE FROM calls WHERE sk = ? AND idx >= ?", (ref.state_key, index)))

    def prune_state(self, key: str, seq: int) -> None:
        self.delete("key = ? AND seq <= ?", (key, seq))

    def epoch(self) -> str:
        with self.lock:
            (epoch,) = self.conn.execute("SELECT id FROM epoch").fetchone()
        return str(epoch)

    def get_recovery_marker(self) -> Any:
        return {"epoch": self.epoch()}

    def rebuild_state(self, markers: Sequence[Any]) -> None:
        check_markers(markers, self.epoch())

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def reopen(self) -> SqlStore:
        self.close()
        return type(self)(self.path)
