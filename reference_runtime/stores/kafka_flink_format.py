"""The Flink Agents wire format of the Kafka store (``kafka://HOST:PORT/TOPIC?format=flink-agents``).

Pure encoding, no client I/O (that lives in :mod:`.kafka` and :mod:`.kafka_flink`). A record is what Flink
Agents' ``KafkaActionStateStore`` writes (spec WIRE-1..WIRE-6):

* record key: the state key string (``{key}_{seq}_{event uuid}_{action uuid}`` under the default key scheme);
* record value: the ``ActionStateSerde`` JSON of the whole state, exactly as the Java writer produces it in
  the current release format (call results carry ``status``); a tombstone (no value) deletes the state;
* partition: ``murmurHash(first.hashCode()) % partitions`` where ``first`` is the state key up to its first
  ``_``, i.e. the business key up to its first ``_`` (Java ``String.hashCode`` and Flink's
  ``MathUtils.murmurHash``);
* record headers ``key``, ``seq``, ``action`` name the state's location. Flink Agents writes no headers and
  its reader ignores them; a record without them (one a Flink Agents job wrote) is located by parsing its
  key from the right, which also works for business keys that contain ``_``.

Writing (WIRE-10): a topic belongs to one engine version, :data:`VERSIONS`: ``0.3`` (0.3.x and main, the
current format above) or ``0.2`` (0.2.x: ``PythonEvent`` events carrying the engine's pickle, plain JSON memory
values, call results without ``status``; :func:`~reference_runtime.serde.legacy.write_legacy_020`).
:func:`engine_check` says which versions' deserializers read a record value, :func:`topic_owner` which
version owns a topic from its live records (WIRE-12, INS-8).

Reading accepts every format the real engine has written (WIRE-4): the current one, status-less call
results of 0.3.0-era records (effective status FAILED iff an exception payload is present, never PENDING)
and 0.2.0 records (``PythonEvent`` events, plain JSON memory values), which are recognised by markers only
0.2.0 writes and read with :func:`~reference_runtime.serde.legacy.read_legacy_020`.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import Location, StoreError, WireFormatError
from ..events import BASE_EVENT_CLASS
from ..records import ActionState, CallResult, StateRef
from ..serde.actionstate import (
    JavaActionState,
    JavaCallResult,
    StateText,
    from_runtime,
    read_action_state,
    serialize,
    to_runtime,
    write_call_result,
    write_state_text,
)
from ..serde.jackson import loads
from ..serde.legacy import read_legacy_020, write_legacy_020
from ..serde.legacy_event import PYTHON_EVENT
from ..state_keys import java_string_hash

NATIVE = "native"
FLINK_AGENTS = "flink-agents"
FORMATS = (NATIVE, FLINK_AGENTS)
Era = Literal["current", "0.3.0", "0.2.0"]
#: Flink Agents engine versions whose topic format the store writes; the first is the default for a new topic.
V030 = "0.3"
V020 = "0.2"
VERSIONS = (V030, V020)

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_STATE_KEY = re.compile(rf"^(?P<key>.*)_(?P<seq>-?\d+)_(?P<event>{_UUID})_(?P<action>{_UUID})$", re.DOTALL)
_MASK = 0xFFFFFFFF


def _int32(n: int) -> int:
    n &= _MASK
    return n - (1 << 32) if n & 0x80000000 else n


def _rotl(n: int, r: int) -> int:
    n &= _MASK
    return ((n << r) | (n >> (32 - r))) & _MASK


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: a non-negative 32-bit hash of ``code``."""
    h = (code * 0xCC9E2D51) & _MASK
    h = _rotl(h, 15)
    h = (h * 0x1B873593) & _MASK
    h = _rotl(h, 13)
    h = (h * 5 + 0xE6546B64) & _MASK
    h ^= 4
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    signed = _int32(h)
    if signed >= 0:
        return signed
    return -signed if signed != -(1 << 31) else 0


@functools.lru_cache(maxsize=65536)  # a pure-Python murmur hash costs ~6 µs, paid on every store write
def partition_for(business_key: str, partitions: int) -> int:
    """The partition Flink Agents' ``ActionStateKeyPartitioner`` picks for a state of ``business_key``.

    Java hashes the state key's first ``_``-separated part, which is the business key up to its first
    ``_``. Java refuses an empty first part (an empty business key); here it hashes the empty string.
    """
    first = business_key.split("_", 1)[0]
    return murmur_hash(java_string_hash(first)) % partitions


def parse_state_key(state_key: str) -> tuple[str, int] | None:
    """(business key, seq) of a Java-scheme state key, parsed from the right; None if it is not one."""
    m = _STATE_KEY.match(state_key)
    if m is None:
        return None
    return m.group("key"), int(m.group("seq"))


