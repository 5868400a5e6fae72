"""Stores that lose what they acknowledged, with real servers: a redis-server restarted without persistence,
a Tansu broker restarted empty, a topic deleted and created again. The loss is detected from the first write,
with or without a checkpoint, and nothing recorded runs again (spec FAIL-4, FAIL-6); corrupted bookkeeping is
a typed error (FAIL-7). The Kafka runs happen in a child process: librdkafka crashed the process when a topic
came back under a new id (docs/stores.md, "librdkafka and a recreated topic")."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reference_runtime import (
    CrashAt,
    FaultInjector,
    Phase,
    Runner,
)
from reference_runtime.errors import CorruptRecordError, StoreDataLostError, StoreError, StoreFailedError
from reference_runtime.stores.redis import RedisStore

from .redis_server import PrivateRedis
from .test_dead_servers import HOOK, RAN, Steps

ROOT = Path(__file__).resolve().parents[2]
INPUTS = [(f"k{i % 8}", i) for i in range(40)]


@pytest.fixture
def redis_server() -> Iterator[PrivateRedis]:
    try:
        server = PrivateRedis()
    except LookupError as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        HOOK.clear()
        server.stop()


def test_redis_restarted_between_a_crash_and_recovery_is_refused(redis_server: PrivateRedis) -> None:
    """FAIL-6: Redis restarted without persistence re-ran every recorded call silently when the run had no
    checkpoint yet (the default runner takes one at the end): recovery checked loss only against markers.
    The runner now takes the store's marker before its first write, and the store knows its epoch."""
    RAN.clear()
    store = RedisStore.from_url(redis_server.url, namespace=uuid.uuid4().hex)
    runner = Runner(Steps, store, injector=FaultInjector([CrashAt(Phase.AFTER_RECORD, key="k1", seq=3)]))
    runner.inputs.extend(INPUTS)
    with pytest.raises(BaseException, match="simulated crash"):
        runner.process()
    recorded = len(RAN)
    assert recorded > 20
    redis_server.restart()
    with pytest.raises(StoreDataLostError, match="appendonly yes"):
        runner.fail_over()
    # A new store object (a process restart) given the runner's start marker refuses too.
    reopened = RedisStore.from_url(redis_server.url, namespace=store.namespace)
    with pytest.raises(StoreDataLostError):
        reopened.rebuild_state(runner._start_markers or [])
    assert len(RAN) == recorded, "a recorded call ran again"


def test_redis_restarted_mid_run_stops_the_run_at_the_next_write(redis_server: PrivateRedis) -> None:
    """FAIL-6: a run whose Redis restarts empty under it stops at its next store operation, instead of
    writing into the emptied server (and reading misses where its records were)."""
    RAN.clear()
    store = RedisStore.from_url(redis_server.url, namespace=uuid.uuid4().hex)
    HOOK[:] = [redis_server.restart]  # during the call of input 3
    with pytest.raises(StoreFailedError) as info:
        Runner(Steps, store).run(INPUTS)
    assert isinstance(info.value.cause, StoreDataLostError)
    assert RAN[-1] == ("k3", 3), "the run went on after the server lost its data"
    assert not RedisStore.from_url(redis_server.url, namespace=store.namespace).client.keys(
        f"{store.namespace}:state:*"
    )


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("epoch", "é".encode(), "not an epoch this store writes"),
        ("epoch", b"not-hex", "not an epoch this store writes"),
        ("writes", b"many", "not a write count"),
    ],
)
def test_corrupt_bookkeeping_is_a_typed_error(real_redis: str, key: str, value: bytes, message: str) -> None:
    """FAIL-7: a non-ASCII epoch raised UnicodeDecodeError and a non-numeric write count ValueError, both past
    the fail-fast gate; now each is a StoreError naming the key, and a run stops with one StoreFailedError."""
    store = RedisStore.from_url(real_redis, namespace=uuid.uuid4().hex)
    Runner(Steps, store).run([("k", 1)])
    store.client.set(f"{store.namespace}:{key}", value)
    for operation in (store.get_recovery_marker, lambda: store.rebuild_state([]), store.reopen().get_recovery_marker):
        with pytest.raises(StoreError, match=message):
            operation()
    with pytest.raises(StoreFailedError, match=message):
        Runner(Steps, store.reopen()).run([("k", 1)])


