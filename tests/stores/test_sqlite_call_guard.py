"""The SQLite store's guarded call-record insert (spec COST-5): the guard moved from ``INSERT … SELECT …
WHERE`` (which SQLite runs through a temporary table, since the SELECT reads the table written) into the
inserted row's index (NULL, refused by the NOT NULL column, when the guard fails). These tests hold the new
statement to the old one on any table contents, gaps and missing states included, and the store to the
same refusals as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_runtime import InputEvent
from reference_runtime.errors import StoreError
from reference_runtime.records import ActionRef, ActionState, CallResult, StateRef
from reference_runtime.stores.sqlite import SqliteStore

#: The statement of the store before this change: the reference the new one is held to.
_OLD = (
    "INSERT OR REPLACE INTO call_results SELECT ?1, ?2, ?3"
    " WHERE EXISTS (SELECT 1 FROM action_states WHERE state_key = ?1)"
    " AND ?2 <= (SELECT COALESCE(MAX(idx) + 1, 0) FROM call_results WHERE state_key = ?1)"
)


def _tables(path: Path, states: set[str], rows: dict[tuple[str, int], bytes]) -> sqlite3.Connection:
    """The store's own tables (made by the store) holding ``states`` and ``rows``, on a plain connection."""
    SqliteStore(path, synchronous="OFF").close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executemany("INSERT INTO action_states VALUES (?, 'k', 0, 'a', x'00')", [(s,) for s in sorted(states)])
    conn.executemany("INSERT INTO call_results VALUES (?, ?, ?)", [(s, i, b) for (s, i), b in rows.items()])
    return conn


def _contents(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return conn.execute("SELECT state_key, idx, body FROM call_results ORDER BY state_key, idx").fetchall()


_KEYS = st.sampled_from(["a", "b", "c"])


@settings(max_examples=200, deadline=None)
@given(
    states=st.sets(_KEYS),
    rows=st.dictionaries(st.tuples(_KEYS, st.integers(-1, 5)), st.binary(max_size=3), max_size=8),
    writes=st.lists(st.tuples(_KEYS, st.integers(-2, 7), st.binary(max_size=3)), min_size=1, max_size=8),
)
def test_the_guarded_insert_writes_and_refuses_exactly_as_the_old_statement(
    tmp_path_factory: pytest.TempPathFactory,
    states: set[str],
    rows: dict[tuple[str, int], bytes],
    writes: list[tuple[str, int, bytes]],
) -> None:
    """COST-5: on any contents (gaps, negative indexes and records without a state included, which the
    store itself never writes) and any sequence of writes, the store's guarded insert writes a record
    exactly when the old statement did (the old one wrote no row, the new one raises IntegrityError and
    writes none), leaving the same rows."""
    d = tmp_path_factory.mktemp("guard")
    old, new = _tables(d / "old.db", states, rows), _tables(d / "new.db", states, rows)
    statement = SqliteStore(d / "new.db", synchronous="OFF")._guarded_insert
    for key, index, body in writes:
        wrote_old = old.execute(_OLD, (key, index, body)).rowcount == 1
        try:
            new.execute(statement, (key, index, body))
            wrote_new = True
        except sqlite3.IntegrityError:
            wrote_new = False
        assert wrote_new == wrote_old, (key, index, _contents(old))
        assert _contents(new) == _contents(old)
    assert not new.in_transaction  # a refused statement leaves no transaction open


def _ref(key: str = "k") -> StateRef:
    return StateRef(key, 0, ActionRef("a", "m", "A.a", ("_input_event",)), InputEvent(0), f"{key}_0_a")


def _calls(store: SqliteStore, ref: StateRef) -> list[str]:
    state = store.get(ref)
    assert state is not None
    return [c.args_digest for c in state.call_results]


def test_the_store_refuses_a_gap_and_a_missing_state_and_writes_nothing(tmp_path: Path) -> None:
    """The refusals the guard stands for, on the one-record path (a durable call) and the batch path,
    each a StoreError naming the reason, with nothing written and the store usable after it."""
    store = SqliteStore(tmp_path / "s.db", synchronous="OFF")
    ref = _ref()
    rec = CallResult.succeeded("f", "0", b"x")
    with pytest.raises(StoreError, match=r"no action state to add call results to"):
        store.put_call_results(ref, 0, [rec])
    with pytest.raises(StoreError, match=r"no action state to add call results to"):
        store.put_call_results(ref, 0, [rec, rec])
    store.put(ref, ActionState())
    store.put_call_results(ref, 0, [CallResult.succeeded("f", "0", b"x")])
    before = store.bytes_written
    with pytest.raises(StoreError, match=r"call index 2 leaves a gap after 1 records"):
        store.put_call_results(ref, 2, [CallResult.succeeded("f", "2", b"x")])
    with pytest.raises(StoreError, match=r"call index 3 leaves a gap after 1 records"):
        store.put_call_results(ref, 3, [CallResult.succeeded("f", "3", b"x"), CallResult.succeeded("f", "4", b"x")])
    assert store.bytes_written == before  # refused records are not counted as written
    assert _calls(store, ref) == ["0"]
    assert not store._conn.in_transaction
    # Overwriting in place and appending, one record and a batch, still work after the refusals.
    store.put_call_results(ref, 0, [CallResult.succeeded("f", "0b", b"y")])
    store.put_call_results(ref, 1, [CallResult.succeeded("f", "1", b"y"), CallResult.succeeded("f", "2", b"y")])
    assert _calls(store, ref) == ["0b", "1", "2"]
    store.close()
