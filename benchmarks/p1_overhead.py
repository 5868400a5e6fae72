"""P1: durable-call overhead against a plain call, with the memory and SQLite stores, and against DBOS
steps on SQLite doing the same work. Ratios are measured side by side in one run.

SQLite figures are the marginal cost of a call made after K earlier calls of the same action
(K = 100 … 100 000): the earlier records are written with ``synchronous=OFF`` by a run that crashes and
flushed to disk, then a run on the measured setting recovers them and makes the timed calls (best of three
windows). Beside them, the floor: raw sqlite3 one-row INSERTs, each its own transaction, into a minimal
table with the same primary key and row size after the same K rows, at the same settings; the ratio of
the two growths says what of ours is SQLite's own. For ``synchronous=FULL``, one 4 KiB write + fdatasync,
a raw sqlite3 INSERT + COMMIT at WAL+FULL and our call, interleaved round by round. DBOS runs in its own
process per setting: its default (rollback journal, FULL) and ours (WAL + FULL, WAL + NORMAL).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from reference_runtime import (
    Agent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    Phase,
    Runner,
    RunnerContext,
    SimulatedCrash,
    action,
)
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.sqlite import SqliteStore

from ._util import best_of, point, table

N = 2000
TIMED = 2000  # calls timed after K earlier ones
KS = (100, 1_000, 10_000, 100_000)
FULL_KS = (100, 10_000)


def work(i: int) -> int:
    return i * 2 + 1


class Loop(Agent):
    @action(InputEvent)
    @staticmethod
    def loop(event: Event, ctx: RunnerContext) -> None:
        for i in range(event.attributes["input"]):
            ctx.durable_execute(work, i)


_WINDOW: dict[str, Any] = {"from": -1, "stamps": []}


def timed_work(i: int) -> int:
    """The durable function of the timed runs: stamps the clocks at each call of the window
    ``[from, from + TIMED]`` (one stamp per call, so consecutive stamps bracket one durable call)."""
    first = _WINDOW["from"]
    if 0 <= first <= i <= first + _WINDOW["count"]:
        if i == first:
            _WINDOW["io"] = _io_written()
            _WINDOW["cpu"] = time.process_time()
        _WINDOW["stamps"].append(time.perf_counter())
        if i == first + _WINDOW["count"]:
            _WINDOW["io"] = _io_written() - _WINDOW["io"]
            _WINDOW["cpu"] = time.process_time() - _WINDOW["cpu"]
    return i * 2 + 1


class Timed(Agent):
    @action(InputEvent)
    @staticmethod
    def loop(event: Event, ctx: RunnerContext) -> None:
        for i in range(event.attributes["input"]):
            ctx.durable_execute(timed_work, i)


def _io_written() -> int:
    """Bytes this process handed to write system calls (``wchar``), or 0 where /proc does not say."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def plain(n: int) -> None:
    for i in range(n):
        work(i)


def ours(store_factory: Any, n: int) -> float:
    def once() -> None:
        Runner(Loop, store_factory()).run([("k", n)])

    return best_of(once, 3) / n


class Window(NamedTuple):
    """One timed window of durable calls: seconds per call (mean over the window, so checkpoints are
    paid in it), CPU seconds per call of this process, bytes handed to write() per call, record bytes per
    call, and the per-call times (from consecutive stamps)."""

    wall: float
    cpu: float
    written: float
    logical: float
    per_call: list[float]


def _seed(path: Path, k: int, calls: int) -> None:
    """Write ``k`` records of the timed action with ``synchronous=OFF`` and crash before call ``k``."""
    _WINDOW.update({"from": -1})
    seed = SqliteStore(path, synchronous="OFF")
    runner = Runner(Timed, seed, injector=FaultInjector([CrashAt(Phase.BEFORE_CALL, call_index=k)]))
    runner.inputs.append(("k", calls))
    with contextlib.suppress(SimulatedCrash):  # it crashes before call k: k records are on disk
        runner.process()
    seed.close()
    _sync_files(path)


def sqlite_after(tmp: Path, k: int, synchronous: str, timed: int = TIMED, seeded: Path | None = None) -> Window:
    """The ``timed`` calls made after ``k`` earlier calls of the same action (recovered from a file that
    holds them), on a store at ``synchronous``. ``seeded`` is a file already holding the ``k`` records."""
    path = tmp / f"k{k}-{synchronous}-{time.monotonic_ns()}.db"
    total = k + timed + 1
    if seeded is None:
        _seed(path, k, total)
    else:
        shutil.copyfile(seeded, path)
        _sync_files(path)
    store = SqliteStore(path, synchronous=synchronous)
    _WINDOW.update({"from": k, "count": timed, "stamps": []})
    before = store.bytes_written
    Runner(Timed, store).run([("k", total)])
    logical = (store.bytes_written - before) / (total - k)
    store.close()
    stamps = _WINDOW["stamps"]
    per_call = [b - a for a, b in itertools.pairwise(stamps)]
    _WINDOW.update({"from": -1})
    return Window((stamps[-1] - stamps[0]) / timed, _WINDOW["cpu"] / timed, _WINDOW["io"] / timed, logical, per_call)


