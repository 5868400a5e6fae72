"""Redis store (spec KSTORE-2): every mutation is one Lua script, so it is atomic on the server.

Key layout, under a namespace ``NS`` (default ``durable``):

==============================  ======  ==========================================================
key                             type    holds
==============================  ======  ==========================================================
``NS:state:{state_key}``        hash    ``key`` (business key), ``seq``, ``action``, ``header``
                                        (the state without call results, native record bytes)
``NS:calls:{state_key}``        list    one encoded call result per call index
``NS:bykey:{business_key}``     zset    state keys of a business key, scored by sequence number
``NS:writes``                   string  a counter incremented by every write
==============================  ======  ==========================================================

The recovery marker is ``{"writes": N}``. Redis keeps every state written after a checkpoint, and state keys
include the sequence number, so ``rebuild_state`` has nothing to restore: a state written after the marker
belongs to an input the restored runner processes again, and the STORE-4 rule (a miss hides larger sequence
numbers) removes any that diverged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from ..errors import Location, StoreError, StoreUrlError
from ..records import ActionState, CallResult, StateRef
from .base import RecoveryMarker
from .native import decode_call_result, decode_state, encode_call_result, encode_state

_PUT_STATE = """
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[1], 'key', ARGV[1], 'seq', ARGV[2], 'action', ARGV[3], 'header', ARGV[4])
for i = 6, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('ZADD', KEYS[3], tonumber(ARGV[2]), ARGV[5])
return redis.call('INCR', KEYS[4])
"""

_PUT_CALLS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local n = redis.call('LLEN', KEYS[2])
local index = tonumber(ARGV[1])
if index > n then return -2 - n end
for i = 2, #ARGV do
  local slot = index + i - 2
  if slot < n then redis.call('LSET', KEYS[2], slot, ARGV[i]) else redis.call('RPUSH', KEYS[2], ARGV[i]) end
end
return redis.call('INCR', KEYS[3])
"""

_TRUNCATE = """
local keep = tonumber(ARGV[1])
if keep == 0 then redis.call('DEL', KEYS[1]) else redis.call('LTRIM', KEYS[1], 0, keep - 1) end
return redis.call('INCR', KEYS[2])
"""

_DROP = """
local removed = 0
for _, sk in ipairs(redis.call(ARGV[1], KEYS[1], ARGV[2], ARGV[3])) do
  redis.call('DEL', ARGV[4] .. 'state:' .. sk, ARGV[4] .. 'calls:' .. sk)
  redis.call('ZREM', KEYS[1], sk)
  removed = removed + 1
end
if removed > 0 then redis.call('INCR', KEYS[2]) end
return removed
"""


def _loc(ref: StateRef, index: int | None = None) -> Location:
    return Location(ref.key, ref.seq, ref.action.name, index)


