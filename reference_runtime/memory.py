"""Short-term and sensory memory (spec MEM-1..MEM-13).

Memory is a flat map from absolute dotted path to item; the root is ``""``. An object item lists its
children; a value item holds a validated, deep-copied value. An action sees its own writes at once, but
they are buffered in an overlay and an update log until the action completes; the log records object
creation explicitly, so replaying it rebuilds exactly the same map (Flink Agents #1029 cannot happen).

Short-term memory may have a state TTL (:class:`MemoryTtl`, spec MEM-14): a value item records when it was
last written (or read, by policy) on the runner's clock and reads as absent once older than the TTL.
"""

from __future__ import annotations

import bisect
import copy
import threading
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .errors import MemoryAccessError
from .identity import CallContext, CallId
from .records import MemoryUpdate
from .values import memory_value

if TYPE_CHECKING:
    from .clock import Clock

MemoryType = Literal["short_term", "sensory"]
NESTED_OBJECT = "NestedObject"

#: The durable call being executed, if any: ``current_call()`` reads it, and memory and ``send_event``
#: are off limits while it is set. One variable, set once per call attempt: to a CallContext, or to a plain
#: tuple of its fields on a new call's fused path (``ActionExecution.new_call``; ``current_call()`` makes the
#: named tuple from it, benchmark P1a).
_in_durable_call: ContextVar[CallContext | tuple[CallId, str, str, int] | None] = ContextVar(
    "durable_call", default=None
)


def check_action_access(owner: int | None, what: str) -> None:
    """Raise :class:`MemoryAccessError` unless called from the action's own code on the runner thread."""
    call = _in_durable_call.get()
    if call is not None:
        raise MemoryAccessError(
            f"{what} is not allowed inside a durable function ({call[1]}): a durable call's only "
            "effect on the agent must be its recorded result; return the value and use it from the action"
        )
    if owner is not None and threading.get_ident() != owner:
        raise MemoryAccessError(
            f"{what} was used off the runner's thread; memory and events belong to the action's own code"
        )


class Item:
    """An object or a value in the flat map.

    Committed items are never changed in place, so snapshots can share them (spec COST-1). An object's
    children live in a list that later versions of the object extend; each version sees the first
    ``count`` names, so adding a field is O(1) however many fields the object already has.
    """

    __slots__ = ("_count", "_kids", "is_object", "stamp", "value")

    def __init__(self, is_object: bool, value: Any = None, children: list[str] | None = None) -> None:
        self.is_object = is_object
        self.value = value
        self._kids: list[str] = list(children) if children else []
        self._count = len(self._kids)
        #: When the item was last written (or refreshed by a read), on the TTL's clock; None: never expires.
        self.stamp: float | None = None

    @property
    def children(self) -> list[str]:
        """The object's field names, in insertion order."""
        return self._kids[: self._count]

    def with_child(self, name: str) -> Item:
        """This object with one more child, sharing the child list."""
        kids = self._kids
        if len(kids) > self._count:
            # A newer version that was thrown away (a crashed action, a restored checkpoint) left names
            # behind; no live version can see them.
            del kids[self._count :]
        kids.append(name)
        new = Item.__new__(Item)
        new.is_object, new.value, new._kids, new._count, new.stamp = True, None, kids, self._count + 1, None
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return NotImplemented
        return (self.is_object, self.value, self.children) == (other.is_object, other.value, other.children)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self.is_object:
            return f"Item(object, children={self.children!r})"
        return f"Item(value={self.value!r})"


def _split(path: str) -> list[str]:
    if not isinstance(path, str) or not path:
        raise ValueError(f"memory path must be a non-empty dotted string, got {path!r}")
    parts = path.split(".")
    if any(not p for p in parts):
        raise ValueError(f"memory path {path!r} has an empty segment")
    return parts


def _join(prefix: str, path: str) -> str:
    return f"{prefix}.{path}" if prefix else path


def _parent(path: str) -> tuple[str, str]:
    head, _, tail = path.rpartition(".")
    return head, tail


