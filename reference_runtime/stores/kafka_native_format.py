"""The native record framing of the Kafka store (``S|…`` state frames, ``C|…`` call records, ``T|…``
truncations; layout in docs/stores.md). Pure encoding, no client I/O."""

from __future__ import annotations

import json
from collections.abc import Sequence

FRAME_VERSION = 1


def s_key(state_key: str) -> str:
    return f"S|{state_key}"


def t_key(state_key: str) -> str:
    return f"T|{state_key}"


def c_key(state_key: str, index: int) -> str:
    return f"C|{state_key}|{index:08d}"


def encode_frame(key: str, seq: int, action: str, header: bytes, calls: Sequence[bytes]) -> bytes:
    """The value of an ``S`` record."""
    envelope = {
        "v": FRAME_VERSION,
        "key": key,
        "seq": seq,
        "action": action,
        "sizes": [len(header), *(len(c) for c in calls)],
    }
    return json.dumps(envelope, separators=(",", ":")).encode() + b"\n" + header + b"".join(calls)


def decode_frame(value: bytes) -> tuple[str, int, str, bytes, list[bytes]]:
    """Split an ``S`` record's value; raises ValueError with a reason when it is not a frame."""
    newline = value.find(b"\n")
    if newline < 0:
        raise ValueError("state frame has no envelope line")
    try:
        env = json.loads(value[:newline].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"state frame envelope is not JSON: {exc}") from exc
    if not isinstance(env, dict) or set(env) != {"v", "key", "seq", "action", "sizes"}:
        raise ValueError("state frame envelope does not have exactly the fields v, key, seq, action, sizes")
    if env["v"] != FRAME_VERSION:
        raise ValueError(f"unsupported state frame version {env['v']!r}")
    key, seq, action, sizes = env["key"], env["seq"], env["action"], env["sizes"]
    if not (isinstance(key, str) and isinstance(seq, int) and not isinstance(seq, bool) and isinstance(action, str)):
        raise ValueError("state frame envelope has a bad key, seq or action")
    if not (
        isinstance(sizes, list)
        and sizes
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in sizes)
    ):
        raise ValueError("state frame envelope has bad sizes")
    body = value[newline + 1 :]
    if sum(sizes) != len(body):
        raise ValueError(f"state frame body is {len(body)} bytes, the envelope announces {sum(sizes)}")
    parts: list[bytes] = []
    pos = 0
    for n in sizes:
        parts.append(bytes(body[pos : pos + n]))
        pos += n
    return key, seq, action, parts[0], parts[1:]


def parse_index(text: str) -> int | None:
    """A call index, length or sequence number written by this store, or None. ``str.isdigit`` alone
    admits non-ASCII digits ('²') that ``int`` refuses, and a 5 000-digit run ``int`` cannot convert: either
    used to stop a whole rebuild with a raw ValueError (spec LIM-8)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def parse_record_key(kkey: str) -> tuple[str, str, int | None] | None:
    """``(kind, state key, call index)`` of a record key ``S|sk``, ``T|sk`` or ``C|sk|index``; None when
    the key is none of these."""
    kind, _, rest = kkey.partition("|")
    if kind == "C":
        sk, _, idx = rest.rpartition("|")
        index = parse_index(idx)
        return (kind, sk, index) if sk and index is not None else None
    if kind in ("S", "T") and rest:
        return kind, rest, None
    return None
