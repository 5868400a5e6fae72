"""The native Kafka store's replay and marker arithmetic without a broker (KSTORE-8): records are folded
into states as the store rebuilds them (KSTORE-4, STORE-9), and compaction does not change the result."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from reference_runtime.errors import StoreError
from reference_runtime.stores import kafka_native_format, kafka_replay
from reference_runtime.stores.kafka_native_format import c_key, encode_frame, s_key, t_key
from reference_runtime.stores.kafka_replay import Replay, check_no_loss, marker_offsets, replay_plan

# (Kafka key, value, headers); offsets are positions in the list, all in partition 0.
Rec = tuple[str, bytes | None, list[tuple[str, bytes | None]] | None]
SK = "user_3_e_a"
OTHER = "bob_1_e_a"


def put(sk: str, key: str, seq: int, calls: list[bytes]) -> Rec:
    return (s_key(sk), encode_frame(key, seq, "act", b"HDR", calls), None)


def fold(records: list[Rec]) -> Replay:
    replay = Replay()
    for offset, (kkey, value, headers) in enumerate(records):
        replay.apply(kkey.encode(), value, 0, offset, headers)
    return replay


def compacted(records: list[Rec]) -> list[Rec]:
    """What log compaction keeps: the latest record per key, in offset order."""
    latest = {kkey: i for i, (kkey, _v, _h) in enumerate(records)}
    return [r for i, r in enumerate(records) if latest[r[0]] == i]


def states(replay: Replay) -> dict[str, tuple[object, ...]]:
    return {sk: (e.key, e.seq, e.action, e.header, e.calls, e.problem) for sk, e in replay.entries().items()}


# A history as the store writes it: put, deltas, a truncation, a re-put, a delete of another state.
HISTORY: list[Rec] = [
    put(SK, "user", 3, [b"r0"]),
    put(OTHER, "bob", 1, []),
    (c_key(SK, 1), b"r1", None),
    (c_key(SK, 2), b"r2", None),
    (t_key(SK), b"2", None),
    (c_key(SK, 2), b"r2b", None),
    (c_key(SK, 0), b"r0b", None),
    (s_key(OTHER), None, None),
    (c_key(SK, 3), b"r3", None),
    (t_key(SK), b"3", None),
]


def test_replay_folds_puts_deltas_truncations_and_tombstones() -> None:
    """KSTORE-8, KSTORE-4: S resets, C sets a slot, T cuts, a tombstone deletes; no client is involved."""
    replay = fold(HISTORY)
    assert states(replay) == {SK: ("user", 3, "act", b"HDR", [b"r0b", b"r1", b"r2b"], None)}
    assert replay.bad_keys == []
    assert replay.log_keys == {
        SK: {s_key(SK): 0, c_key(SK, 1): 0, c_key(SK, 2): 0, t_key(SK): 0, c_key(SK, 0): 0, c_key(SK, 3): 0},
        OTHER: {},
    }


def test_replay_gives_the_same_states_after_compaction() -> None:
    """KSTORE-8, KSTORE-3: only the latest record per key decides, so a compacted topic replays alike."""
    assert states(fold(compacted(HISTORY))) == states(fold(HISTORY))
    # A re-put supersedes every earlier delta, compacted or not.
    again = [*HISTORY, put(SK, "user", 3, [b"new"])]
    assert states(fold(again))[SK][4] == [b"new"] == states(fold(compacted(again)))[SK][4]


def test_a_gap_an_unreadable_frame_and_a_bad_truncation_are_kept_as_problems() -> None:
    """KSTORE-8, STORE-9: corruption is recorded against its state (with key, seq, action from the
    record headers when the frame is unreadable); other states stay readable."""
    gap = fold([put(SK, "user", 3, []), (c_key(SK, 1), b"r1", None)])
    assert gap.entries()[SK].problem == ("call results have a gap at index 0", 0)
    headers: list[tuple[str, bytes | None]] = [("key", b"user"), ("seq", b"3"), ("action", b"act")]
    broken = fold([(s_key(SK), b"not a frame", headers), put(OTHER, "bob", 1, [b"x"])])
    entry = broken.entries()[SK]
    assert (entry.key, entry.seq, entry.action) == ("user", 3, "act")
    assert entry.problem is not None and entry.problem[0].startswith("unreadable action state record")
    assert broken.entries()[OTHER].problem is None
    cut = fold([put(SK, "user", 3, [b"a"]), (t_key(SK), "²".encode(), None)])
    assert cut.entries()[SK].problem is not None and "not a length" in cut.entries()[SK].problem[0]


def test_unknown_keys_and_interrupted_deletes_are_reported() -> None:
    """KSTORE-8, KSTORE-5: a key naming no state is listed with its partition and offset; deltas left
    after their S record was tombstoned are orphans the store deletes."""
    replay = Replay()
    replay.apply(b"X|what", b"v", 2, 7, None)
    replay.apply(b"\xff", b"v", 1, 9, None)
    assert replay.bad_keys == ["'X|what'@2:7", "b'\\xff'@1:9"]
    orphaned = fold([put(SK, "user", 3, []), (c_key(SK, 0), b"r", None), (s_key(SK), None, None)])
    assert orphaned.orphans(orphaned.entries()) == [SK]


def test_marker_arithmetic() -> None:
    """KSTORE-8, KSTORE-4: the minimum offset per partition over the markers; a bad marker or one past the
    end of the log is a StoreError naming the store."""
    markers = [{"offsets": {"0": 5, "1": 9}}, {"offsets": {"0": 3}}]
    assert marker_offsets(markers, 2, "kafka://h:1/t") == {0: 3, 1: 9}
    with pytest.raises(StoreError, match="kafka://h:1/t: recovery marker names partition 2"):
        marker_offsets([{"offsets": {"2": 1}}], 2, "kafka://h:1/t")
    with pytest.raises(StoreError, match="unreadable recovery marker"):
        marker_offsets([{"offsets": {"a": 1}}], 2, "kafka://h:1/t")
    check_no_loss({0: 3}, {0: 3}, "kafka://h:1/t")
    with pytest.raises(StoreError, match="lost records"):
        check_no_loss({0: 4}, {0: 3}, "kafka://h:1/t")
    # Partition 0 empty, 1 read from its log start, 2 from the marker clamped to the reported end.
    begin, ends, pending = replay_plan({0: (4, 4), 1: (2, 10), 2: (0, 6)}, {1: 0, 2: 50, 0: 1})
    assert (begin, ends, pending) == ({0: 4, 1: 2, 2: 6}, {0: 4}, {1, 2})
    assert replay_plan({0: (0, 3)}, None) == ({0: 0}, {}, {0})


@pytest.mark.parametrize("module", [kafka_native_format, kafka_replay])
def test_framing_and_replay_modules_do_no_client_io(module: object) -> None:
    """KSTORE-8: the framing and replay modules import no Kafka client, socket, clock or thread module."""
    source = Path(str(getattr(module, "__file__", ""))).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"confluent_kafka", "socket", "time", "threading", "asyncio", "select"}, imported
