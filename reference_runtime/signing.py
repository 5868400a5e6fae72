"""HMAC signatures over what recovery trusts (spec SIG-*): call-record payloads and action-state headers.

With an HMAC key, each call-record payload carries a MAC over its bytes and its :class:`RecordBinding`
(:func:`seal_payload` / :func:`open_payload`, used by the codec), so a payload verifies only in the record
it was written for. :class:`StateSigner` covers what recovery trusts outside the call records: the
completed flag, the output events and the memory updates of a completed action (SIG-2).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import NamedTuple

from .errors import PayloadDecodeError, SignatureError, location
from .records import ActionState, StateRef
from .stores.native import encode_state


class RecordBinding(NamedTuple):
    """Where a payload belongs: with an HMAC key its signature covers all of this (spec SIG-1), so a
    signed payload copied into another record, call index or status does not verify."""

    key: str
    seq: int
    action: str
    call_index: int
    function_id: str
    args_digest: str
    kind: str  # the record's status: "result" (SUCCEEDED), "exception" (FAILED) or "pending" (SIG-5)

    def encode(self) -> bytes:
        return json.dumps(list(self), separators=(",", ":"), ensure_ascii=True).encode()


_OLD_MAC_MAGIC = b"DHM1"
_MAC_MAGIC = b"DHM2"
_MAC_LEN = 32
#: Bytes a signature adds in front of a payload.
SEAL_BYTES = len(_MAC_MAGIC) + _MAC_LEN


def _payload_mac(key: bytes, body: bytes, binding: RecordBinding | None) -> bytes:
    bound = binding.encode() if binding is not None else b""
    return hmac.new(key, _MAC_MAGIC + len(bound).to_bytes(4, "big") + bound + body, hashlib.sha256).digest()


def seal_payload(key: bytes, body: bytes, binding: RecordBinding | None) -> bytes:
    """``body`` signed with ``key`` for the record ``binding`` names."""
    return _MAC_MAGIC + _payload_mac(key, body, binding) + body


def open_payload(data: bytes, keys: Iterable[bytes], binding: RecordBinding | None) -> bytes:
    """The body of a payload sealed by :func:`seal_payload` with one of ``keys`` for ``binding``; raises
    :class:`SignatureError` when it is unsigned, tampered, moved or signed with another key."""
    if not isinstance(data, bytes | bytearray):
        raise PayloadDecodeError(f"payload must be bytes, got {type(data).__name__}")
    if data.startswith(_OLD_MAC_MAGIC):
        raise SignatureError("payload is signed with the unbound format of 0.x (DHM1); re-record it")
    if not data.startswith(_MAC_MAGIC) or len(data) < SEAL_BYTES:
        raise SignatureError("payload is not signed but an HMAC key is configured")
    mac = data[len(_MAC_MAGIC) : SEAL_BYTES]
    body = bytes(data[SEAL_BYTES:])
    for key in keys:
        if hmac.compare_digest(mac, _payload_mac(key, body, binding)):
            return body
    raise SignatureError(
        "payload signature does not verify (tampered, moved from another record, or signed with a key "
        "that is neither hmac_key nor one of verify_keys)"
    )


_MAGIC = b"DHS1"


class StateSigner:
    """Signs headers with ``key``; verifies with ``key`` or any of ``verify_keys`` (key rotation)."""

    def __init__(self, key: bytes, verify_keys: tuple[bytes, ...] = ()) -> None:
        self.key = key
        self.verify_keys = verify_keys

    @classmethod
    def for_codec(cls, codec: object) -> StateSigner | None:
        """The signer matching a codec that signs its payloads, or None."""
        key = getattr(codec, "hmac_key", None)
        if not getattr(codec, "binds_records", False) or not isinstance(key, bytes):
            return None
        return cls(key, tuple(getattr(codec, "verify_keys", ())))

    def _mac(self, key: bytes, ref: StateRef, state: ActionState) -> bytes:
        bound = json.dumps([ref.key, ref.seq, ref.action.name, ref.state_key], ensure_ascii=True).encode()
        header = encode_state(state, with_signature=False)
        return hmac.new(key, _MAGIC + len(bound).to_bytes(4, "big") + bound + header, hashlib.sha256).digest()

    def sign(self, ref: StateRef, state: ActionState) -> None:
        state.signature = self._mac(self.key, ref, state)

    def verify(self, ref: StateRef, state: ActionState) -> None:
        loc = location(ref)
        if state.signature is None:
            raise SignatureError(
                "action state header is not signed but an HMAC key is configured (a forged record, or one "
                "written before signing was turned on)",
                loc,
            )
        for key in (self.key, *self.verify_keys):
            if hmac.compare_digest(state.signature, self._mac(key, ref, state)):
                return
        raise SignatureError(
            "action state header signature does not verify (tampered, moved from another record, or signed "
            "with a key that is neither hmac_key nor one of verify_keys)",
            loc,
        )