def best_window(tmp: Path, k: int, synchronous: str, repeats: int = 3) -> Window:
    """The least disturbed of ``repeats`` windows after ``k`` calls (one seeded file, copied per repeat):
    a full garbage collection of the K recovered records or another process's burst can land in any one."""
    seeded = tmp / f"seed-{k}.db"
    if not seeded.exists():
        _seed(seeded, k, k + TIMED + 1)
    return min((sqlite_after(tmp, k, synchronous, seeded=seeded) for _ in range(repeats)), key=lambda w: w.wall)


def _sync_files(path: Path) -> None:
    """Flush what the ``synchronous=OFF`` seed run left in the page cache: a store that made its K calls at
    the measured setting would have synced them as it went, so the timed calls must not pay for them (the
    first checkpoint's fsync would otherwise write back the whole seeded file, a cost that grows with K)."""
    for file in (path, Path(f"{path}-wal")):
        if file.exists():
            fd = os.open(file, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


# -- the floor: raw sqlite3 on a minimal table with the same primary key and row size ----------------------
_RAW_TABLE = (
    "CREATE TABLE call_results (state_key TEXT NOT NULL, idx INTEGER NOT NULL, body BLOB NOT NULL,"
    " PRIMARY KEY (state_key, idx)) WITHOUT ROWID"
)


def _row_shape(seeded: Path) -> tuple[str, int]:
    """The state key and the mean record size of the store's own rows, so the floor writes the same."""
    conn = sqlite3.connect(seeded)
    try:
        key, size = conn.execute("SELECT state_key, AVG(LENGTH(body)) FROM call_results").fetchone()
    finally:
        conn.close()
    return str(key), round(size)


def raw_sqlite(
    tmp: Path, k: int, synchronous: str, shape: tuple[str, int], n: int = TIMED, spin: float = 0.0
) -> Window:
    """``n`` one-row ``INSERT``s, each its own transaction (INSERT + COMMIT), into a minimal table with
    the store's primary key after ``k`` rows, at ``synchronous`` in WAL mode: what SQLite itself costs.
    ``spin``: seconds of busy CPU between commits, standing for a runtime's own work per call (a process
    that computes between syncs does not wait for the disk the way a tight commit loop does)."""
    key, size = shape
    path = tmp / f"raw-{k}-{synchronous}-{time.monotonic_ns()}.db"
    body = b"x" * size
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute(_RAW_TABLE)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO call_results VALUES (?, ?, ?)", ((key, i, body) for i in range(k)))
    conn.execute("COMMIT")
    conn.close()
    _sync_files(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA synchronous={synchronous}")
    insert = "INSERT INTO call_results VALUES (?, ?, ?)"
    stamps = [time.perf_counter()]
    io, cpu = _io_written(), time.process_time()
    for i in range(k, k + n):
        conn.execute(insert, (key, i, body))
        if spin:
            until = time.perf_counter() + spin
            while time.perf_counter() < until:
                pass
        stamps.append(time.perf_counter())
    io, cpu = _io_written() - io, time.process_time() - cpu
    conn.close()
    per_call = [b - a for a, b in itertools.pairwise(stamps)]
    return Window((stamps[-1] - stamps[0]) / n, cpu / n, io / n, float(size), per_call)


def best_raw(tmp: Path, k: int, synchronous: str, shape: tuple[str, int], repeats: int = 3) -> Window:
    return min((raw_sqlite(tmp, k, synchronous, shape) for _ in range(repeats)), key=lambda w: w.wall)


def fdatasync_probe(tmp: Path, n: int, *, in_place: bool = False) -> list[float]:
    """``n`` times one 4 KiB ``write`` and its ``fdatasync`` on a file beside the databases, each timed:
    appending (the file grows, so the sync also commits its new size, as a growing WAL does) or
    ``in_place`` (the same block rewritten, as a WAL reused after a checkpoint is)."""
    fd = os.open(tmp / f"sync-probe-{time.monotonic_ns()}", os.O_WRONLY | os.O_CREAT)
    try:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            if in_place:
                os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, b"x" * 4096)
            os.fdatasync(fd)
            times.append(time.perf_counter() - start)
        return times
    finally:
        os.close(fd)


def full_floor(tmp: Path, shape: tuple[str, int], spin: float, rounds: int = 8, n: int = 100) -> dict[str, list[float]]:
    """Per-operation times at ``synchronous=FULL``, interleaved round by round so drifting disk load hits
    them alike: one 4 KiB write + fdatasync, a raw one-row INSERT + COMMIT (SQLite's own work around its
    sync), the same with ``spin`` seconds of busy CPU per commit (our runtime's CPU beyond raw SQLite's,
    measured at NORMAL), and our durable call (after K = 100 calls)."""
    seeded = tmp / "seed-100.db"
    if not seeded.exists():
        _seed(seeded, 100, 100 + TIMED + 1)
    out: dict[str, list[float]] = {"fdatasync": [], "in place": [], "raw": [], "raw+cpu": [], "ours": []}
    runs: list[tuple[str, Callable[[], list[float]]]] = [
        ("fdatasync", lambda: fdatasync_probe(tmp, n)),
        ("in place", lambda: fdatasync_probe(tmp, n, in_place=True)),
        ("raw", lambda: raw_sqlite(tmp, 100, "FULL", shape, n).per_call),
        ("raw+cpu", lambda: raw_sqlite(tmp, 100, "FULL", shape, n, spin=spin).per_call),
        ("ours", lambda: sqlite_after(tmp, 100, "FULL", timed=n, seeded=seeded).per_call),
    ]
    for r in range(rounds):
        # Every other round in reverse, so none of them always runs right after the disk was busiest.
        for name, run in runs if r % 2 == 0 else reversed(runs):
            out[name] += run()
    return out


_DBOS_CHILD = r"""
import json, sys, time
from pathlib import Path
import sqlalchemy
from sqlalchemy import event
mode, tmp, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
if mode != "default":
    sync = mode.split("+")[1]

    @event.listens_for(sqlalchemy.engine.Engine, "connect")
    def pragmas(dbapi_conn, record):
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute(f"PRAGMA synchronous={sync}")
from dbos import DBOS
DBOS(config={"name": "p1bench", "system_database_url": f"sqlite:///{tmp / ('dbos-' + mode + '.sqlite')}",
             "log_level": "WARNING", "run_admin_server": False})

@DBOS.step()
def step(i):
    return i * 2 + 1

@DBOS.workflow()
def workflow(count):
    for i in range(count):
        step(i)

DBOS.launch()
best = float("inf")
for _ in range(3):
    start = time.perf_counter()
    workflow(n)
    best = min(best, time.perf_counter() - start)
DBOS.destroy()
print(json.dumps(best / n))
"""


def dbos_step(tmp: Path, mode: str, n: int) -> float | None:
    """Seconds per DBOS step in a workflow, in a child process (None when dbos is not installed)."""
    proc = subprocess.run(
        [sys.executable, "-c", _DBOS_CHILD, mode, str(tmp), str(n)], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        if "No module named 'dbos'" in proc.stderr:
            return None
        raise RuntimeError(f"DBOS benchmark ({mode}) failed:\n{proc.stderr[-2000:]}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1]))


def _n(k: int) -> str:
    return f"{k:,}".replace(",", " ")


def main() -> list[tuple[str, ...]]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        plain_t = best_of(lambda: plain(N * 100), 5) / (N * 100)
        mem_t = ours(InMemoryStore, N)
        normal = {k: best_window(tmp, k, "NORMAL") for k in KS}
        shape = _row_shape(tmp / f"seed-{KS[0]}.db")
        raw = {k: best_raw(tmp, k, "NORMAL", shape) for k in (KS[0], KS[-1])}
        full = {k: best_window(tmp, k, "FULL", repeats=1) for k in FULL_KS}
        spin = max(0.0, normal[KS[0]].cpu - raw[KS[0]].cpu)  # our CPU per call beyond SQLite's own
        floor = full_floor(tmp, shape, spin)
        dbos = {mode: dbos_step(tmp, mode, N // 4) for mode in ("default", "WAL+FULL", "WAL+NORMAL")}

    rows: list[tuple[str, ...]] = [
        ("P1 per-call cost", "µs/call", "CPU µs/call", "x same-setting DBOS step", "B written/call", "record B/call")
    ]
    rows.append(("plain function call", f"{plain_t * 1e6:.2f}", "", "", "", ""))
    rows.append(("durable_execute, memory store", f"{mem_t * 1e6:.2f}", "", "", "", ""))
    for label, figures, mode in (("NORMAL", normal, "WAL+NORMAL"), ("FULL", full, "WAL+FULL")):
        base = dbos[mode]
        for k, w in figures.items():
            vs = f"{w.wall / base:.3f} ({base / w.wall:.1f}x faster)" if base else "n/a (dbos not installed)"
            rows.append(
                (
                    f"SQLite synchronous={label}, after K={_n(k)} calls",
                    f"{w.wall * 1e6:.1f}",
                    f"{w.cpu * 1e6:.1f}",
                    vs,
                    f"{w.written:.0f}",
                    f"{w.logical:.0f}",
                )
            )
    for k, w in raw.items():
        rows.append(
            (
                f"floor: raw sqlite3 INSERT+COMMIT, NORMAL, after K={_n(k)} rows",
                f"{w.wall * 1e6:.1f}",
                f"{w.cpu * 1e6:.1f}",
                "",
                f"{w.written:.0f}",
                f"{w.logical:.0f}",
            )
        )
    for label, figures in (("ours, synchronous=NORMAL", normal), ("ours, synchronous=FULL", full)):
        for k, w in figures.items():
            point(
                "P1 SQLite call cost by earlier calls",
                label,
                k,
                w.wall * 1e6,
                xlabel="earlier calls K",
                ylabel="µs/call",
            )
    for k, w in raw.items():
        point(
            "P1 SQLite call cost by earlier calls",
            "raw sqlite3 INSERT+COMMIT, NORMAL (floor)",
            k,
            w.wall * 1e6,
            xlabel="earlier calls K",
            ylabel="µs/call",
        )
    for mode, t in dbos.items():
        if t:
            for k in KS:
                point(
                    "P1 SQLite call cost by earlier calls",
                    f"DBOS step, {mode} (one K)",
                    k,
                    t * 1e6,
                    xlabel="earlier calls K",
                    ylabel="µs/call",
                )
    med = {name: statistics.median(times) for name, times in floor.items()}
    mean = {name: statistics.mean(times) for name, times in floor.items()}
    for label, name in (
        ("one 4 KiB write + fdatasync (median)", "fdatasync"),
        ("raw sqlite3 INSERT+COMMIT, WAL+FULL (median, floor)", "raw"),
    ):
        point(
            "P1 SQLite call cost by earlier calls",
            label,
            KS[0],
            med[name] * 1e6,
            xlabel="earlier calls K",
            ylabel="µs/call",
        )
    k_lo, k_hi = KS[0], KS[-1]
    ours_growth = normal[k_hi].wall / normal[k_lo].wall
    raw_growth = raw[k_hi].wall / raw[k_lo].wall
    print(table(rows))
    print()
    growth: list[tuple[str, ...]] = [
        (f"P1 NORMAL growth, K={_n(k_hi)} / K={k_lo}", "wall", "CPU"),
        ("ours", f"{ours_growth:.2f}x", f"{normal[k_hi].cpu / normal[k_lo].cpu:.2f}x"),
        ("floor: raw sqlite3", f"{raw_growth:.2f}x", f"{raw[k_hi].cpu / raw[k_lo].cpu:.2f}x"),
        ("ours / floor (ratio of ratios)", f"{ours_growth / raw_growth:.2f}", ""),
    ]
    print(table(growth))
    print()
    n = len(floor["ours"])
    sync_rows: list[tuple[str, ...]] = [
        (f"P1 FULL, medians of {n} interleaved operations", "median µs", "mean µs"),
        ("one 4 KiB write + fdatasync, appending", f"{med['fdatasync'] * 1e6:.1f}", f"{mean['fdatasync'] * 1e6:.1f}"),
        ("one 4 KiB write + fdatasync, in place", f"{med['in place'] * 1e6:.1f}", f"{mean['in place'] * 1e6:.1f}"),
        ("raw sqlite3 INSERT+COMMIT, WAL+FULL (floor)", f"{med['raw'] * 1e6:.1f}", f"{mean['raw'] * 1e6:.1f}"),
        ("ours: durable call, WAL+FULL, K=100", f"{med['ours'] * 1e6:.1f}", f"{mean['ours'] * 1e6:.1f}"),
        ("raw sqlite3 - fdatasync (SQLite's own work)", f"{(med['raw'] - med['fdatasync']) * 1e6:.1f}", ""),
        ("ours - raw sqlite3 (the runtime and the store)", f"{(med['ours'] - med['raw']) * 1e6:.1f}", ""),
        ("ours - fdatasync (target <= 40)", f"{(med['ours'] - med['fdatasync']) * 1e6:.1f}", ""),
        (
            f"floor with our CPU: raw sqlite3 + {spin * 1e6:.1f} µs busy CPU per commit, WAL+FULL",
            f"{med['raw+cpu'] * 1e6:.1f}",
            f"{mean['raw+cpu'] * 1e6:.1f}",
        ),
        ("ours - that floor", f"{(med['ours'] - med['raw+cpu']) * 1e6:.1f}", ""),
    ]
    print(table(sync_rows))
    print()
    dbos_rows: list[tuple[str, ...]] = [("P1 DBOS", "µs/step")]
    for mode, t in dbos.items():
        label = "DBOS @step, SQLite " + ("default (rollback journal, FULL)" if mode == "default" else mode)
        dbos_rows.append((label, f"{t * 1e6:.1f}" if t else "n/a (dbos not installed)"))
    print(table(dbos_rows))
    return rows + growth + sync_rows + dbos_rows


if __name__ == "__main__":
    main()
