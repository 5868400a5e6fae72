"""``durable inspect URL``: what a store holds, read-only, for every built-in store (INS-*)."""

from __future__ import annotations

import json
import pickle
import uuid
from pathlib import Path
from typing import Any

import pytest

from conformance.store_suite import OTHER, ref
from pytest_durable.cli import main as durable
from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.events import OutputEvent
from reference_runtime.records import ActionState, CallResult, MemoryUpdate
from reference_runtime.stores.base import ActionStateStore
from reference_runtime.stores.sqlite import SqliteStore

CODEC = CloudpickleCodec()
MARKER = Path("/nonexistent")


class Boom:
    """A pickle that would run ``Path.touch`` on load: the restricted loader must refuse it."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (Path.touch, (self.target,))


def fill(store: ActionStateStore, evil: Path) -> None:
    """One in-progress state with a call of each kind, one completed state, one state of another key."""
    r = ref("order-1", 0)
    store.put(
        r,
        ActionState(
            task_event=r.event,
            call_results=[
                CallResult.succeeded("shop.charge", "4f178445086a4b93", CODEC.encode_result({"receipt": 30})),
                CallResult.failed("shop.notify", "f744dd20f806e514", CODEC.encode_exception(ValueError("mail down"))),
                CallResult.succeeded("shop.evil", "0000000000000000", pickle.dumps(Boom(evil))),
                CallResult.pending("shop.refund", "915fcb468add33e3"),
            ],
        ),
    )
    done = ActionState(
        task_event=ref("order-1", 1).event,
        short_term_memory_updates=[MemoryUpdate("n", 2), MemoryUpdate("cart", None, True)],
        output_events=[OutputEvent("charged 30")],
    )
    done.mark_completed()
    store.put(ref("order-1", 1, OTHER), done)
    store.put(ref("order-2", 0), ActionState(task_event=ref("order-2", 0).event))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = durable(["inspect", *args])
    out, err = capsys.readouterr()
    return code, out, err


def check_table(out: str) -> None:
    assert "3 action states" in out
    assert "key 'order-1'  seq 0  action work  in progress" in out
    assert "call 0     shop.charge  4f178445086a4b93  SUCCEEDED  -> {'receipt': 30}" in out
    assert "call 1     shop.notify  f744dd20f806e514  FAILED  raised ValueError: mail down" in out
    assert "call 2     shop.evil  0000000000000000  SUCCEEDED  undecodable: payload refers to pathlib" in out
    assert "[key='order-1', seq=0, action='work', call_index=2]" in out
    assert "call 3     shop.refund  915fcb468add33e3  PENDING" in out
    assert "key 'order-1'  seq 1  action other  completed" in out
    assert "memory     n = 2" in out and "memory     cart = new object" in out
    assert 'output     _output_event {"output": "charged 30"}' in out


def test_sqlite_store_table_json_and_key_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-1, INS-2, INS-3, INS-4: per state and call the store's content; results decoded by the restricted
    loader only (the evil payload is reported, not run); --json and --key; exit 1 when a record is
    undecodable."""
    evil = tmp_path / "pwned"
    store = SqliteStore(tmp_path / "s.db")
    fill(store, evil)
    store.close()
    url = f"sqlite:{tmp_path / 's.db'}"
    code, out, err = run(capsys, url)
    assert code == 1 and err == ""
    check_table(out)
    assert not evil.exists()
    code, out, _ = run(capsys, url, "--json", "--key", "order-1")
    states = json.loads(out)
    assert [(s["key"], s["seq"], s["action"]) for s in states] == [("order-1", 0, "work"), ("order-1", 1, "other")]
    calls = states[0]["calls"]
    assert [(c["index"], c["status"]) for c in calls] == [
        (0, "SUCCEEDED"),
        (1, "FAILED"),
        (2, "SUCCEEDED"),
        (3, "PENDING"),
    ]
    assert calls[1]["exception"] == "ValueError: mail down" and calls[2]["decode_error"]
    assert states[1]["short_term_memory"] == [
        {"path": "n", "value": 2},
        {"path": "cart", "value": None, "new_object": True},
    ]
    assert not evil.exists()


