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
``NS:epoch``                    string  a random id (32 hex digits) set by the first operation of any store
==============================  ======  ==========================================================

Data loss is detected from the first write (spec FAIL-4, FAIL-6). A store object learns the epoch at its first
operation, and every script checks it before it reads or writes anything: a server that restarted without
persistence, or a flushed namespace, has lost the epoch key, and the next operation raises
:class:`~reference_runtime.errors.StoreDataLostError` instead of reading a miss (which would run completed
durable calls again) or writing into the emptied server. The recovery marker is ``{"writes": N, "epoch": E}``;
``rebuild_state`` checks the epoch this object knows and the markers' epochs and write counts, so a new store
object (a restart) handed the markers of a checkpoint detects the loss too. Redis keeps every state written
after a checkpoint, and state keys include the sequence number, so ``rebuild_state`` has nothing to restore: a
state written after the marker belongs to an input the restored runner processes again, and the STORE-4 rule
(a miss hides larger sequence numbers) removes any that diverged.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..errors import CorruptRecordError, Location, StoreDataLostError, StoreError, location
from ..limits import safe_repr
from ..records import ActionState, CallResult, StateRef
from .base import RecoveryMarker
from .native import decode_call_result, decode_state, encode_call_result, encode_state
from .redis_url import parse_redis_url
from .scheme import InspectedState

# Every script gets the epoch key as KEYS[1] and the epoch this store knows as ARGV[1], and refuses to touch
# anything when they differ: the data behind this store is not the data it wrote (FAIL-6).
_EPOCH_CHECK = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('DURABLE_LOST ' .. tostring(redis.call('GET', KEYS[1])))
end
"""

_PUT_STATE = (
    _EPOCH_CHECK
    + """
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[2], 'key', ARGV[2], 'seq', ARGV[3], 'action', ARGV[4], 'header', ARGV[5])
for i = 7, #ARGV do redis.call('RPUSH', KEYS[3], ARGV[i]) end
redis.call('ZADD', KEYS[4], tonumber(ARGV[3]), ARGV[6])
return redis.call('INCR', KEYS[5])
"""
)

# A hit returns {header, {call, ...}}; a miss drops the key's states with a larger sequence number
# (STORE-3) and returns false: one round trip either way. A state hash without its header, or call results
# without their state, is corrupt, not a miss: a miss would run the recorded calls again (STORE-9).
_GET = (
    _EPOCH_CHECK
    + """
local header = redis.call('HGET', KEYS[2], 'header')
if header then return {header, redis.call('LRANGE', KEYS[3], 0, -1)} end
if redis.call('EXISTS', KEYS[2]) == 1 then return redis.error_reply('DURABLE_CORRUPT the state has no header') end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return redis.error_reply('DURABLE_CORRUPT call results are stored without their state')
end
local removed = 0
for _, sk in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. ARGV[2], '+inf')) do
  redis.call('DEL', ARGV[3] .. 'state:' .. sk, ARGV[3] .. 'calls:' .. sk)
  redis.call('ZREM', KEYS[4], sk)
  removed = removed + 1
end
if removed > 0 then redis.call('INCR', KEYS[5]) end
return false
"""
)

_PUT_CALLS = (
    _EPOCH_CHECK
    + """
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local n = redis.call('LLEN', KEYS[3])
local index = tonumber(ARGV[2])
if index > n then return -2 - n end
for i = 3, #ARGV do
  local slot = index + i - 3
  if slot < n then redis.call('LSET', KEYS[3], slot, ARGV[i]) else redis.call('RPUSH', KEYS[3], ARGV[i]) end
end
return 0
"""
)

_TRUNCATE = (
    _EPOCH_CHECK
    + """
local keep = tonumber(ARGV[2])
if keep == 0 then redis.call('DEL', KEYS[2]) else redis.call('LTRIM', KEYS[2], 0, keep - 1) end
return redis.call('INCR', KEYS[3])
"""
)

_DROP = (
    _EPOCH_CHECK
    + """
