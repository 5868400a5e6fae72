"""Call identity: function id, args digest and the idempotency call id (spec IDN-*)."""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
import pickle
import sys
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import quote

import cloudpickle


def function_id(func: Callable[..., Any]) -> str:
    """``module.qualname`` exactly as Flink Agents computes it (IDN-1), quirks included:
    every ``functools.partial`` becomes ``functools.<unknown>``."""
    module_name = getattr(func, "__module__", None)
    # inspect.getmodule returns sys.modules[func.__module__] whenever that attribute exists; asking
    # sys.modules directly skips its other lookups on the per-call path.
    module = sys.modules.get(module_name) if isinstance(module_name, str) else inspect.getmodule(func)
    if module is not None:
        module_name = module.__name__
    if not module_name:
        module_name = "<unknown>"
    qualname = getattr(func, "__qualname__", None) or "<unknown>"
    return f"{module_name}.{qualname}"


def args_digest(args: tuple[Any, ...], kwargs: dict[str, Any], memo: bool = True) -> str:
    """The args digest the reference runtime records and matches on (IDN-2, IDN-10): the first 16 hex chars
    of sha256 over the pickle of ``(args, kwargs)`` with no object shared, so that equal arguments give one
    digest however their objects (strings, lists, models) happen to be shared, as arguments rebuilt from a
    store are shared differently from the originals. Arguments that share nothing digest exactly as Flink
    Agents' :func:`flink_args_digest` (``cloudpickle.dumps``); falls back to ``str`` of the pair when the
    arguments cannot be pickled, as Flink Agents does.

    ``memo``: look the digest up in (and add it to) the memo of recent digests, which pays off only when the
    same arguments come again, as they do in replays; a call being made for the first time passes False, for
    a miss costs more than the sha256 it saves (1.7 against 0.9 µs, benchmark P1a)."""
    if memo and not kwargs:
        # Positional ints, None and short strings or bytes: the digest is a function of their values (no
        # two of those types compare equal, a bool or float is not taken, and sharing is undone below), so
        # a replay finds it by the arguments themselves, without pickling them: 0.9 of a replay's 2.2 µs
        # (benchmark P9b replays 12.5 million calls).
        for value in args:
            t = type(value)
            if not (t is int or value is None or ((t is str or t is bytes) and len(value) <= _KEYED_TEXT)):
                break
        else:
            found = _BY_VALUE.get(args)
            if found is None:
                found = _args_digest(args, kwargs, False)  # this memo holds it: none under its pickle too
                if len(_BY_VALUE) >= _BY_VALUE_SIZE:
                    _BY_VALUE.clear()
                _BY_VALUE[args] = found
            return found
    return _args_digest(args, kwargs, memo)


#: :func:`args_digest`'s memo by value: at most this many argument tuples, of strings and bytes this short.
_BY_VALUE: dict[tuple[Any, ...], str] = {}
_BY_VALUE_SIZE = 32768
_KEYED_TEXT = 64


def _args_digest(args: tuple[Any, ...], kwargs: dict[str, Any], memo: bool) -> str:
    """:func:`args_digest` past its memo by value; ``_args_digest(args, kwargs, False)`` is what a call made for
    the first time takes, one function call fewer than ``args_digest(args, kwargs, False)`` (benchmark P1a)."""
    # Numbers, booleans and None: plain, and nothing the pickle memo could share; the common arguments of a
    # durable call skip the walk below (every call and every replay digests them: P1a, P9b).
    data = None
    if not kwargs:
        for value in args:
            if type(value) not in _ATOMS:
                break
        else:
            # The protocol goes by position: a keyword costs the C function its keyword parsing (P1a).
            data = pickle.dumps((args, kwargs), 5)
    if data is None:
        try:
            # dumps((args, kwargs)) spelled out: one level of _is_plain calls fewer saves 7 % of a P4 scenario.
            seen: set[int] = set()
            shape = _plain_shape(args, seen, 1)
            if shape and kwargs:
                found = _plain_shape(kwargs, seen, 1)
                shape = max(shape, found) if found else 0
            if shape == _UNSHARED:
                data = pickle.dumps((args, kwargs), protocol=5)
            elif shape == _SHARED:
                data = pickle.dumps(pickle.loads(_fast_dumps((args, kwargs), pickle.Pickler)), protocol=5)
            else:
                data = _canonical_cloudpickle((args, kwargs))
        except Exception:
            data = str((args, kwargs)).encode()
    if memo:
        return _digest(data)
    # A copy of an empty sha256 rather than a new one: OpenSSL looks the algorithm up for every new one, 25 to
    # 45 ns of a durable call on the clock (benchmark P1a).
    sha = _EMPTY_SHA256.copy()
    sha.update(data)
    return sha.hexdigest()[:16]