def test_inspect_never_writes_to_a_sqlite_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-5: the store file is byte-identical after inspect."""
    store = SqliteStore(tmp_path / "s.db")
    fill(store, tmp_path / "pwned")
    store.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    run(capsys, f"sqlite:{tmp_path / 's.db'}")
    run(capsys, f"sqlite:{tmp_path / 's.db'}", "--json")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in before} == before


def test_a_corrupt_record_is_reported_with_its_location(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-4: an unreadable record is one line naming key, seq and action; the others still print."""
    store = SqliteStore(tmp_path / "s.db")
    fill(store, tmp_path / "pwned")
    store._conn.execute("UPDATE action_states SET header = ? WHERE business_key = 'order-2'", (b"{oops",))
    store.close()
    code, out, err = run(capsys, f"sqlite:{tmp_path / 's.db'}")
    assert code == 1 and "Traceback" not in out + err
    assert "unreadable: action state is not JSON" in out and "[key='order-2', seq=0, action='work']" in out
    assert "shop.charge" in out


def test_memory_and_missing_stores_are_refused_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-6: stores that cannot be inspected exit 2 with one line naming why."""
    code, _, err = run(capsys, "memory:")
    assert code == 2 and "memory: lives inside the process" in err
    code, _, err = run(capsys, f"sqlite:{tmp_path / 'missing.db'}")
    assert code == 2 and "no such file" in err and not (tmp_path / "missing.db").exists()
    code, _, err = run(capsys, "ftp://x")
    assert code == 2 and "unknown scheme" in err


def test_redis_store(real_redis: str, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-1, INS-5: a Redis namespace prints the same, and no key changes."""
    from reference_runtime.stores.redis import RedisStore

    namespace = f"inspect-{uuid.uuid4().hex[:8]}"
    store = RedisStore.from_url(real_redis, namespace=namespace)
    try:
        fill(store, Path("/tmp") / f"pwned-{namespace}")
        keys = sorted(store.client.scan_iter(match=f"{namespace}:*"))
        before = {k: store.client.dump(k) for k in keys}
        code, out, _ = run(capsys, real_redis, "--namespace", namespace)
        assert code == 1
        check_table(out)
        assert {k: store.client.dump(k) for k in sorted(store.client.scan_iter(match=f"{namespace}:*"))} == before
    finally:
        store.client.close()