def location_headers(ref: StateRef) -> list[tuple[str, bytes]]:
    return [
        ("key", ref.key.encode("utf-8")),
        ("seq", str(ref.seq).encode("ascii")),
        ("action", ref.action.name.encode("utf-8")),
    ]


def locate(state_key: str, headers: Sequence[tuple[str, Any]] | None) -> tuple[str | None, int | None, str | None]:
    """(business key, seq, action name) of a record: from its headers, else parsed from its key (a record
    a Flink Agents job wrote names no action, only the action's UUID inside the key)."""
    found: dict[str, str] = {}
    for name, raw in headers or []:
        if name in ("key", "seq", "action") and isinstance(raw, bytes | bytearray):
            found[name] = bytes(raw).decode("utf-8", "replace")
    seq_text = found.get("seq", "")
    if "key" in found and seq_text.lstrip("-").isdigit():
        return found["key"], int(seq_text), found.get("action")
    parsed = parse_state_key(state_key)
    if parsed is None:
        return None, None, found.get("action")
    return parsed[0], parsed[1], found.get("action")


def encode_value(state: ActionState, version: str = V030) -> bytes:
    """The record value of the whole state in ``version``'s format: ``ActionStateSerde`` bytes for 0.3, what
    0.2.0's ``ActionStateKafkaSeder`` writes for 0.2 (``LegacyFormatError`` for a state 0.2.0 cannot hold)."""
    return write_legacy_020(state) if version == V020 else serialize(state)


def _events(raw: dict[str, Any]) -> list[Any]:
    out = [raw.get("taskEvent")]
    outputs = raw.get("outputEvents")
    if isinstance(outputs, list):
        out += outputs
    return [e for e in out if isinstance(e, dict)]


def _memory_values(raw: dict[str, Any]) -> list[Any]:
    values = []
    for name in ("sensoryMemoryUpdates", "shortTermMemoryUpdates"):
        updates = raw.get(name)
        if isinstance(updates, list):
            values += [u.get("value") for u in updates if isinstance(u, dict)]
    return values


def era_of(raw: Any) -> Era:
    """``"0.2.0"`` when a parsed record carries something only 0.2.0 wrote: a ``PythonEvent``, an event's
    ``sourceTimestamp``, or a memory value that is not a Kryo envelope; ``"0.3.0"`` when a call result has
    no ``status`` (written before status existed); else ``"current"``."""
    if not isinstance(raw, dict):
        return "current"
    for event in _events(raw):
        if event.get("@class") == PYTHON_EVENT or "sourceTimestamp" in event:
            return "0.2.0"
    for value in _memory_values(raw):
        if value is not None and not (isinstance(value, dict) and "serde" in value):
            return "0.2.0"
    calls = raw.get("callResults")
    if isinstance(calls, list) and any(isinstance(c, dict) and c.get("status") is None for c in calls):
        return "0.3.0"
    return "current"


def _parse(value: bytes, location: Location | None) -> Any:
    try:
        return loads(value)
    except WireFormatError as exc:
        raise WireFormatError(
            exc.reason.rsplit(" at ", 1)[0], path=exc.path, offset=exc.offset, location=location
        ) from None


def decode_value(value: bytes, location: Location | None = None) -> tuple[ActionState, Era]:
    """A record value as a runtime state, and the format era it was written in; a record that is neither
    format raises :class:`~reference_runtime.errors.WireFormatError` with its JSON path and ``location``."""
    era = era_of(_parse(value, location))
    if era == "0.2.0":
        return read_legacy_020(value, location=location), era
    java = read_action_state(value, location=location)
    if java is None:
        raise WireFormatError("record value is JSON null, not an action state", location=location)
    return to_runtime(java, location), era


def java_model(value: bytes, location: Location | None = None) -> JavaActionState:
    """The Java object model of a stored value, so a rewrite keeps the untouched fields byte for byte (a
    0.2.0 record is upgraded to the current format)."""
    state, era = decode_value(value, location)
    if era == "0.2.0":
        return from_runtime(state)
    java = read_action_state(value, location=location)
    assert java is not None  # decode_value refused null
    return java


def state_text(value: bytes, location: Location | None = None) -> StateText:
    """A stored value in the parts a call-result write changes (:class:`StateText`), as it is written back:
    the value re-serialised from its Java model, so a rewrite keeps the untouched fields byte for byte (a
    0.2.0 record is upgraded to the current format)."""
    return write_state_text(java_model(value, location))