def _nested(lookup: Callable[[str], Item | None]) -> dict[str, Any]:
    """The nested plain-data view of a flat map (objects become dicts, values are deep copies)."""

    def build(path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        node = lookup(path)
        for child in node.children if node is not None else ():
            cp = _join(path, child)
            item = lookup(cp)
            if item is not None:
                out[child] = build(cp) if item.is_object else copy.deepcopy(item.value)
        return out

    return build("")


@dataclass(frozen=True)
class MemoryTtl:
    """The state TTL of short-term memory, as Flink's state TTL on the memory map (spec MEM-14).

    A value item expires ``ttl_ms`` after it was last written, measured on ``clock`` (the runner's: real
    time, or virtual time that only moves when advanced); with ``update_on_read`` a read refreshes it too
    (``ON_READ_AND_WRITE``). An expired value reads as absent, unless ``return_expired``
    (``RETURN_EXPIRED_IF_NOT_CLEANED_UP``: in-process nothing is ever cleaned up, so it stays readable).
    Objects, the memory's structure, do not expire.
    """

    ttl_ms: int
    clock: Clock
    update_on_read: bool = True
    return_expired: bool = False

    def expired(self, item: Item) -> bool:
        return item.stamp is not None and (self.clock.now() - item.stamp) * 1000 >= self.ttl_ms


class FlatMemory:
    """One key's memory of one type: the committed flat path map.

    Snapshots (:meth:`freeze`) cost O(1): after the first one, every commit logs the item it replaces,
    once per path and snapshot epoch, and a snapshot reads through that log. :meth:`restore` undoes the
    writes since a snapshot, so a failover costs what was written since the checkpoint, not the size of
    the memory (spec COST-1).
    """

    def __init__(self, items: dict[str, Item] | None = None, ttl: MemoryTtl | None = None) -> None:
        self.items: dict[str, Item] = items if items is not None else {"": Item(True)}
        self.ttl = ttl
        self._epoch = 0
        self._logging = False
        # path -> [(epoch, the item before the first write of that epoch)], epochs increasing
        self._undo: dict[str, list[tuple[int, Item | None]]] = {}
        self._touched: list[tuple[int, str]] = []

    def write(self, changes: dict[str, Item]) -> None:
        """Commit ``changes`` (path -> new item)."""
        if self._logging:
            epoch, items, undo, touched = self._epoch, self.items, self._undo, self._touched
            for path in changes:
                history = undo.get(path)
                if history is None:
                    undo[path] = [(epoch, items.get(path))]
                elif history[-1][0] != epoch:
                    history.append((epoch, items.get(path)))
                else:
                    continue
                touched.append((epoch, path))
        self.items.update(changes)

    def freeze(self) -> MemorySnapshot:
        """A read-only view of the memory as it is now, unaffected by later writes."""
        snapshot = MemorySnapshot(self, self._epoch)
        self._epoch += 1
        self._logging = True
        return snapshot

    def item_at(self, path: str, epoch: int) -> Item | None:
        history = self._undo.get(path)
        if history is not None:
            i = bisect.bisect_right(history, epoch, key=_first)
            if i < len(history):
                return history[i][1]
        return self.items.get(path)

    def restore(self, snapshot: MemorySnapshot) -> None:
        """Undo every write made since ``snapshot`` was taken (the latest snapshot stays valid)."""
        if snapshot.memory is not self:
            raise ValueError("a snapshot can only restore the memory it was taken of")
        epoch, touched = snapshot.epoch, self._touched
        while touched and touched[-1][0] > epoch:
            _, path = touched.pop()
            history = self._undo[path]
            i = bisect.bisect_right(history, epoch, key=_first)
            if i < len(history):
                old = history[i][1]
                if old is None:
                    self.items.pop(path, None)
                else:
                    self.items[path] = old
                del history[i:]
                if not history:
                    del self._undo[path]
        self._epoch = epoch + 1

    def to_dict(self) -> dict[str, Any]:
        """The nested plain-data view of the whole map (objects become dicts)."""
        return _nested(self.items.get)

    def apply(self, updates: list[MemoryUpdate]) -> None:
        """Replay an update log (of a completed action) onto the committed map."""
        view = MemoryView(self)
        for u in updates:
            if u.object_creation:
                view.new_object(u.path, overwrite=True)
            else:
                view.set(u.path, u.value)
        view.commit()


def _first(entry: tuple[int, Item | None]) -> int:
    return entry[0]


class MemorySnapshot(Mapping[str, Item]):
    """A frozen view of a :class:`FlatMemory` (path -> item), taken by :meth:`FlatMemory.freeze`."""

    __slots__ = ("_flat", "epoch", "memory")

    def __init__(self, memory: FlatMemory, epoch: int) -> None:
        self.memory = memory
        self.epoch = epoch
        self._flat: dict[str, Item] | None = None

    def get_item(self, path: str) -> Item | None:
        return self.memory.item_at(path, self.epoch)

    def __getitem__(self, path: str) -> Item:
        item = self.get_item(path)
        if item is None:
            raise KeyError(path)
        return item

    def _all(self) -> dict[str, Item]:
        if self._flat is None:
            flat: dict[str, Item] = {}
            stack = [""]
            while stack:
                path = stack.pop()
                item = self.get_item(path)
                if item is None:
                    continue
                flat[path] = item
                stack.extend(_join(path, c) for c in reversed(item.children))
            self._flat = flat
        return self._flat

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def to_dict(self) -> dict[str, Any]:
        """The nested plain-data view, as :meth:`FlatMemory.to_dict` was when the snapshot was taken."""
        return _nested(self.get_item)


class MemoryView:
    """An action's window onto a :class:`FlatMemory`: reads fall through, writes go to an overlay."""

    def __init__(self, base: FlatMemory) -> None:
        self.base = base
        self.overlay: dict[str, Item] = {}
        self.log: list[MemoryUpdate] = []

    def item(self, path: str) -> Item | None:
        """The item at ``path`` as the action sees it (an expired value is absent, spec MEM-14)."""
        found = self.overlay.get(path)
        if found is not None:
            return found
        found = self.base.items.get(path)
        ttl = self.base.ttl
        expiring = found is not None and ttl is not None and not found.is_object and not ttl.return_expired
        if expiring and ttl.expired(found):  # type: ignore[union-attr, arg-type]
            return None
        return found

    def read(self, path: str) -> Item | None:
        """:meth:`item` for a read by the action's code: under a TTL that updates on read, reading a
        committed value refreshes it at once (as Flink's state backend does; no update is logged)."""
        item = self.item(path)
        ttl = self.base.ttl
        committed = item is not None and not item.is_object and path not in self.overlay
        if ttl is not None and ttl.update_on_read and committed:
            fresh = Item(False, item.value)  # type: ignore[union-attr]
            fresh.stamp = ttl.clock.now()
            self.base.write({path: fresh})
        return item

    def _expired_here(self, path: str) -> bool:
        """Whether ``path``, absent as the action sees it, is still in the map as an expired value (so its
        parent lists it already). Only a memory with a TTL has such paths."""
        return self.base.ttl is not None and path in self.base.items

    def _add_child(self, parent: str, name: str) -> None:
        item = self.item(parent)
        assert item is not None and item.is_object
        self.overlay[parent] = item.with_child(name)

    def _ensure_object(self, path: str) -> None:
        """Create ``path`` and its ancestors as objects; refuse to turn a value into an object."""
        existing = self.item(path)
        if existing is not None:
            if not existing.is_object:
                raise ValueError(f"memory path {path!r} holds a value, not an object")
            return
        parent, name = _parent(path)
        self._ensure_object(parent)
        if not self._expired_here(path):  # an expired value's path is listed already (spec MEM-14)
            self._add_child(parent, name)
        self.overlay[path] = Item(True)

    def set(self, path: str, value: Any) -> None:
        _split(path)
        clean = memory_value(value, f"value at memory path {path!r}")
        existing = self.item(path)
        if existing is not None and existing.is_object:
            raise ValueError(f"cannot overwrite the object at memory path {path!r} with a value")
        parent, name = _parent(path)
        self._ensure_object(parent)
        if existing is None and not self._expired_here(path):
            self._add_child(parent, name)
        self.overlay[path] = Item(False, clean)
        self.log.append(MemoryUpdate(path, copy.deepcopy(clean), False))

    def new_object(self, path: str, *, overwrite: bool = False) -> None:
        _split(path)
        existing = self.item(path)
        if existing is not None and existing.is_object:
            self.log.append(MemoryUpdate(path, None, True))
            return
        if existing is not None and not overwrite:
            raise ValueError(f"memory path {path!r} holds a value; pass overwrite=True to replace it")
        parent, name = _parent(path)
        self._ensure_object(parent)
        if existing is None and not self._expired_here(path):
            self._add_child(parent, name)
        self.overlay[path] = Item(True)
        self.log.append(MemoryUpdate(path, None, True))

    def commit(self) -> None:
        ttl = self.base.ttl
        if ttl is not None:
            # Written now, as far as the TTL goes: when the action's buffered writes reach the state.
            now = ttl.clock.now()
            for item in self.overlay.values():
                if not item.is_object:
                    item.stamp = now
        self.base.write(self.overlay)
        self.overlay = {}


@dataclass(frozen=True)
class MemoryRef:
    """A reference to a memory value that can travel in events (``memory_type`` + absolute path)."""

    memory_type: MemoryType
    path: str

    @classmethod
    def create(cls, memory_type: MemoryType, path: str) -> MemoryRef:
        _split(path)
        return cls(memory_type, path)

    def resolve(self, ctx: Any) -> Any:
        memory = ctx.short_term_memory if self.memory_type == "short_term" else ctx.sensory_memory
        return memory.get(self)


class MemoryObject:
    """The user-facing memory API (flink_agents ``MemoryObject``), rooted at ``prefix``."""

    def __init__(self, view: MemoryView, memory_type: MemoryType, prefix: str = "", owner: int | None = None):
        self._view = view
        self._type = memory_type
        self._prefix = prefix
        self._owner = owner

    def _abs(self, path: str) -> str:
        check_action_access(self._owner, "memory access")
        _split(path)
        return _join(self._prefix, path)

    def get(self, path_or_ref: str | MemoryRef) -> Any:
        """The value at the path, a nested :class:`MemoryObject` for an object, or None if absent."""
        if isinstance(path_or_ref, MemoryRef):
            check_action_access(self._owner, "memory access")
            absolute = path_or_ref.path
        else:
            absolute = self._abs(path_or_ref)
        item = self._view.read(absolute)
        if item is None:
            return None
        if item.is_object:
            return MemoryObject(self._view, self._type, absolute, self._owner)
        return copy.deepcopy(item.value)

    def set(self, path: str, value: Any) -> MemoryRef:
        absolute = self._abs(path)
        self._view.set(absolute, value)
        return MemoryRef(self._type, absolute)

    def new_object(self, path: str, *, overwrite: bool = False) -> MemoryObject:
        absolute = self._abs(path)
        self._view.new_object(absolute, overwrite=overwrite)
        return MemoryObject(self._view, self._type, absolute, self._owner)

    def is_exist(self, path: str) -> bool:
        return self._view.read(self._abs(path)) is not None

    def get_field_names(self) -> list[str]:
        check_action_access(self._owner, "memory access")
        item = self._view.item(self._prefix)
        if item is None:
            return []
        if self._view.base.ttl is None:
            return list(item.children)
        return [n for n in item.children if self._view.item(_join(self._prefix, n)) is not None]

    def get_fields(self) -> dict[str, Any]:
        check_action_access(self._owner, "memory access")
        out: dict[str, Any] = {}
        for name in self.get_field_names():
            child = self._view.read(_join(self._prefix, name))
            if child is not None:
                out[name] = NESTED_OBJECT if child.is_object else copy.deepcopy(child.value)
        return out

    @property
    def path(self) -> str:
        return self._prefix

    def __repr__(self) -> str:
        return f"MemoryObject({self._type}, path={self._prefix!r})"