local removed = 0
for _, sk in ipairs(redis.call(ARGV[2], KEYS[2], ARGV[3], ARGV[4])) do
  redis.call('DEL', ARGV[5] .. 'state:' .. sk, ARGV[5] .. 'calls:' .. sk)
  redis.call('ZREM', KEYS[2], sk)
  removed = removed + 1
end
if removed > 0 then redis.call('INCR', KEYS[3]) end
return removed
"""
)

# Sets the epoch if the namespace has none (a new store, or one whose data is gone) and returns it with the
# write counter: how a store object learns its epoch, and what a recovery marker holds.
_MARK = """
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}
"""
_EPOCH = re.compile(rb"[0-9a-f]{32}")


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
        self._marker = client.register_script(_MARK)
        self._epoch_key = f"{namespace}:epoch"
        self._writes_key = f"{namespace}:writes"
        #: The namespace's epoch as this store object first saw it; every script checks it (FAIL-6).
        self._epoch: str | None = None

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

    def _call(
        self,
        script: Any,
        keys: list[str],
        args: list[Any],
        what: str | Callable[[], str],
        loc: Callable[[], Location] | None = None,
    ) -> Any:
        """Run a registered script with the epoch key and the epoch this store knows in front of ``keys`` and
        ``args`` (every script refuses to run against a namespace whose epoch changed, FAIL-6). ``what`` names
        the operation in an error and ``loc`` its location; callables are only called on failure."""
        epoch = self._epoch if self._epoch is not None else self._adopt_epoch()
        try:
            return self._run(script, [self._epoch_key, *keys], [epoch, *args])
        except redis.RedisError as exc:
            label = what if isinstance(what, str) else what()
            reason = str(exc)
            if reason.startswith("DURABLE_LOST"):
                raise self._lost(f"{label}: the namespace's epoch is now {reason[13:]!r}") from None
            if reason.startswith("DURABLE_CORRUPT"):
                raise CorruptRecordError(reason[16:], loc() if loc is not None else None) from None
            raise StoreError(f"{label} failed on {self.url}: {exc}") from exc

    def _run(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        """One EVALSHA round trip (the script is loaded again if the server lost it). A dropped connection is
        retried once on a fresh one (every script is idempotent, so a retry after a lost reply writes nothing
        twice); a timeout is not retried (spec FAIL-2)."""
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
                raise

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

    def _lost(self, what: str) -> StoreDataLostError:
        return StoreDataLostError(
            f"Redis store {self.url} (namespace {self.namespace!r}) lost data it acknowledged: {what}; this "
            f"store wrote under epoch {self._epoch!r}. The server restarted without persistence or the namespace "
            "was flushed; going on would run completed durable calls again, so it is refused. Run Redis with "
            "appendonly yes and appendfsync always (docs/stores.md)."
        )

    def _bookkeeping(self, epoch: Any, writes: Any) -> tuple[str | None, int]:
        """The namespace's epoch and write counter as read from the server; anything else in those keys
        is a :class:`StoreError` naming the key (a namespace another program wrote to), never a raw
        ``UnicodeDecodeError`` or ``ValueError``."""
        if epoch is not None and not _EPOCH.fullmatch(bytes(epoch)):
            raise StoreError(
                f"Redis store {self.url}: {self._epoch_key} holds {safe_repr(bytes(epoch))}, not an epoch this "
                "store writes (32 hex digits): the namespace was written by something else"
            )
        text = bytes(writes).decode("ascii", "replace") if writes is not None else "0"
        if not (text.isascii() and text.isdigit() and len(text) <= 18):
            raise StoreError(
                f"Redis store {self.url}: {self.namespace}:writes holds {safe_repr(bytes(writes))}, not a write "
                "count: the namespace was written by something else"
            )
        return (bytes(epoch).decode("ascii") if epoch is not None else None), int(text)

    def _mark(self) -> tuple[str, int]:
        """Run ``_MARK`` (the epoch is set if the namespace has none): the epoch and the write counter."""
        try:
            found = self._run(self._marker, [self._epoch_key, self._writes_key], [uuid.uuid4().hex])
        except redis.RedisError as exc:
            raise StoreError(f"reading the epoch of {self.url} failed: {exc}") from exc
        epoch, writes = self._bookkeeping(*found)
        assert epoch is not None  # _MARK set it
        return epoch, writes

    def _adopt_epoch(self) -> str:
        """The store's first operation: learn the namespace's epoch (setting one if there is none)."""
        epoch, _ = self._mark()
        self._epoch = epoch
        return epoch

    def put(self, ref: StateRef, state: ActionState) -> None:
        header = encode_state(state, ref=ref)
        calls = [encode_call_result(r, ref, i) for i, r in enumerate(state.call_results)]
        self._call(
            self._put,
            [
                self._k("state", ref.state_key),
                self._k("calls", ref.state_key),
                self._k("bykey", ref.key),
                self._writes_key,
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
                self._writes_key,
            ],
            [ref.seq, f"{self.namespace}:"],
            f"get [{location(ref)}]",
            lambda: location(ref),
        )
        if not found:
            return None
        header, calls = found
        state = decode_state(bytes(header), location(ref))
        state.call_results = [decode_call_result(bytes(c), location(ref, i)) for i, c in enumerate(calls)]
        return state

    def put_call_results(self, ref: StateRef, index: int, results: Sequence[CallResult]) -> None:
        body = [encode_call_result(r, ref, index + i) for i, r in enumerate(results)]
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
            [self._k("calls", ref.state_key), self._writes_key],
            [index],
            f"truncate_call_results [{location(ref, index)}]",
        )

    def prune_state(self, key: str, seq: int) -> None:
        self._call(
            self._drop,
            [self._k("bykey", key), self._writes_key],
            ["ZRANGEBYSCORE", "-inf", seq, f"{self.namespace}:"],
            f"prune_state key={key!r}",
        )

    def get_recovery_marker(self) -> RecoveryMarker:
        epoch, writes = self._mark()
        if self._epoch is not None and epoch != self._epoch:
            raise self._lost(f"get_recovery_marker: the namespace's epoch is now {epoch!r}")
        self._epoch = epoch
        return {"writes": writes, "epoch": epoch}

    def rebuild_state(self, markers: Sequence[RecoveryMarker]) -> None:
        # Everything written after a marker is still in Redis (module docstring), if the data survived: the
        # epoch this object knows and the markers' epochs and write counts say whether it did (FAIL-4, FAIL-6).
        try:
            found = self.client.mget(self._epoch_key, self._writes_key)
        except redis.RedisError as exc:
            raise StoreError(f"rebuild_state failed on {self.url}: {exc}") from exc
        now_epoch, now_writes = self._bookkeeping(*found)
        if self._epoch is not None and now_epoch != self._epoch:
            raise self._lost(f"rebuild_state: the namespace's epoch is now {now_epoch!r}")
        for marker in markers:
            want = marker.get("epoch") if isinstance(marker, dict) else None
            writes = marker.get("writes", 0) if isinstance(marker, dict) else None
            if not (isinstance(want, str | None) and isinstance(writes, int)) or isinstance(writes, bool):
                raise StoreError(
                    f"rebuild_state on {self.url}: recovery marker {safe_repr(marker)} is not a Redis marker"
                )
            if (want is not None and want != now_epoch) or now_writes < writes:
                raise StoreDataLostError(
                    f"Redis store {self.url} (namespace {self.namespace!r}) lost data since the checkpoint: "
                    f"epoch {want!r} and {writes} writes were recorded, the server now has epoch "
                    f"{now_epoch!r} and {now_writes} writes. The server restarted without persistence or the "
                    "namespace was flushed; recovering would run completed durable calls again, so it is "
                    "refused. Run Redis with appendonly yes and appendfsync always (docs/stores.md)."
                )
        if self._epoch is None and now_epoch is not None:
            self._epoch = now_epoch

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