class RedisStore:
    """An :class:`~reference_runtime.stores.base.ActionStateStore` in Redis (layout in the module docstring)."""

    def __init__(self, client: redis.Redis[bytes], *, namespace: str = "durable", url: str | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.url = url or f"redis (namespace {namespace})"
        self._put = client.register_script(_PUT_STATE)
        self._put_calls = client.register_script(_PUT_CALLS)
        self._truncate = client.register_script(_TRUNCATE)
        self._drop = client.register_script(_DROP)

    @classmethod
    def from_url(cls, url: str, *, timeout: float = 5.0, namespace: str = "durable") -> RedisStore:
        """Connect to ``redis://HOST:PORT/DB``; fails within ``timeout`` seconds naming the URL and cause."""
        from .urls import parse_store_url

        parsed = parse_store_url(url)
        if parsed.scheme != "redis":
            raise StoreUrlError(f"store URL {url!r}: expected redis://HOST:PORT/DB")
        client = redis.Redis(host=parsed.host, port=parsed.port, db=parsed.db, socket_timeout=timeout,
                             socket_connect_timeout=timeout)
        try:
            client.ping()
        except redis.RedisError as exc:
            client.close()
            raise StoreError(f"cannot reach Redis store {url}: {exc}") from exc
        return cls(client, namespace=namespace, url=url)

    def reopen(self) -> RedisStore:
        """A new store object over the same server and namespace (a process restart)."""
        pool = self.client.connection_pool
        client = redis.Redis(connection_pool=type(pool)(connection_class=pool.connection_class,
                                                        **pool.connection_kwargs))
        return RedisStore(client, namespace=self.namespace, url=self.url)

    def _k(self, kind: str, name: str) -> str:
        return f"{self.namespace}:{kind}:{name}"

    def _call(self, script: Any, keys: list[str], args: list[Any], what: str) -> Any:
        try:
            return script(keys=keys, args=args)
        except redis.RedisError as exc:
            raise StoreError(f"{what} failed on {self.url}: {exc}") from exc

    def put(self, ref: StateRef, state: ActionState) -> None:
        header = encode_state(state)
        calls = [encode_call_result(r) for r in state.call_results]
        self._call(self._put, [self._k("state", ref.state_key), self._k("calls", ref.state_key),
                               self._k("bykey", ref.key), f"{self.namespace}:writes"],
                   [ref.key, ref.seq, ref.action.name, header, ref.state_key, *calls], f"put [{_loc(ref)}]")

    def get(self, ref: StateRef) -> ActionState | None:
        try:
            pipe = self.client.pipeline(transaction=True)
            pipe.hget(self._k("state", ref.state_key), "header")
            pipe.lrange(self._k("calls", ref.state_key), 0, -1)
            header, calls = pipe.execute()
        except redis.RedisError as exc:
            raise StoreError(f"get failed on {self.url}: {exc} [{_loc(ref)}]") from exc
        if header is None:
            self._call(self._drop, [self._k("bykey", ref.key), f"{self.namespace}:writes"],
                       ["ZRANGEBYSCORE", f"({ref.seq}", "+inf", f"{self.namespace}:"], f"get [{_loc(ref)}]")
            return None
        state = decode_state(bytes(header), _loc(ref))
        state.call_results = [decode_call_result(bytes(c), _loc(ref, i)) for i, c in enumerate(calls)]
        return state

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        body = [encode_call_result(r) for r in results]
        out = self._call(self._put_calls, [self._k("state", ref.state_key), self._k("calls", ref.state_key),
                                           f"{self.namespace}:writes"], [index, *body],
                         f"put_call_results [{_loc(ref, index)}]")
        if out == -1:
            raise StoreError(f"no action state to add call results to [{_loc(ref, index)}]")
        if out < -1:
            raise StoreError(f"call index {index} leaves a gap after {-2 - out} records [{_loc(ref, index)}]")

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self._call(self._truncate, [self._k("calls", ref.state_key), f"{self.namespace}:writes"], [index],
                   f"truncate_call_results [{_loc(ref, index)}]")

    def prune_state(self, key: str, seq: int) -> None:
        self._call(self._drop, [self._k("bykey", key), f"{self.namespace}:writes"],
                   ["ZRANGEBYSCORE", "-inf", seq, f"{self.namespace}:"], f"prune_state key={key!r}")

    def get_recovery_marker(self) -> RecoveryMarker:
        try:
            return {"writes": int(self.client.get(f"{self.namespace}:writes") or 0)}
        except redis.RedisError as exc:
            raise StoreError(f"get_recovery_marker failed on {self.url}: {exc}") from exc

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        return None  # see the module docstring: everything written after a marker is still in Redis

    def close(self) -> None:
        self.client.close()

    def destroy(self) -> None:
        """Delete every key of this store's namespace and close it: what a test run leaves behind on a
        shared server. Works on a closed store too: it deletes through a new client."""
        self.close()
        client = self.reopen().client
        try:
            delete_namespaces(client, [self.namespace], self.url)
        finally:
            client.close()


def delete_namespaces(client: redis.Redis[bytes], namespaces: Sequence[str], url: str) -> None:
    """Delete every key of each namespace (``NS:*``) through ``client``; ``url`` names the server in
    errors."""
    try:
        for namespace in namespaces:
            batch: list[bytes] = []
            for key in client.scan_iter(match=f"{namespace}:*", count=500):
                batch.append(key)
                if len(batch) >= 500:
                    client.delete(*batch)
                    batch.clear()
            if batch:
                client.delete(*batch)
    except redis.RedisError as exc:
        raise StoreError(f"cannot delete the keys of {url} (namespaces {list(namespaces)}): {exc}") from exc

