"""What the native Kafka store rebuilds from its topic, with no client I/O (KSTORE-8): records folded into
states in offset order, and the offset arithmetic of recovery markers (KSTORE-4). The layout of the records
is in docs/stores.md; their framing in :mod:`.kafka_native_format`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import CorruptRecordError, StoreDataLostError, StoreError, location
from ..records import StateRef
from .base import RecoveryMarker
from .kafka_native_format import decode_frame, parse_index, parse_record_key


@dataclass
class Entry:
    """A live state as the store caches it: what replaying the log yields, still encoded."""

    key: str | None
    seq: int | None
    action: str | None
    header: bytes
    calls: list[bytes] = field(default_factory=list)
    #: Corruption found while replaying: (reason, call index). Every access raises it (STORE-9).
    problem: tuple[str, int | None] | None = None

    def seq_of(self, key: str) -> int | None:
        """This state's seq if it belongs to business key ``key`` (unreadable states may not know theirs)."""
        return self.seq if self.key == key else None


def refuse_corrupt(entry: Entry, ref: StateRef) -> None:
    """A state whose records failed to decode on replay is refused on every access, never half-used."""
    if entry.problem is not None:
        reason, at = entry.problem
        raise CorruptRecordError(reason, location(ref, at))


@dataclass
class _Folded:
    key: str | None
    seq: int | None
    action: str | None
    header: bytes
    slots: dict[int, bytes]
    problem: tuple[str, int | None] | None = None


Headers = Sequence[tuple[str, bytes | None]] | None


class Replay:
    """Folds the records of a topic, fed in offset order per partition, into live states.

    ``S`` resets a state, ``C`` sets one call slot of a live state, ``T`` drops slots from its length on,
    and a tombstone deletes what its key held. Only the latest record per Kafka key decides the result, so
    it is the same before and after log compaction.
    """

    def __init__(self) -> None:
        self._states: dict[str, _Folded] = {}
        #: state key -> every non-tombstoned Kafka key of that state -> partition.
        self.log_keys: dict[str, dict[str, int]] = {}
        #: Records whose key names no state, as ``key@partition:offset``.
        self.bad_keys: list[str] = []

    def apply(self, raw_key: bytes | None, value: bytes | None, partition: int, offset: int, headers: Headers) -> None:
        """Fold one record in."""
        try:
            kkey = raw_key.decode("utf-8")  # type: ignore[union-attr]
        except (AttributeError, UnicodeDecodeError):
            self.bad_keys.append(f"{raw_key!r}@{partition}:{offset}")
            return
        parsed = parse_record_key(kkey)
        if parsed is None:
            self.bad_keys.append(f"{kkey[:200]!r}@{partition}:{offset}")
            return
        kind, sk, index = parsed
        states = self._states
        if value is None:
            self.log_keys.get(sk, {}).pop(kkey, None)
            if kind == "S":
                states.pop(sk, None)
            elif kind == "C" and sk in states and index is not None:
                states[sk].slots.pop(index, None)
            return
        self.log_keys.setdefault(sk, {})[kkey] = partition
        if kind == "S":
            states[sk] = _fold_header(bytes(value), headers)
            return
        state = states.get(sk)
        if state is None or state.problem is not None:
            return  # a delta of a deleted or superseded state, or of an unreadable one
        if kind == "C" and index is not None:
            state.slots[index] = bytes(value)
            return
        text = bytes(value).decode("ascii", "replace")
        keep = parse_index(text)
        if keep is None:
            state.problem = (f"truncation record {kkey[:200]!r} holds {text[:40]!r}, not a length", None)
            return
        for i in [i for i in state.slots if i >= keep]:
            del state.slots[i]

    def entries(self) -> dict[str, Entry]:
        """The live states; call slots that do not form a gap-free prefix make a state corrupt (STORE-9)."""
        out: dict[str, Entry] = {}
        for sk, st in self._states.items():
            calls = [st.slots[i] for i in range(len(st.slots)) if i in st.slots]
            problem = st.problem
            if problem is None and len(calls) != len(st.slots):
                problem = (f"call results have a gap at index {len(calls)}", len(calls))
            out[sk] = Entry(st.key, st.seq, st.action, st.header, calls, problem)
        return out

    def orphans(self, live: dict[str, Entry]) -> list[str]:
        """States with delta keys left in the log but no live ``S`` record: a deletion a crash interrupted."""
        return [sk for sk, keys in self.log_keys.items() if sk not in live and keys]


def _fold_header(value: bytes, headers: Headers) -> _Folded:
    try:
        key, seq, action, header, calls = decode_frame(value)
    except ValueError as exc:
        # The record headers repeat the location so an unreadable frame can still be named and pruned.
        located: dict[str, str] = {}
        for name, raw in headers or []:
            if name in ("key", "seq", "action") and isinstance(raw, bytes):
                located[name] = raw.decode("utf-8", "replace")
        return _Folded(
            located.get("key"),
            parse_index(located.get("seq", "")),
            located.get("action"),
            b"",
            {},
            (f"unreadable action state record: {exc}", None),
        )
    return _Folded(key, seq, action, header, dict(enumerate(calls)))


def marker_offsets(markers: Sequence[RecoveryMarker], partitions: int, url: str) -> dict[int, int]:
    """The minimum offset per partition over ``markers`` (KSTORE-4); a marker that is not
    ``{"offsets": {"<partition>": offset}}`` for this topic raises :class:`StoreError` naming ``url``."""
    low: dict[int, int] = {}
    for marker in markers:
        offsets = marker.get("offsets") if isinstance(marker, dict) else None
        if not isinstance(offsets, dict):
            raise StoreError(f"Kafka store {url}: unreadable recovery marker {marker!r}")
        for p_raw, off in offsets.items():
            try:
                p, offset = int(p_raw), int(off)
            except (TypeError, ValueError) as exc:
                raise StoreError(f"Kafka store {url}: unreadable recovery marker {marker!r}") from exc
            if not 0 <= p < partitions or offset < 0:
                raise StoreError(
                    f"Kafka store {url}: recovery marker names partition {p} offset "
                    f"{offset}; the topic has {partitions} partitions"
                )
            low[p] = min(offset, low.get(p, offset))
    return low


def check_no_loss(marked: dict[int, int], ends: dict[int, int], url: str) -> None:
    """A marker offset past the end of its partition means the topic lost records:
    :class:`StoreDataLostError` (FAIL-4)."""
    lost = {p: off for p, off in marked.items() if off > ends.get(p, 0)}
    if lost:
        raise StoreDataLostError(
            f"Kafka store {url}: recovery marker offsets {lost} are past the end of "
            f"the log {ends}; the topic lost records (deleted or recreated?)"
        )


def replay_plan(
    marks: dict[int, tuple[int, int]], starts: dict[int, int] | None
) -> tuple[dict[int, int], dict[int, int], set[int]]:
    """Where to read each partition from, given its (log start, reported end) in ``marks``: ``(begin, ends
    of the empty partitions, partitions to read)``. With ``starts`` only those partitions are read, each from
    its start offset or its log start if later."""
    # A start past the reported end is clamped to it: the end may be reported low (Tansu 0.6 reports the
    # last batch's base offset + 1), and a marker past the true end must still reach the end-of-partition
    # event that proves the loss.
    begin = {p: low if starts is None else min(max(low, starts.get(p, low)), high) for p, (low, high) in marks.items()}
    ends = {p: high for p, (low, high) in marks.items() if high <= low}
    pending = {p for p in marks if p not in ends and (starts is None or p in starts)}
    return begin, ends, pending
