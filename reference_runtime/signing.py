"""Signed action-state headers (spec SIG-2): with an HMAC key, the header a store returns is trusted
only if its MAC verifies for the exact key, sequence number, action and state key it was read for.

Call records are signed by the codec (each payload carries a MAC over its :class:`RecordBinding`); this
module covers what recovery trusts outside the call records: the completed flag, the output events and
the memory updates of a completed action.
"""

from __future__ import annotations

import hashlib
import hmac
import json

from .errors import SignatureError, location
from .records import ActionState, StateRef
from .stores.native import encode_state

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
