"""Redis store (spec KSTORE-2): every mutation is one Lua script, so it is atomic on the server.

Key layout, under a namespace ``NS`` (default ``durable``):

==============================  ======  ==========================================================
key                             type    holds
==============================  ======  ==========================================================
``NS:state:{state_key}``        hash    ``key`` (business key), ``seq``, ``action``, ``header``
                                        (the state without call results, native record bytes)
``NS:calls:{state_key}``        list    one encoded call result per call index
``NS:bykey:{business_key}``     zset    state keys of a business key, scored by sequence number
``NS:writes``                   string  a counter incremented by every state write, truncation and drop
``NS:epoch``                    string  a random id set once, when the first recovery marker is taken
==============================  ======  ==========================================================

The recovery marker is ``{"writes": N, "epoch": E}``. Redis keeps every state written after a checkpoint, and
state keys include the sequence number, so ``rebuild_state`` has nothing to restore: a state written after the
marker belongs to an input the restored runner processes again, and the STORE-4 rule (a miss hides larger
sequence numbers) removes any that diverged. It does check that the data is still there (spec FAIL-4): a
server that restarted without persistence, or a flushed namespace, has lost the epoch key or counts fewer
writes than the marker, and recovering from it would run completed durable calls again, so it refuses.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..errors import Location, StoreDataLostError, StoreError, location
from ..records import ActionState, CallResult, StateRef
from .base import RecoveryMarker
from .native import decode_call_result, decode_state, encode_call_result, encode_state
from .redis_url import parse_redis_url
from .scheme import InspectedState

_PUT_STATE = """
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[1], 'key', ARGV[1], 'seq', ARGV[2], 'action', ARGV[3], 'header', ARGV[4])
for i = 6, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('ZADD', KEYS[3], tonumber(ARGV[2]), ARGV[5])
return redis.call('INCR', KEYS[4])
"""

# A hit returns {header, {call, ...}}; a miss drops the key's states with a larger sequence number
# (STORE-3) and returns false: one round trip either way.
_GET = """
local header = redis.call('HGET', KEYS[1], 'header')
if header then return {header, redis.call('LRANGE', KEYS[2], 0, -1)} end
local removed = 0
for _, sk in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[1], '+inf')) do
  redis.call('DEL', ARGV[2] .. 'state:' .. sk, ARGV[2] .. 'calls:' .. sk)
  redis.call('ZREM', KEYS[3], sk)
  removed = removed + 1
end
if removed > 0 then redis.call('INCR', KEYS[4]) end
return false
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
return 0
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


_MARK = """
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}
"""


