"""Business key -> state keys, kept beside a store's state-key map (spec COST-3).

A miss (STORE-3) and a prune (STORE-4) concern one business key; with this index they look at that key's
states only, so their cost does not grow with the number of other keys in the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


class KeyIndex:
    """Which state keys belong to each business key."""

    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: dict[str, set[str]] = {}

    def add(self, key: str | None, state_key: str) -> None:
        if key is not None:
            self._keys.setdefault(key, set()).add(state_key)

    def discard(self, key: str | None, state_key: str) -> None:
        if key is None:
            return
        states = self._keys.get(key)
        if states is not None:
            states.discard(state_key)
            if not states:
                del self._keys[key]

    def states_of(self, key: str) -> list[str]:
        """The state keys of ``key`` (a copy: callers delete while they iterate)."""
        return list(self._keys.get(key, ()))

    def matching(self, key: str, seq_of: Callable[[str], int | None], wanted: Callable[[int], bool]) -> list[str]:
        """The state keys of ``key`` whose sequence number (``seq_of(state key)``, None when the state is
        gone or unreadable) is ``wanted``: what a miss or a prune deletes."""
        out = []
        for state_key in self.states_of(key):
            seq = seq_of(state_key)
            if seq is not None and wanted(seq):
                out.append(state_key)
        return out

    @classmethod
    def of(cls, pairs: Iterable[tuple[str | None, str]]) -> KeyIndex:
        """An index of ``(business key, state key)`` pairs."""
        index = cls()
        for key, state_key in pairs:
            index.add(key, state_key)
        return index
