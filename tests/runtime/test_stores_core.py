"""The embedded stores: deltas, corruption diagnostics, crash safety (spec STORE-*)."""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_runtime import CallResult, CorruptRecordError, InputEvent, Runner
from reference_runtime.errors import Location
from reference_runtime.records import ActionRef, ActionState, CallStatus, MemoryUpdate, StateRef
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import decode_call_result, encode_call_result
from reference_runtime.stores.sqlite import SqliteStore

from . import agents

ACTION = ActionRef("work", "m", "A.work", ("_input_event",))


def ref(key: str, seq: int, name: str = "sk") -> StateRef:
    return StateRef(key, seq, ACTION, InputEvent("x"), f"{key}-{seq}-{name}")


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ActionStateStore:
    return InMemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "s.db")


def test_round_trip_with_memory_updates_and_outputs(store: ActionStateStore) -> None:
    """STORE-1: put then get returns an equal state."""
    state = ActionState(
        task_event=InputEvent({"q": [1, b"\x00"]}),
        short_term_memory_updates=[MemoryUpdate("a.b", {"x": 1.5}), MemoryUpdate("o", None, True)],
        call_results=[CallResult.succeeded("f", "d", b"p"), CallResult.pending("g", "e")],
    )
    store.put(ref("k", 0), state)
    got = store.get(ref("k", 0))
    assert got is not None
    assert got.short_term_memory_updates == state.short_term_memory_updates
    assert got.call_results == state.call_results
    assert got.task_event == state.task_event


def test_call_results_are_written_as_deltas(store: ActionStateStore) -> None:
    """STORE-5: append, finalize in place and truncate without rewriting the state."""
    r = ref("k", 0)
    store.put(r, ActionState(task_event=r.event))
    store.put_call_results(r, 0, [CallResult.pending("f", "d")])
    store.put_call_results(r, 0, [CallResult.succeeded("f", "d", b"1")])
    store.put_call_results(r, 1, [CallResult.succeeded("g", "d", b"2"), CallResult.pending("h", "d")])
    got = store.get(r)
    assert got is not None and [c.function_id for c in got.call_results] == ["f", "g", "h"]
    assert got.call_results[0].result_payload == b"1"
    store.truncate_call_results(r, 1)
    got = store.get(r)
    assert got is not None and [c.function_id for c in got.call_results] == ["f"]


def test_a_miss_hides_later_sequence_numbers_of_that_key_only(store: ActionStateStore) -> None:
    """STORE-3: get of a missing (key, seq) drops that key's later states, not other keys'."""
    for seq in (0, 2, 3):
        store.put(ref("k", seq), ActionState())
    store.put(ref("other", 5), ActionState())
    assert store.get(ref("k", 1)) is None
    assert store.get(ref("k", 0)) is not None
    assert store.get(ref("k", 2)) is None and store.get(ref("k", 3)) is None
    assert store.get(ref("other", 5)) is not None


def test_prune_drops_states_up_to_and_including_seq(store: ActionStateStore) -> None:
    """STORE-4: prune_state(key, seq) drops seq ≤ given for that key only."""
    for seq in range(4):
        store.put(ref("k", seq), ActionState())
    store.put(ref("j", 0), ActionState())
    store.prune_state("k", 1)
    assert store.get(ref("k", 2)) is not None and store.get(ref("k", 3)) is not None
    assert store.get(ref("j", 0)) is not None
    assert store.get(ref("k", 1)) is None


def test_sqlite_survives_reopen(tmp_path: Path) -> None:
    """STORE-6: SQLite data outlives the store object (a restarted process reads it back)."""
    s = SqliteStore(tmp_path / "s.db")
    s.put(ref("k", 0), ActionState(call_results=[CallResult.succeeded("f", "d", b"1")]))
    marker = s.get_recovery_marker()
    s.close()
    again = SqliteStore(tmp_path / "s.db")
    again.rebuild_state([marker])
    got = again.get(ref("k", 0))
    assert got is not None and got.call_results[0].result_payload == b"1"