def test_a_state_hash_without_its_header_is_corrupt_not_missing(real_redis: str) -> None:
    """FAIL-7, STORE-9: a state hash missing its header field read as "no state", so the recorded call ran
    again; it is a CorruptRecordError naming the state, and the call does not run."""
    RAN.clear()
    store = RedisStore.from_url(real_redis, namespace=uuid.uuid4().hex)
    crash = FaultInjector([CrashAt(Phase.AFTER_RECORD)])
    runner = Runner(Steps, store, injector=crash)
    runner.inputs.append(("k", 5))
    with pytest.raises(BaseException, match="simulated crash"):
        runner.process()
    [state] = store.client.keys(f"{store.namespace}:state:*")
    store.client.hdel(state, "header")
    runner.fail_over()
    with pytest.raises(CorruptRecordError, match="the state has no header") as info:
        runner.process()
    assert (info.value.key, info.value.seq, info.value.action) == ("k", 0, "work")
    assert RAN == [("k", 5)], "the recorded call ran again"


# -- Kafka, in a child process --------------------------------------------------------------------------
CHILD = """
import sys, time, uuid
from reference_runtime import Runner, CrashAt, FaultInjector, Phase
from reference_runtime.stores.kafka import KafkaStore
from reference_runtime.stores.kafka_topics import delete_topics
from tests.stores.tansu import start_tansu
from tests.stores.test_data_loss import INPUTS
from tests.stores.test_dead_servers import HOOK, RAN, Steps

mode = sys.argv[1]
brokers = [start_tansu()]
bootstrap = brokers[0][0]
topic = f"durable-{uuid.uuid4().hex[:16]}"
try:
    store = KafkaStore(bootstrap, topic, timeout=5.0)
    if mode == "segfault":
        # issue 28: rebuild_state on the same store object after the topic came back under a new id crashed
        # inside librdkafka's metadata cache (what Runner.fail_over() does).
        from reference_runtime.records import ActionState
        from conformance.store_suite import ref
        store.put(ref("k", 0), ActionState())
        marker = store.get_recovery_marker()
        delete_topics(bootstrap, [topic])
        time.sleep(0.5)
        KafkaStore(bootstrap, topic, timeout=5.0).close()
        try:
            store.rebuild_state([marker])
            print("rebuilt")
        except Exception as exc:
            print("refused", type(exc).__name__)
    elif mode == "recreate":
        runner = Runner(Steps, store, injector=FaultInjector([CrashAt(Phase.AFTER_RECORD, key="k1", seq=3)]))
        runner.inputs.extend(INPUTS)
        try:
            runner.process()
        except BaseException as exc:
            print("crashed", type(exc).__name__)
        recorded = len(RAN)
        delete_topics(bootstrap, [topic])
        time.sleep(0.5)
        KafkaStore(bootstrap, topic, timeout=5.0).close()
        try:
            runner.fail_over()
            runner.run()
            print("recovered re-ran", len(RAN) - recorded)
        except Exception as exc:
            print("refused", type(exc).__name__, "re-ran", len(RAN) - recorded)
    else:  # the broker restarts without its data mid-run, on the same port
        port = int(bootstrap.rsplit(":", 1)[1])

        def restart():
            brokers[-1][1]()
            brokers.append(start_tansu(port))

        HOOK.append(restart)  # during the call of input 3
        try:
            Runner(Steps, store).run(INPUTS)
            print("finished ran", len(RAN))
        except Exception as exc:
            print("refused", type(exc).__name__, type(getattr(exc, "cause", None)).__name__, "ran", len(RAN))
finally:
    for broker in brokers:
        broker[1]()
"""


@pytest.fixture
def kafka_child() -> Callable[[str], subprocess.CompletedProcess[str]]:
    """Runs the child above in one of its modes; it starts (and stops) a Tansu broker of its own."""
    from .tansu import tansu_binary

    if tansu_binary() is None:
        pytest.skip("Tansu broker unavailable")

    def run(mode: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        # A session of its own: a broker left behind by a child that died is killed with the group.
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, mode],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = child.communicate(timeout=300)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
        done = subprocess.CompletedProcess(child.args, child.returncode, out, err)
        assert done.returncode == 0, f"the child died ({done.returncode}): {done.stdout}{done.stderr[-3000:]}"
        return done

    return run


def test_a_recreated_topic_does_not_crash_the_process(kafka_child: Callable[[str], Any]) -> None:
    """FAIL-6: rebuild_state after the topic was deleted and created again made the process segfault in
    librdkafka's metadata cache. The store sees the topic id change, makes its clients anew and refuses."""
    done = kafka_child("segfault")
    assert done.stdout.split()[-2:] == ["refused", "StoreDataLostError"], done.stdout + done.stderr[-2000:]


