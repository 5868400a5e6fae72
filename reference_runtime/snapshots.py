"""Cheap snapshots for checkpoints and run results (spec COST-1).

A checkpoint must not cost more for a runner that has seen 100 000 keys than for one that has seen 100:
it records only what changed since the previous checkpoint and shares the rest. Two shapes do that:

- :class:`Layered`, an immutable mapping built as a stack of small dicts; a checkpoint pushes the keys
  it touched. Layers are merged when one is at least half the size of the one below it, so a stack of
  n entries has O(log n) layers and each entry is copied O(log n) times over its life.
- :class:`Prefix`, a read-only view of the first n items of a list that only ever grows past n (the
  runner's output log and journal), so a result or checkpoint is O(1) to take.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class Layered(Mapping[K, V]):
    """An immutable mapping: the union of its layers, upper layers winning."""

    __slots__ = ("_flat", "_layers")

    def __init__(self, layers: tuple[dict[K, V], ...] = ()) -> None:
        self._layers = layers
        self._flat: dict[K, V] | None = None

    def push(self, changes: Mapping[K, V]) -> Layered[K, V]:
        """A new mapping: this one with ``changes`` applied. This one is unchanged."""
        if not changes:
            return self
        layers = [*self._layers, dict(changes)]
        while len(layers) > 1 and 2 * len(layers[-1]) >= len(layers[-2]):
            top = layers.pop()
            merged = dict(layers.pop())
            merged.update(top)
            layers.append(merged)
        return Layered(tuple(layers))

    def __getitem__(self, key: K) -> V:
        for layer in reversed(self._layers):
            if key in layer:
                return layer[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return any(key in layer for layer in self._layers)

    def _all(self) -> dict[K, V]:
        if self._flat is None:
            flat: dict[K, V] = {}
            for layer in self._layers:
                flat.update(layer)
            self._flat = flat
        return self._flat

    def __iter__(self) -> Iterator[K]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return f"Layered({self._all()!r})"


class Prefix(Sequence[T]):
    """The first ``length`` items of ``items``, which may grow (but never shrink below ``length``)."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[T], length: int | None = None) -> None:
        self._items = items
        self._length = len(items) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if not -self._length <= index < self._length:
            raise IndexError("Prefix index out of range")
        return self._items[index % self._length]

    def __iter__(self) -> Iterator[T]:
        items, n = self._items, self._length
        for i in range(n):
            yield items[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Prefix | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        raise TypeError("unhashable type: 'Prefix'")

    def __repr__(self) -> str:
        return repr(list(self))


__all__ = ["Layered", "Prefix"]