@pytest.mark.parametrize("fmt", ["native", "flink-agents"])
def test_kafka_store_both_formats(tansu: str, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-1, INS-5: both Kafka formats print the same; the topic's records and end offsets are unchanged."""
    from reference_runtime.stores.kafka import KafkaStore
    from reference_runtime.stores.kafka_flink import FlinkAgentsKafkaStore
    from tests.stores.test_kafka_store import read_topic

    topic = f"inspect-{uuid.uuid4().hex[:12]}"
    store = (KafkaStore if fmt == "native" else FlinkAgentsKafkaStore)(tansu, topic)
    try:
        fill(store, Path("/tmp") / f"pwned-{topic}")
        before = read_topic(tansu, topic)
        url = f"kafka://{tansu}/{topic}" + ("?format=flink-agents" if fmt != "native" else "")
        code, out, _ = run(capsys, url)
        assert code == 1
        check_table(out)
        assert read_topic(tansu, topic) == before
    finally:
        store.close()


def test_kafka_missing_topic_is_not_created(tansu: str, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-5, INS-6: inspecting a topic that does not exist creates nothing."""
    from confluent_kafka.admin import AdminClient

    topic = f"inspect-missing-{uuid.uuid4().hex[:8]}"
    code, _, err = run(capsys, f"kafka://{tansu}/{topic}?format=flink-agents", "--timeout", "5")
    assert code == 2 and "does not exist" in err
    assert topic not in AdminClient({"bootstrap.servers": tansu}).list_topics(timeout=5).topics


def test_captured_real_records_decode_through_inspect(tansu: str, capsys: pytest.CaptureFixture[str]) -> None:
    """INS-1, WIRE-4: the records a real Flink Agents 0.2.0 job wrote print as its action states."""
    from reference_runtime.stores.kafka_flink import FlinkAgentsKafkaStore
    from reference_runtime.stores.kafka_flink_format import partition_for
    from tests.stores.test_kafka_store import produce_raw
    from tests.vectors import captured_records

    topic = f"inspect-captured-{uuid.uuid4().hex[:8]}"
    FlinkAgentsKafkaStore(tansu, topic, partitions=2).close()
    produce_raw(
        tansu,
        topic,
        [(r["key"], r["value_bytes"], partition_for(r["key"].rsplit("_", 3)[0], 2)) for r in captured_records()],
    )
    code, out, _ = run(capsys, f"kafka://{tansu}/{topic}?format=flink-agents")
    assert code == 0, out
    assert "3 action states" in out and out.count("completed  [flink-agents (0.2.0)]") == 3
    assert out.count("action uuid 2ce769d1-2752-3b38-a016-1a3e27b21029") == 3
    for output in ("a:1#1", "b:1#1", "a:2#2"):
        assert f'output     _output_event {{"output": "{output}"}}' in out
    assert "memory     n = 2" in out
    code, out, _ = run(capsys, f"kafka://{tansu}/{topic}?format=flink-agents", "--json")
    assert [s["seq"] for s in json.loads(out)] == [0, 1, 0]


def _pfile_reader(parsed: Any, timeout: float, namespace: str) -> Any:
    """A third-party reader as a plugin author might write it: it opens the file without checking it."""
    with open(parsed.path, "rb") as file:  # FileNotFoundError for a missing file
        rows = pickle.load(file)
    for key, mode in rows:

        def decode(mode: str = mode) -> Any:
            if mode == "raise":
                raise KeyError("no such column")
            if mode == "wrong":
                return "not a state"
            return ActionState(), "pfile-v1"

        yield f"{key}/0/act", key, 0, "act", decode


@pytest.fixture
def pfile() -> Any:
    from reference_runtime.stores import StoreScheme, register_scheme, unregister_scheme
    from reference_runtime.stores.memory import InMemoryStore

    register_scheme(StoreScheme("pfile", "pfile:PATH", open=lambda p, t: InMemoryStore(), inspect=_pfile_reader))
    yield
    unregister_scheme("pfile")


def test_a_third_party_reader_that_raises_is_one_line_naming_scheme_and_origin(
    pfile: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """INS-7: whatever a third-party scheme's reader raises is one line naming the URL, the scheme and its
    origin, with status 2 and no traceback."""
    code, out, err = run(capsys, "pfile:nothere.pickle")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "'pfile:nothere.pickle'" in err and "scheme 'pfile' (registered in this process)" in err
    assert "FileNotFoundError" in err
    garbage = tmp_path / "garbage.pickle"
    garbage.write_bytes(b"\x00not a pickle")
    code, out, err = run(capsys, f"pfile:{garbage}")
    assert code == 2 and len(err.splitlines()) == 1 and "UnpicklingError" in err and "Traceback" not in err


def test_a_third_party_decode_that_fails_marks_only_its_record(
    pfile: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """INS-4, INS-7: a third-party decode() that raises or returns something other than (ActionState, format
    name) makes its own record unreadable, on its line with its location; the others are shown; status 1."""
    rows = tmp_path / "rows.pickle"
    rows.write_bytes(pickle.dumps([("good", "ok"), ("bad", "raise"), ("odd", "wrong")]))
    code, out, err = run(capsys, f"pfile:{rows}")
    assert code == 1 and "Traceback" not in out + err
    assert "key 'good'  seq 0  action act  in progress  [pfile-v1]" in out
    assert "decode() of scheme 'pfile' (registered in this process) raised KeyError" in out
    assert "returned str, not (ActionState, format name)" in out