def test_a_topic_recreated_before_recovery_is_refused(kafka_child: Callable[[str], Any]) -> None:
    """FAIL-6: recovery from a recreated, empty topic re-ran recorded calls (132 of 500 in issue 28); without
    a checkpoint it was not even checked. It is refused and nothing runs again."""
    done = kafka_child("recreate")
    words = done.stdout.split()
    assert words[-6:] == ["crashed", "SimulatedCrash", "refused", "StoreDataLostError", "re-ran", "0"], (
        done.stdout + done.stderr[-2000:]
    )


def test_a_broker_restarted_empty_mid_run_stops_the_run(kafka_child: Callable[[str], Any]) -> None:
    """FAIL-6: under a run whose broker restarted without its data, the run kept writing to the topic created
    again. The first write that lands below an offset the store saw acknowledged stops it."""
    done = kafka_child("restart")
    words = done.stdout.split()
    assert words[-5:-1] == ["refused", "StoreFailedError", "StoreDataLostError", "ran"], (
        done.stdout + done.stderr[-2000:]
    )
    assert int(words[-1]) < len(INPUTS), "the run wrote every input to the emptied broker"


# -- a store used across real process restarts keeps what the next process needs (RUN-18) ---------------
PRUNE_CHILD = """
import os, signal, sys
from pathlib import Path
from reference_runtime import Agent, InputEvent, OutputEvent, Runner, action
from reference_runtime.stores.forwarding import ForwardingStore
from reference_runtime.stores.sqlite import SqliteStore

db, effects, kill = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "kill"
INPUTS = [(f"k{i % 8}", i) for i in range(40)]


def step(key, n):
    with effects.open("a") as f:
        f.write(f"{key} {n}\\n")
    return n


class Steps(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(step, ctx.key, event.attributes["input"])))


class KilledInPrune(ForwardingStore):
    def prune_state(self, key, seq):
        super().prune_state(key, seq)
        os.kill(os.getpid(), signal.SIGKILL)  # the end-of-run prune, cut short


store = SqliteStore(db)
Runner(Steps, KilledInPrune(store) if kill else store).run(INPUTS)
if kill:
    os.kill(os.getpid(), signal.SIGKILL)  # killed as the run ends, before the caller saw its result
print("done")
"""


def test_a_process_killed_at_the_end_of_its_run_leaves_what_the_next_needs(tmp_path: Path) -> None:
    """RUN-18: SIGKILL during the end-of-run prune, then a fresh process re-feeding the same inputs, re-ran
    the calls of every key already pruned (5 480 over 113 kills in issue 28): the prune relied on a checkpoint
    that only existed in memory. A store whose data outlives the process is not pruned by default, so the
    fresh process replays every call."""
    db, effects = tmp_path / "state.db", tmp_path / "effects.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def child(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", PRUNE_CHILD, str(db), str(effects), mode],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    killed = child("kill")
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr[-2000:]
    first = effects.read_text().splitlines()
    assert len(first) == len(INPUTS)
    again = child("again")
    assert again.returncode == 0 and again.stdout.strip() == "done", again.stderr[-2000:]
    assert effects.read_text().splitlines() == first, "the fresh process ran recorded calls again"


def test_which_stores_a_checkpoint_prunes(tmp_path: Path) -> None:
    """RUN-18, RUN-8: by default a checkpoint prunes only a store whose data ends with the process (through
    wrappers too); prune=True prunes any store, prune=False none; anything else is a ConfigError."""
    from reference_runtime import ConfigError
    from reference_runtime.stores.forwarding import ForwardingStore
    from reference_runtime.stores.memory import InMemoryStore
    from reference_runtime.stores.sqlite import SqliteStore

    def left(store: Any, **options: Any) -> int:
        Runner(Steps, store, **options).run([("a", 1), ("b", 2), ("a", 3)])
        inner: Any = store.inner if isinstance(store, ForwardingStore) else store
        if isinstance(inner, InMemoryStore):
            return len(inner)
        (count,) = inner._conn.execute("SELECT COUNT(*) FROM action_states").fetchone()
        return int(count)

    assert left(InMemoryStore()) == 0
    assert left(ForwardingStore(InMemoryStore())) == 0
    assert left(InMemoryStore(), prune=False) == 3
    assert left(SqliteStore(tmp_path / "a.db")) == 3
    assert left(SqliteStore(tmp_path / "b.db"), prune=True) == 0
    with pytest.raises(ConfigError, match="prune="):
        Runner(Steps, prune="yes")  # type: ignore[arg-type]