def _java_call(c: CallResult) -> JavaCallResult:
    return JavaCallResult(
        c.function_id,
        c.args_digest,
        c.result_payload,
        c.exception_payload,
        None if c.status is None else c.status.value,
    )


def set_call_results(text: StateText, index: int, results: Sequence[CallResult]) -> StateText:
    """``text`` with ``results`` in call slots ``index…`` (only they are encoded; ``text`` is left as it is).
    An index past the end (a gap) is a :class:`StoreError`; the store names the state's location in it."""
    calls = text.calls if text.calls is not None else []
    if index < 0 or index > len(calls):
        raise StoreError(f"call index {index} leaves a gap after {len(calls)} records")
    written = [write_call_result(_java_call(c)) for c in results]
    return StateText(text.head, [*calls[:index], *written, *calls[index + len(results) :]], text.tail)


def truncate_call_results(text: StateText, index: int) -> StateText | None:
    """``text`` without the call results from ``index`` on; None if that drops nothing."""
    calls = text.calls or []
    if index >= len(calls):
        return None
    return StateText(text.head, calls[: max(0, index)], text.tail)


# -- which engine reads a record (WIRE-12, INS-8) -----------------------------------------------------------

_STATE_FIELDS = frozenset(
    ("taskEvent", "sensoryMemoryUpdates", "shortTermMemoryUpdates", "outputEvents", "callResults", "completed")
)
#: Event classes 0.2.0's Jackson mapper can build, and the properties each has besides the base ones.
_EVENT_FIELDS_020 = {
    PYTHON_EVENT: frozenset(("event", "eventType", "eventJsonStr")),
    "org.apache.flink.agents.api.InputEvent": frozenset(("input",)),
    "org.apache.flink.agents.api.OutputEvent": frozenset(("output",)),
}
_EVENT_BASE_FIELDS_020 = frozenset(("@class", "id", "attributes", "sourceTimestamp"))
_CALL_FIELDS_020 = frozenset(("functionId", "argsDigest", "resultPayload", "exceptionPayload"))


@dataclass(frozen=True)
class EngineCheck:
    """Which engine versions read one record value as what it says: ``readers``; for every other version, why
    not (``reasons``, version → reason). A value no version reads (not JSON, not an object) has no readers."""

    readers: frozenset[str]
    reasons: tuple[tuple[str, str], ...] = ()
    #: The 0.3 engine refuses the value only for the ``objectCreation`` flag this project's 0.3 writer puts on a
    #: ``new_object`` update (PR #1030, the fix of #1029): the value is what this store itself writes into a
    #: topic whose version was not declared, and a store reading it back reads it whole.
    pr1030_only: bool = False

    def reason(self, version: str) -> str | None:
        return dict(self.reasons).get(version)


def _why_not_020(raw: Any) -> str | None:
    """Why 0.2.0's ``ActionStateKafkaSeder`` (Jackson, unknown properties refused) cannot read ``raw`` as the
    state it says, or None when it can."""
    if not isinstance(raw, dict):
        return "the value is not a JSON object"
    for name in raw:
        if name not in _STATE_FIELDS:
            return f"unknown field {name!r}"
    events = [("$.taskEvent", raw.get("taskEvent"))]
    outputs = raw.get("outputEvents")
    events += [(f"$.outputEvents[{i}]", e) for i, e in enumerate(outputs if isinstance(outputs, list) else [])]
    for path, event in events:
        if event is None:
            continue
        cls = event.get("@class") if isinstance(event, dict) else None
        if cls == BASE_EVENT_CLASS:
            return f"{path} is the base Event, abstract in 0.2.0 (a Python event there is a PythonEvent)"
        if cls not in _EVENT_FIELDS_020:
            return f"{path} is a {cls or 'untyped'} event; 0.2.0 reads PythonEvent, InputEvent and OutputEvent only"
        extra = set(event) - _EVENT_BASE_FIELDS_020 - _EVENT_FIELDS_020[cls]
        if extra:
            return f"{path} has {', '.join(sorted(extra))}, unknown to 0.2.0's {cls.rsplit('.', 1)[-1]}"
    for name in ("sensoryMemoryUpdates", "shortTermMemoryUpdates"):
        updates = raw.get(name)
        for i, u in enumerate(updates if isinstance(updates, list) else []):
            extra = set(u) - {"path", "value"} if isinstance(u, dict) else set()
            if extra:
                return f"$.{name}[{i}] has {', '.join(sorted(extra))}, unknown to 0.2.0"
            value = u.get("value") if isinstance(u, dict) else None
            if isinstance(value, dict) and "serde" in value and "payload" in value:
                return f"$.{name}[{i}].value is a Kryo envelope, which 0.2.0 reads as a map instead of the value"
    calls = raw.get("callResults")
    for i, c in enumerate(calls if isinstance(calls, list) else []):
        extra = set(c) - _CALL_FIELDS_020 if isinstance(c, dict) else set()
        if extra:
            return f"$.callResults[{i}] has {', '.join(sorted(extra))}, unknown to 0.2.0"
    return None