#: What :func:`_args_digest` copies for every sha256 it does not memoise.
_EMPTY_SHA256 = hashlib.sha256()


def flink_args_digest(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """Flink Agents' own args digest: the first 16 hex chars of sha256 over ``cloudpickle.dumps((args,
    kwargs))``, ``str`` of the pair when that fails. It depends on how the arguments' objects are shared
    (the pickle memo), so equal arguments may digest differently; the runtime matches a record on
    :func:`args_digest` and accepts this one too, for records Flink Agents wrote (IDN-10)."""
    try:
        data: bytes = cloudpickle.dumps((args, kwargs))
    except Exception:
        data = str((args, kwargs)).encode()
    return _digest(data)


def _digest(data: bytes) -> str:
    if len(data) <= _CACHED_DIGEST_INPUT:
        return _short_digest(data)
    return hashlib.sha256(data).hexdigest()[:16]


def _fast_dumps(value: Any, pickler: type[pickle.Pickler]) -> bytes:
    """``value`` pickled with the memo off: every occurrence of an object written in full (a cycle raises)."""
    buffer = io.BytesIO()
    p = pickler(buffer, protocol=5)
    p.fast = True
    p.dump(value)
    return buffer.getvalue()


def _canonical_cloudpickle(value: Any) -> bytes:
    """``cloudpickle.dumps`` of an unshared, canonical copy of ``value``: pickled without the memo and loaded
    back, every object is its own, so the pickle no longer depends on which objects were shared; a pydantic
    model is written as its class name and the state its equality compares (fields, extra, private), not the
    set of fields that happened to be set, which a model rebuilt from JSON has otherwise and whose order
    follows the hash seed (IDN-10). A value that cannot take that round trip (a cycle, a class that does not
    load back) is pickled as it is."""
    try:
        unshared = pickle.loads(_fast_dumps(_set_order_free(value), _CanonicalPickler))
        data: bytes = cloudpickle.dumps(unshared)
    except Exception:
        data = cloudpickle.dumps(value)
    return data


class _CanonicalPickler(cloudpickle.CloudPickler):  # type: ignore[misc]
    """cloudpickle's pickler, with pydantic models written as :func:`_model_state` tuples."""

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if hasattr(cls, "__pydantic_fields__") and hasattr(obj, "__pydantic_fields_set__"):
            name = f"{cls.__module__}.{cls.__qualname__}"
            state = (_set_order_free(obj.__dict__), obj.__pydantic_extra__, obj.__pydantic_private__)
            return _model_state, (name, *state)
        return super().reducer_override(obj)


def _model_state(name: str, fields: Any, extra: Any, private: Any) -> tuple[Any, ...]:
    """What a pydantic model digests as (:class:`_CanonicalPickler`)."""
    return ("pydantic", name, fields, extra, private)


def _set_order_free(value: Any, depth: int = 0) -> Any:
    """``value`` with every set and frozenset it reaches through lists, tuples and dicts written as a tuple
    ``("set" or "frozenset", items)``, its items in the order of their own canonical pickles (IDN-10): a set
    pickles in its iteration order, which for strings and bytes follows the process's hash seed, so the
    same arguments would digest differently in another process, as after a failover to a new one. ``value``
    itself when it reaches no set, so every other digest stays as it was. A set whose items cannot be
    pickled is left as it is."""
    t = type(value)
    if t in _PLAIN or depth > 50:
        return value
    if t is set or t is frozenset:
        items = [_set_order_free(v, depth + 1) for v in value]
        try:
            items.sort(key=_sort_key)
        except Exception:
            return value
        return (t.__name__, tuple(items))
    if t is list or t is tuple:
        copied = [_set_order_free(v, depth + 1) for v in value]
        if all(c is v for c, v in zip(copied, value, strict=True)):
            return value
        return copied if t is list else tuple(copied)
    if t is dict:
        pairs = [(_set_order_free(k, depth + 1), _set_order_free(v, depth + 1)) for k, v in value.items()]
        if all(pk is k and pv is v for (pk, pv), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    return value


def _sort_key(item: Any) -> bytes:
    return _fast_dumps(item, _CanonicalPickler)


# The shapes of plain arguments: not plain (0), plain with no object reached twice (1), plain with an object
# reached twice, which the pickle memo writes as a back-reference (2).
_UNSHARED, _SHARED = 1, 2


def _plain_shape(value: Any, seen: set[int], depth: int = 0) -> int:
    """Whether ``value`` is plain data (:func:`_is_plain`) and whether it reaches an object the pickle memo
    would write twice: a string or bytes of more than one character (shorter ones are the interpreter's
    singletons, shared in every copy), a list, dict or non-empty tuple. ``seen`` collects their ids."""
    t = type(value)
    if t is str or t is bytes:
        if len(value) > 1 or (t is str and value and ord(value) > 255):
            i = id(value)
            if i in seen:
                return _SHARED
            seen.add(i)
        return _UNSHARED
    if t in _PLAIN:
        return _UNSHARED
    if depth > 20:
        return 0
    if t is list or t is tuple or t is dict:
        if t is not tuple or value:
            i = id(value)
            if i in seen:
                return _SHARED
            seen.add(i)
        shape = _UNSHARED
        items = value
        if t is dict:
            for k in value:
                if type(k) is not str:
                    return 0
                shape = max(shape, _plain_shape(k, seen, depth + 1))
            items = value.values()
        for v in items:
            if type(v) in _ATOMS:
                continue
            found = _plain_shape(v, seen, depth + 1)
            if not found:
                return 0
            shape = max(shape, found)
        return shape
    return 0


# Sweeps and recoveries digest the same small argument lists over and over; remembering the digest of
# short inputs costs one dict lookup instead of a sha256. Room for the calls of a long agent: a sweep
# replays calls 0 .. c-1 in order for every c, and an LRU smaller than the calls misses on every one of
# them (5 000 calls against 4 096 entries did, P9b). At most 32 768 inputs of <= 512 bytes.
_CACHED_DIGEST_INPUT = 512


@functools.lru_cache(maxsize=32768)
def _short_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


_PLAIN = frozenset({str, int, float, bool, bytes, type(None)})
# Plain values the pickle memo never shares: nothing to track.
_ATOMS = frozenset({int, float, bool, type(None)})


def _is_plain(value: Any, depth: int = 0) -> bool:
    # Exact types only: a subclass (an IntEnum, a str subclass) may pickle differently under cloudpickle.
    # Loops rather than all(<genexpr>): this runs for every durable call's arguments and result.
    t = type(value)
    if t in _PLAIN:
        return True
    if depth > 20:
        return False
    if t is list or t is tuple:
        for v in value:  # noqa: SIM110 - a loop, not all(<genexpr>), on the hot path
            if type(v) not in _PLAIN and not _is_plain(v, depth + 1):
                return False
        return True
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or (type(v) not in _PLAIN and not _is_plain(v, depth + 1)):
                return False
        return True
    return False


def dumps(value: Any) -> bytes:
    """``cloudpickle.dumps(value)``, through the C pickler when the value is plain data, for which both
    produce the same bytes (protocol 5); cloudpickle's Python-level pickler is the hot path's largest cost."""
    if _is_plain(value):
        return pickle.dumps(value, protocol=5)
    data: bytes = cloudpickle.dumps(value)
    return data


class CallId(NamedTuple):
    """The idempotency identity of one durable call (IDN-5, IDN-6, IDN-9): the same on every recovery,
    because key, sequence number, action, the action's execution ordinal and call index are all replayed
    deterministically.

    ``execution`` is the ordinal (from 1) of the action's execution within the input (key, seq): an action
    run twice for one input (a tool loop, or an action triggered by several events) makes calls with
    distinct ids. The first execution is spelled ``key/seq/action/index`` and a later one
    ``key/seq/action#n/index`` (IDN-9).

    A named tuple (immutable, hashable) because one is built for every durable call (benchmark P4)."""

    key: str
    seq: int
    action: str
    call_index: int
    execution: int = 1

    def __str__(self) -> str:
        # Quoting keeps the parts separable whatever characters a business key contains ('#' included).
        action = quote(self.action, safe="")
        if self.execution != 1:
            action = f"{action}#{self.execution}"
        return f"{quote(self.key, safe='')}/{self.seq}/{action}/{self.call_index}"


class CallContext(NamedTuple):
    """What a running durable function may learn about itself (see :func:`current_call`).
    A named tuple, like :class:`CallId`."""

    call_id: CallId
    function_id: str
    args_digest: str
    attempt: int = 1

    @property
    def idempotency_key(self) -> str:
        return str(self.call_id)