class RedisStore:
    """An :class:`~reference_runtime.stores.base.ActionStateStore` in Redis (layout in the module docstring)."""

    def __init__(self, client: redis.Redis[bytes], *, namespace: str = "durable", url: str | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.url = url or f"redis (namespace {namespace})"
        # Scripts go over one connection of the store's own, under a lock: the client's per-command
        # machinery (pool checkout, retries, instrumentation) costs more than the round trip (COST-3).
        self._conn: Any = None
        self._conn_lock = threading.Lock()
        self._put = client.register_script(_PUT_STATE)
        self._get = client.register_script(_GET)
        self._put_calls = client.register_script(_PUT_CALLS)
        self._truncate = client.register_script(_TRUNCATE)
        self._drop = client.register_script(_DROP)
        self._mark = client.register_script(_MARK)

    @classmethod
    def from_url(cls, url: str, *, timeout: float = 5.0, namespace: str = "durable") -> RedisStore:
        """Connect to ``redis://HOST:PORT/DB``; fails within ``timeout`` seconds naming the URL and cause.

        Every later operation on a stalled server fails within ``timeout`` (spec FAIL-2): a timeout is not
        retried, a dropped connection is retried once on a fresh one (a dead server refuses it at once). The
        client's default retries multiply to minutes."""
        parsed = parse_redis_url(url)
        client = redis.Redis(
            host=parsed.host,
            port=parsed.port,
            db=parsed.db,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
        )
        try:
            client.ping()
        except redis.RedisError as exc:
            client.close()
            raise StoreError(f"cannot reach Redis store {url}: {exc}") from exc
        return cls(client, namespace=namespace, url=url)

    def reopen(self) -> RedisStore:
        """A new store object over the same server and namespace (a process restart)."""
        pool = self.client.connection_pool
        client = redis.Redis(
            connection_pool=type(pool)(connection_class=pool.connection_class, **pool.connection_kwargs)
        )
        return RedisStore(client, namespace=self.namespace, url=self.url)

    def _k(self, kind: str, name: str) -> str:
        return f"{self.namespace}:{kind}:{name}"

    def _call(self, script: Any, keys: list[str], args: list[Any], what: str | Callable[[], str]) -> Any:
        """Run a registered script in one round trip (EVALSHA; the script is loaded again if the server
        lost it). ``what`` names the operation in an error; a callable is only formatted on failure.

        A dropped connection is retried once on a fresh one (every script is idempotent, so a retry after a
        lost reply writes nothing twice); a timeout is not retried (spec FAIL-2)."""
        with self._conn_lock:
            try:
                try:
                    return self._evalsha(script, keys, args)
                except redis.ConnectionError:
                    self._drop_connection()
                    return self._evalsha(script, keys, args)
            except redis.RedisError as exc:
                if not isinstance(exc, redis.ResponseError):
                    self._drop_connection()  # a broken or stalled socket: the next call connects again
                label = what if isinstance(what, str) else what()
                raise StoreError(f"{label} failed on {self.url}: {exc}") from exc

    def _evalsha(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        conn = self._conn
        if conn is None:
            conn = self._conn = self.client.connection_pool.make_connection()
        try:
            conn.send_command("EVALSHA", script.sha, len(keys), *keys, *args)
            return conn.read_response()
        except redis.exceptions.NoScriptError:
            conn.send_command("SCRIPT", "LOAD", script.script)
            conn.read_response()
            conn.send_command("EVALSHA", script.sha, len(keys), *keys, *args)
            return conn.read_response()

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.disconnect()
            self._conn = None

    def put(self, ref: StateRef, state: ActionState) -> None:
        header = encode_state(state)
        calls = [encode_call_result(r) for r in state.call_results]
        self._call(
            self._put,
            [
                self._k("state", ref.state_key),
                self._k("calls", ref.state_key),
                self._k("bykey", ref.key),
                f"{self.namespace}:writes",
            ],
            [ref.key, ref.seq, ref.action.name, header, ref.state_key, *calls],
            f"put [{location(ref)}]",
        )

    def get(self, ref: StateRef) -> ActionState | None:
        found = self._call(
            self._get,
            [
                self._k("state", ref.state_key),
                self._k("calls", ref.state_key),
                self._k("bykey", ref.key),
                f"{self.namespace}:writes",
            ],
            [ref.seq, f"{self.namespace}:"],
            f"get [{location(ref)}]",
        )
        if not found:
            return None
        header, calls = found
        state = decode_state(bytes(header), location(ref))
        state.call_results = [decode_call_result(bytes(c), location(ref, i)) for i, c in enumerate(calls)]
        return state

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        body = [encode_call_result(r) for r in results]
        # One round trip; the write counter is left alone (it only has to move when action states do).
        sk = ref.state_key
        out = self._call(
            self._put_calls,
            [f"{self.namespace}:state:{sk}", f"{self.namespace}:calls:{sk}"],
            [index, *body],
            lambda: f"put_call_results [{location(ref, index)}]",
        )
        if out == -1:
            raise StoreError(f"no action state to add call results to [{location(ref, index)}]")
        if out < -1:
            raise StoreError(f"call index {index} leaves a gap after {-2 - out} records [{location(ref, index)}]")

    def truncate_call_results(self, ref: StateRef, index: int) -> None:
        self._call(
            self._truncate,
            [self._k("calls", ref.state_key), f"{self.namespace}:writes"],
            [index],
            f"truncate_call_results [{location(ref, index)}]",
        )

    def prune_state(self, key: str, seq: int) -> None:
        self._call(
            self._drop,
            [self._k("bykey", key), f"{self.namespace}:writes"],
            ["ZRANGEBYSCORE", "-inf", seq, f"{self.namespace}:"],
            f"prune_state key={key!r}",
        )

    def get_recovery_marker(self) -> RecoveryMarker:
        epoch, writes = self._call(
            self._mark,
            [f"{self.namespace}:epoch", f"{self.namespace}:writes"],
            [uuid.uuid4().hex],
            "get_recovery_marker",
        )
        return {"writes": int(writes or 0), "epoch": bytes(epoch).decode("ascii")}

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        # Everything written after a marker is still in Redis (module docstring), if the data survived.
        if not markers:
            return
        try:
            epoch, writes = self.client.mget(f"{self.namespace}:epoch", f"{self.namespace}:writes")
        except redis.RedisError as exc:
            raise StoreError(f"rebuild_state failed on {self.url}: {exc}") from exc
        now_epoch = bytes(epoch).decode("ascii", "replace") if epoch is not None else None
        now_writes = int(writes or 0)
        for marker in markers:
            if not isinstance(marker, dict):
                raise StoreError(f"rebuild_state on {self.url}: recovery marker {marker!r} is not a Redis marker")
            want = marker.get("epoch")
            if (want is not None and want != now_epoch) or now_writes < int(marker.get("writes", 0)):
                raise StoreDataLostError(
                    f"Redis store {self.url} (namespace {self.namespace!r}) lost data since the checkpoint: "
                    f"epoch {want!r} and {marker.get('writes')} writes were recorded, the server now has epoch "
                    f"{now_epoch!r} and {now_writes} writes. The server restarted without persistence or the "
                    "namespace was flushed; recovering would run completed durable calls again, so it is "
                    "refused. Run Redis with appendonly yes and appendfsync always (docs/stores.md)."
                )

    def close(self) -> None:
        with self._conn_lock:
            if self._conn is not None:
                self._conn.disconnect()
                self._conn = None
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


def read_states(url: str, namespace: str, timeout: float) -> Iterator[InspectedState]:
    """Every state of ``namespace`` on the server ``url`` names, read with SCAN, HGETALL and LRANGE only:
    nothing is written."""
    store = RedisStore.from_url(url, timeout=timeout, namespace=namespace)
    try:
        prefix = f"{namespace}:state:"
        for raw in sorted(store.client.scan_iter(match=f"{prefix}*")):
            sk = raw.decode("utf-8", "replace")[len(prefix) :]
            fields = store.client.hgetall(raw)
            bodies = store.client.lrange(f"{namespace}:calls:{sk}", 0, -1)
            key = fields.get(b"key", b"").decode("utf-8", "replace")
            seq_text = fields.get(b"seq", b"").decode("ascii", "replace")
            action = fields.get(b"action", b"").decode("utf-8", "replace")
            seq = int(seq_text) if seq_text.lstrip("-").isdigit() else None
            loc = Location(key, seq, action)

            def decode(
                header: bytes = fields.get(b"header", b""), bodies: list[bytes] = bodies, loc: Location = loc
            ) -> tuple[ActionState, str]:
                state = decode_state(header, loc)
                state.call_results = [
                    decode_call_result(b, Location(loc.key, loc.seq, loc.action, i)) for i, b in enumerate(bodies)
                ]
                return state, "native"

            yield sk, key, seq, action, decode
    finally:
        store.client.close()