def test_corrupt_sqlite_rows_give_located_errors_and_are_kept(tmp_path: Path) -> None:
    """STORE-9: a tampered row raises CorruptRecordError naming key, seq, action (and call index);
    the row itself stays in the store."""
    s = SqliteStore(tmp_path / "s.db")
    r = ref("user-7", 3)
    s.put(r, ActionState(call_results=[CallResult.succeeded("f", "d", b"1"), CallResult.succeeded("g", "d", b"2")]))
    raw = sqlite3.connect(tmp_path / "s.db")
    bad_base64 = b'{"f":"g","d":"d","r":"!!","e":null,"s":"SUCCEEDED"}'
    raw.execute("UPDATE call_results SET body = ? WHERE idx = 1", (bad_base64,))
    raw.commit()
    with pytest.raises(CorruptRecordError) as info:
        s.get(r)
    assert (info.value.key, info.value.seq, info.value.action, info.value.call_index) == ("user-7", 3, "work", 1)
    raw.execute("UPDATE action_states SET header = ?", (b'{"v":1,"taskEvent":null,"bogus":1}',))
    raw.commit()
    with pytest.raises(CorruptRecordError, match="unknown fields") as info2:
        s.get(r)
    assert info2.value.call_index is None and info2.value.key == "user-7"
    assert raw.execute("SELECT COUNT(*) FROM call_results").fetchone()[0] == 2


WRITER = textwrap.dedent(
    """
    import sys
    from reference_runtime.records import ActionRef, ActionState, CallResult, StateRef
    from reference_runtime.events import InputEvent
    from reference_runtime.stores.sqlite import SqliteStore
    s = SqliteStore(sys.argv[1])
    a = ActionRef("work", "m", "A.work", ("_input_event",))
    i = 0
    print("ready", flush=True)
    while True:
        r = StateRef("k", i, a, InputEvent(i), f"k-{i}")
        s.put(r, ActionState(task_event=InputEvent(i)))
        s.put_call_results(r, 0, [CallResult.succeeded("f", "d", b"x" * 5000) for _ in range(20)])
        i += 1
    """
)


def test_sqlite_store_survives_a_process_killed_mid_write(tmp_path: Path) -> None:
    """STORE-7, KSTORE-1: SIGKILL during a stream of writes leaves every committed state readable and whole."""
    db = tmp_path / "killed.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if db.exists() and sqlite3.connect(db).execute("SELECT COUNT(*) FROM action_states").fetchone()[0] > 5:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    s = SqliteStore(db)
    rows = s._conn.execute("SELECT business_key, seq, state_key FROM action_states").fetchall()
    assert len(rows) > 5
    for key, seq, state_key in rows:
        state = s.get(StateRef(key, seq, ACTION, InputEvent(seq), state_key))
        assert state is not None
        assert len(state.call_results) in (0, 20), "a call-result delta was torn"


def test_runner_on_sqlite_reopened_after_crash(tmp_path: Path) -> None:
    """STORE-6/REC-1: failover with the SQLite store reopened from its file."""
    agents.reset()
    from reference_runtime import CrashAt, FaultInjector, Phase

    db = tmp_path / "r.db"
    runner = Runner(
        agents.ThreeCalls,
        SqliteStore(db),
        reopen_store=lambda: SqliteStore(db),
        injector=FaultInjector([CrashAt(Phase.AFTER_RECORD, call_index=1)]),
    )
    result = runner.run([("k", 1)])
    assert result.outputs == {"k": [60]} and result.failovers == 1
    assert sum(agents.EFFECTS.values()) == 3


@settings(max_examples=300, deadline=None)
@given(
    function_id=st.text(st.characters(exclude_categories=())),
    digest=st.text(st.characters(exclude_categories=())),
    payload=st.none() | st.binary(max_size=64),
    error=st.none() | st.binary(max_size=64),
    status=st.none() | st.sampled_from(list(CallStatus)),
)
def test_call_record_encoding_is_the_compact_json_of_its_fields(
    function_id: str, digest: str, payload: bytes | None, error: bytes | None, status: CallStatus | None
) -> None:
    """COST-5/STORE-1: the call record written on every durable call is, byte for byte, the compact JSON
    (``json.dumps`` with ``separators=(",", ":")``) of its five fields in this order, and reads back equal;
    any text in the ids (quotes, control characters, non-ASCII, lone surrogates) is escaped as json does."""
    record = CallResult(function_id, digest, payload, error, status)
    doc = {
        "f": function_id,
        "d": digest,
        "r": base64.b64encode(payload).decode() if payload is not None else None,
        "e": base64.b64encode(error).decode() if error is not None else None,
        "s": status.value if status is not None else None,
    }
    encoded = encode_call_result(record)
    assert encoded == json.dumps(doc, separators=(",", ":")).encode()
    assert decode_call_result(encoded, Location("k", 0, "a", 0)) == record
