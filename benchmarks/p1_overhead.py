"""P1: durable-call overhead against a plain call, with the memory and SQLite stores, and against DBOS
steps on SQLite doing the same work. Ratios are measured side by side in one run.

SQLite figures are the marginal cost of a call made after K earlier calls of the same action
(K = 100 … 100 000): the earlier records are written with ``synchronous=OFF`` by a run that crashes,
then a run on the measured setting recovers them and makes the timed calls. One measured ``fdatasync``
is the floor for ``synchronous=FULL``. DBOS runs in its own process per setting: its default (rollback
journal, FULL) and ours (WAL + FULL, WAL + NORMAL).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


_WINDOW: dict[str, Any] = {}


def timed_work(i: int) -> int:
    if i == _WINDOW["from"]:
        _WINDOW["start"] = time.perf_counter()
        _WINDOW["io"] = _io_written()
    elif i == _WINDOW["from"] + TIMED:
        _WINDOW["elapsed"] = time.perf_counter() - _WINDOW["start"]
        _WINDOW["io"] = _io_written() - _WINDOW["io"]
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


def sqlite_after(tmp: Path, k: int, synchronous: str) -> tuple[float, float, float]:
    """(seconds per call, bytes written per call, logical record bytes per call) for the calls made
    after ``k`` earlier calls of the same action."""
    path = tmp / f"k{k}-{synchronous}.db"
    total = k + TIMED + 1
    _WINDOW.update({"from": -1})
    seed = SqliteStore(path, synchronous="OFF")
    runner = Runner(Timed, seed, injector=FaultInjector([CrashAt(Phase.BEFORE_CALL, call_index=k)]))
    runner.inputs.append(("k", total))
    with contextlib.suppress(SimulatedCrash):  # it crashes before call k: k records are on disk
        runner.process()
    seed.close()
    store = SqliteStore(path, synchronous=synchronous)
    _WINDOW.update({"from": k})
    before = store.bytes_written
    Runner(Timed, store).run([("k", total)])
    logical = (store.bytes_written - before) / (total - k)
    store.close()
    return _WINDOW["elapsed"] / TIMED, _WINDOW["io"] / TIMED, logical


def fdatasync_floor(tmp: Path) -> float:
    """The best of 200 ``write(4 KiB) + fdatasync`` on a file beside the databases."""
    fd = os.open(tmp / "sync-probe", os.O_WRONLY | os.O_CREAT)
    try:
        best = float("inf")
        for _ in range(200):
            os.write(fd, b"x" * 4096)
            start = time.perf_counter()
            os.fdatasync(fd)
            best = min(best, time.perf_counter() - start)
        return best
    finally:
        os.close(fd)


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


def main() -> list[tuple[str, ...]]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        plain_t = best_of(lambda: plain(N * 100), 5) / (N * 100)
        mem_t = ours(InMemoryStore, N)
        sync_t = fdatasync_floor(tmp)
        normal = {k: sqlite_after(tmp, k, "NORMAL") for k in KS}
        full = {k: sqlite_after(tmp, k, "FULL") for k in FULL_KS}
        dbos = {mode: dbos_step(tmp, mode, N // 4) for mode in ("default", "WAL+FULL", "WAL+NORMAL")}

    rows: list[tuple[str, ...]] = [
        ("P1 per-call cost", "µs/call", "x plain", "x same-setting DBOS step", "B written/call", "record B/call")
    ]
    rows.append(("plain function call", f"{plain_t * 1e6:.2f}", "1", "", "", ""))
    rows.append(("durable_execute, memory store", f"{mem_t * 1e6:.2f}", f"{mem_t / plain_t:.0f}", "", "", ""))
    for label, figures, mode in (("NORMAL", normal, "WAL+NORMAL"), ("FULL", full, "WAL+FULL")):
        base = dbos[mode]
        for k, (t, io, logical) in figures.items():
            vs = f"{t / base:.3f} ({base / t:.1f}x faster)" if base else "n/a (dbos not installed)"
            rows.append(
                (
                    f"SQLite synchronous={label}, after K={k:,} calls".replace(",", " "),
                    f"{t * 1e6:.1f}",
                    f"{t / plain_t:.0f}",
                    vs,
                    f"{io:.0f}",
                    f"{logical:.0f}",
                )
            )
    for label, figures in (("ours, synchronous=NORMAL", normal), ("ours, synchronous=FULL", full)):
        for k, (t, _, _) in figures.items():
            point("P1 SQLite call cost by earlier calls", label, k, t * 1e6, xlabel="earlier calls K", ylabel="µs/call")
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
    point(
        "P1 SQLite call cost by earlier calls",
        "one fdatasync",
        KS[0],
        sync_t * 1e6,
        xlabel="earlier calls K",
        ylabel="µs/call",
    )
    k_lo, k_hi = KS[0], KS[-1]
    rows.append(
        (
            f"NORMAL: K={k_hi:,} / K={k_lo}".replace(",", " "),
            f"{normal[k_hi][0] / normal[k_lo][0]:.2f}x",
            "",
            "",
            "",
            "",
        )
    )
    rows.append(("one fdatasync (FULL floor)", f"{sync_t * 1e6:.1f}", "", "", "", ""))
    rows.append(("FULL minus one fdatasync", f"{(full[k_lo][0] - sync_t) * 1e6:.1f}", "", "", "", ""))
    for mode, t in dbos.items():
        label = "DBOS @step, SQLite " + ("default (rollback journal, FULL)" if mode == "default" else mode)
        rows.append((label, f"{t * 1e6:.1f}" if t else "n/a (dbos not installed)", "", "", "", ""))
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