def engine_check(value: bytes) -> EngineCheck:
    """Which engine versions read ``value`` (a record value, not a tombstone): 0.3 as its ``ActionStateSerde``
    reads (the HEAD dialect, SER-6), 0.2 as 0.2.0's Jackson mapper does (unknown properties refused, the base
    ``Event`` abstract, a Kryo envelope read as a map)."""
    try:
        raw = loads(value)
    except WireFormatError as exc:
        return EngineCheck(frozenset(), tuple((v, f"not JSON: {exc.reason}") for v in VERSIONS))
    reasons: list[tuple[str, str]] = []
    pr1030_only = False
    try:
        if read_action_state(value, dialect="head") is None:
            reasons.append((V030, "the value is JSON null"))
    except WireFormatError as exc:
        reasons.append((V030, exc.reason))
        with contextlib.suppress(WireFormatError):
            pr1030_only = read_action_state(value) is not None
    why = _why_not_020(raw)
    if why is not None:
        reasons.append((V020, why))
    refused = {v for v, _ in reasons}
    return EngineCheck(frozenset(v for v in VERSIONS if v not in refused), tuple(reasons), pr1030_only)


@dataclass(frozen=True)
class TopicOwner:
    """The engine version a topic belongs to. ``version`` is None when no version reads every live record
    (a mixed or unreadable topic). ``how``: ``declared`` (the URL or constructor named it), ``detected``
    (from the records), ``default`` (no record says: a new topic gets :data:`V030`), ``mixed``.
    ``unreadable`` lists the live state keys the owner cannot read, with the reason, by version held."""

    version: str | None
    how: Literal["declared", "detected", "default", "mixed"]
    unreadable: tuple[tuple[str, str], ...] = ()
    #: For each version, how many live records only it reads (a mixed topic has two).
    only: tuple[tuple[str, int], ...] = ()

    def describe(self) -> str:
        counts = ", ".join(f"{n} only the {v} engine reads" for v, n in self.only if n)
        if self.version is None:
            return f"mixed Flink Agents topic: no engine version reads every state ({counts})"
        text = f"Flink Agents {self.version} topic ({self.how})"
        if self.unreadable:
            text += f": {len(self.unreadable)} state(s) its engine cannot read"
        return text


def topic_owner(checks: Iterable[tuple[str, EngineCheck]], declared: str | None = None) -> TopicOwner:
    """The owner of a topic whose live records (state key, check) are ``checks``: ``declared`` if given, else
    the one version that reads them all (0.3 when both do or the topic is empty)."""
    listed = list(checks)
    only = {v: sum(1 for _sk, c in listed if c.readers == {v}) for v in VERSIONS}
    counts = tuple(only.items())
    if declared is not None:
        version, how = declared, "declared"
    else:
        common = set(VERSIONS)
        for _sk, c in listed:
            common &= c.readers
        informative = any(len(c.readers) == 1 for _sk, c in listed)
        if common:
            version = V030 if V030 in common else next(iter(common))
            how = "detected" if informative else "default"
        elif sum(1 for n in only.values() if n) > 1:
            return TopicOwner(None, "mixed", (), counts)
        else:
            version = max(only, key=lambda v: only[v]) if any(only.values()) else V030
            how = "detected"
    unreadable = tuple((sk, c.reason(version) or "") for sk, c in listed if version not in c.readers)
    return TopicOwner(version, how, unreadable, counts)  # type: ignore[arg-type]


def engine_verdict(owner: TopicOwner, check: EngineCheck) -> dict[str, Any]:
    """What ``durable inspect`` shows of one live record (INS-8): ``owner`` (the version owning the topic, or
    None for a mixed one), ``how`` it is known, ``topic`` (:meth:`TopicOwner.describe`), ``readable`` (the
    owner's engine reads the record) and ``reason`` when it does not."""
    readable = owner.version is not None and owner.version in check.readers
    if readable:
        reason = None
    elif owner.version is None:
        readers = sorted(check.readers)
        reason = f"only the {readers[0]} engine reads it" if len(readers) == 1 else "no engine reads it"
    else:
        reason = check.reason(owner.version)
    return {
        "owner": owner.version,
        "how": owner.how,
        "topic": owner.describe(),
        "readable": readable,
        "readers": sorted(check.readers),
        "reason": reason,
    }
