"""What the store checks write: Hypothesis strategies for whole action states and business keys, and the
fixed samples behind the kit's regression checks.

They send what real runs send and naive stores lose (spec STORE-1, STORE-2): exception payloads that are
real pickles (not valid UTF-8), states with hundreds of call records, memory values near the half
megabyte STORE-1 promises, business keys that are canonically equivalent Unicode strings (``café``
composed and decomposed) and keys holding the state-key separators (``_`` of the Java state key, ``|`` of
the kit's own references).
"""

from __future__ import annotations

import pickle
import uuid
from typing import Any

from hypothesis import strategies as st

from reference_runtime.events import Event, InputEvent, OutputEvent
from reference_runtime.records import ActionState, CallResult, MemoryUpdate

from .states import CAFE_NFC, CAFE_NFD, fidelity_values

#: Business keys for the state machine: one a prefix of another up to the Java state-key separator
#: (``a`` and ``a_1``: the state key of ``('a', 1)`` starts ``a_1_``), and the two spellings of ``café``.
MODEL_KEYS = ("a", "a_1", CAFE_NFC, CAFE_NFD)
#: More call records than any one-byte index, page or list window holds (the kit wrote at most 251 before).
MANY_CALLS = 700
#: A memory value's size near what STORE-1 promises a store keeps exact ("half-megabyte payloads"), in bytes.
NEAR_LIMIT = 512 * 1024 - 64


def exception_payload(message: str) -> bytes:
    """What a runtime records for a raised ``ValueError(message)``: a pickle, whose protocol header
    (``\\x80``) alone makes it invalid UTF-8, so a store keeping payloads as text cannot hold it."""
    payload = pickle.dumps(ValueError(message), protocol=5)
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError:
        return payload
    raise AssertionError("a pickled exception is expected to be invalid UTF-8")  # pragma: no cover


def many_calls(tag: str, n: int = MANY_CALLS) -> list[CallResult]:
    """``n`` terminal records, each naming its index and ``tag``; every tenth a failure."""
    return [
        CallResult.failed(f"f{i}", tag, exception_payload(f"{tag}/{i}"))
        if i % 10 == 9
        else CallResult.succeeded(f"f{i}", tag, f"{tag}/{i}".encode())
        for i in range(n)
    ]


def near_limit_values() -> dict[str, Any]:
    """Memory values near the sizes STORE-1 promises: bytes just under half a megabyte, a non-ASCII string
    of 128 Ki characters (twice the 64 Ki a text column holds; 256 KiB in UTF-8, 768 KiB as JSON
    escapes) and a list holding both kinds."""
    return {
        "bytes": bytes(range(256)) * (NEAR_LIMIT // 256),
        "text": "é" * (128 * 1024),
        "list": ["x" * (NEAR_LIMIT // 4), b"\xff" * (NEAR_LIMIT // 4)],
    }


# -- strategies -------------------------------------------------------------------------------------------

#: Memory values (MEM-2): the kit's fidelity samples (bool is not int, -0.0, big integers, bytes, NUL,
#: non-ASCII and astral text, nesting), and generated ones: None, bool, int past 64 bits, float (NaN,
#: infinities), str, bytes, and lists and dicts of them.
VALUES: st.SearchStrategy[Any] = st.sampled_from(list(fidelity_values().values())) | st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | st.text(max_size=4)
    | st.binary(max_size=4),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=3,
)

_PATHS = st.sampled_from(["a", "a.b", "ключ.键", "x.y.z", ""])
_UPDATES = st.lists(st.builds(MemoryUpdate, _PATHS, VALUES, st.booleans()), max_size=2)


@st.composite
def call_results(draw: st.DrawFn, tag: str, size: int, min_size: int = 0) -> list[CallResult]:
    """``min_size`` to ``size`` records of every status, the failures carrying real pickled exceptions."""
    out: list[CallResult] = []
    for i in range(draw(st.integers(min_size, size))):
        kind = draw(st.sampled_from(["ok", "failed", "pending", "legacy"]))
        fid, digest = draw(st.sampled_from(["f", "g", "h"])), f"{tag}{i}"
        if kind == "ok":
            out.append(CallResult.succeeded(fid, digest, draw(st.binary(max_size=6) | st.none())))
        elif kind == "failed":
            out.append(CallResult.failed(fid, digest, exception_payload(f"{tag}/{i}")))
        elif kind == "pending":
            out.append(CallResult.pending(fid, digest))
        else:
            out.append(CallResult(fid, digest, b"old", None, None))
    return out


@st.composite
def action_states(draw: st.DrawFn) -> ActionState:
    """A whole action state: task event, memory updates, output events and call records (failures with
    real pickled exceptions), sometimes completed (which clears the records, as the runtime does). Hundreds
    of records and values near the size limit are left to the fixed checks of
    :mod:`conformance.store_regressions`: drawn here, they made every step of a remote store slow."""
    tag = draw(st.text("abcxyz", min_size=1, max_size=3))
    state = ActionState(
        task_event=InputEvent(draw(VALUES), id=uuid.UUID(int=draw(st.integers(0, 2**128 - 1)))),
        sensory_memory_updates=draw(_UPDATES),
        short_term_memory_updates=draw(_UPDATES),
        output_events=draw(
            st.lists(
                st.builds(OutputEvent, VALUES) | st.builds(lambda v: Event("custom", {"v": v}), VALUES), max_size=2
            )
        ),
        call_results=draw(call_results(tag, 3)),
    )
    if draw(st.integers(0, 4)) == 4:
        state.mark_completed()
    return state
