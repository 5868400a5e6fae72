"""STORE-7 under a real kill: a forked child writes through the store and is SIGKILLed at a random moment.

The ``mid_write_kill`` capability claims that the store's data outlives its process and that
``reopen(store)`` works in a forked child and on a closed store object. The check closes the store, forks;
the child reopens it and writes without pause (a whole ``put`` of a state whose every field names it, then
a four-record delta), reporting each returned write on a pipe; the parent kills the child with SIGKILL a
few milliseconds into the run, reopens the store itself, rebuilds it from the marker taken before the
first fork, and requires every write to be whole or absent, and every reported write to be there.
"""

from __future__ import annotations

import os
import random
import select
import signal
import time
import warnings

import pytest

from reference_runtime.records import ActionState, CallResult, MemoryUpdate
from reference_runtime.stores.base import ActionStateStore, RecoveryMarker

from .factory import StoreFactory
from .marks import capability, clause
from .session import session_seed
from .states import ref, same_state, typed

ROUNDS = 32
#: Writes the child must report before the kill can come, so every round kills a store in full swing.
WARM_UP = 6


def whole(key: str, calls: int) -> ActionState:
    """The state ``put`` writes for ``key`` (3 records) and what the four-record delta makes of it (7)."""
    return ActionState(
        short_term_memory_updates=[MemoryUpdate(f"m{i}", key) for i in range(3)],
        sensory_memory_updates=[MemoryUpdate("s", key)],
        call_results=[CallResult.succeeded(f"f{i}", key, key.encode() * 50) for i in range(calls)],
    )


def _child(factory: StoreFactory, store: ActionStateStore, marker: RecoveryMarker, round_: int, fd: int) -> None:
    assert factory.reopen is not None
    s = factory.reopen(store)
    s.rebuild_state([marker])
    i = 0
    while True:
        key = f"kill{round_}-{i}"
        s.put(ref(key, 0), whole(key, 3))
        os.write(fd, b"p")
        s.put_call_results(ref(key, 0), 3, whole(key, 7).call_results[3:])
        os.write(fd, b"d")
        i += 1


def _run_round(
    factory: StoreFactory, store: ActionStateStore, marker: RecoveryMarker, round_: int, rng: random.Random
) -> bytes:
    """Fork, let the child write, SIGKILL it; the writes it reported as returned."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork of a threaded process: the child only writes
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns to pytest
        code = 0
        try:
            os.close(read_fd)
            _child(factory, store, marker, round_, write_fd)
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    os.close(write_fd)
    seen = b""
    deadline = time.monotonic() + 20
    try:
        while len(seen) < WARM_UP and time.monotonic() < deadline:
            ready, _, _ = select.select([read_fd], [], [], 0.5)
            if ready:
                chunk = os.read(read_fd, 4096)
                if not chunk:
                    break
                seen += chunk
        time.sleep(rng.uniform(0, 0.004))
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    # Bounded (KIT-8): a process the child started and that inherited the pipe would keep it open.
    drained = time.monotonic() + 5
    while time.monotonic() < drained and select.select([read_fd], [], [], 0.5)[0]:
        chunk = os.read(read_fd, 4096)
        if not chunk:
            break
        seen += chunk
    os.close(read_fd)
    assert len(seen) >= WARM_UP, (
        f"STORE-7: the store made {len(seen)} write(s) in a forked child within 20 s "
        f"(expected at least {WARM_UP}); did its reopen fail there?"
    )
    return seen


class KillConformance:
    """Mixin: STORE-7 checked by killing a writing process (capability ``mid_write_kill``)."""

    @clause("STORE-7")
    @capability("mid_write_kill")
    def test_write_killed_midway_is_whole_or_absent(
        self, request: pytest.FixtureRequest, durable_store_factory: StoreFactory
    ) -> None:
        """STORE-7: a process SIGKILLed at random moments while writing leaves every write whole or absent
        (a put's header, memory updates and call results together; a delta's records together), and every
        write that returned is there after a restart."""
        factory = durable_store_factory
        if "mid_write_kill" not in factory.capabilities:
            pytest.skip("backend does not declare the 'mid_write_kill' capability")
        if factory.reopen is None or not hasattr(os, "fork"):
            pytest.fail("STORE-7: 'mid_write_kill' needs a factory with reopen and a platform with os.fork")
        rng = random.Random(session_seed(request.config))
        store = factory.new()
        marker = store.get_recovery_marker()
        store.close()
        for round_ in range(ROUNDS):
            seen = _run_round(factory, store, marker, round_, rng)
            store = factory.reopen(store)
            store.rebuild_state([marker])
            puts, deltas = seen.count(b"p"), seen.count(b"d")
            for i in range(puts + 1):
                key = f"kill{round_}-{i}"
                got = store.get(ref(key, 0))
                where = f"round {round_}, write {i} ({'returned' if i < puts else 'in flight'} when killed)"
                if got is None:
                    assert i == puts, f"STORE-7: {where}: a put that returned is absent after the kill: got None"
                    continue
                if i < deltas:
                    same_state("STORE-7", f"{where}, delta returned", whole(key, 7), got)
                elif typed(got) not in (typed(whole(key, 3)), typed(whole(key, 7))):
                    same_state(
                        "STORE-7",
                        f"{where}: expected the put whole (3 records) or with its delta (7)",
                        whole(key, 3),
                        got,
                    )
            store.close()
