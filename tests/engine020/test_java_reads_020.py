"""Lane (a) of the real-engine proof (WIRE-13): Flink Agents 0.2.0's own Kafka deserializer, run on Java 17
from the flink-agents 0.2.0 wheel's jars, reads every record the 0.2 writer produces, as what it says.

Needs the venv of ``scripts/flink-agents-020-venv.sh`` (``.venv-flink-agents-020`` at the repository root, or
``DURABLE_FLINK_AGENTS_020_VENV``) and a JDK; skipped without them, unless ``DURABLE_REQUIRE_FLINK_AGENTS_020=1``
(``.ci/run`` sets it) makes that a failure. ``Read020.java`` is compiled here, against the wheel's jars.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from reference_runtime.events import InputEvent, OutputEvent
from reference_runtime.records import ActionState, CallResult, MemoryUpdate
from reference_runtime.serde.actionstate import serialize
from reference_runtime.serde.legacy import read_legacy_020, write_legacy_020
from reference_runtime.serde.legacy_event import event_pickle
from reference_runtime.stores.kafka_flink_format import engine_check
from tests.vectors import captured_records, cases

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def _venv() -> Path:
    return Path(os.environ.get("DURABLE_FLINK_AGENTS_020_VENV", ROOT / ".venv-flink-agents-020"))


def _classpath() -> str | None:
    site = sorted(_venv().glob("lib/python3.*/site-packages"))
    if not site or shutil.which("javac") is None or shutil.which("java") is None:
        return None
    dist = sorted(site[0].glob("flink_agents/lib/flink-2.2/flink-agents-dist-*-0.2.0.jar"))
    flink = sorted(site[0].glob("pyflink/lib/flink-dist-*.jar"))
    if not dist or not flink:
        return None
    return os.pathsep.join(str(p) for p in [dist[0], flink[0], *sorted(site[0].glob("pyflink/lib/log4j-*.jar"))])


@pytest.fixture(scope="module")
def read020(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A function: record values → what 0.2.0's ActionStateKafkaSeder made of each (see Read020.java)."""
    classpath = _classpath()
    if classpath is None:
        why = f"no Flink Agents 0.2.0 venv at {_venv()} or no JDK (run scripts/flink-agents-020-venv.sh)"
        if os.environ.get("DURABLE_REQUIRE_FLINK_AGENTS_020") == "1":
            pytest.fail(f"DURABLE_REQUIRE_FLINK_AGENTS_020=1 but {why}")
        pytest.skip(why)
    out = tmp_path_factory.mktemp("read020")
    subprocess.run(["javac", "-d", str(out), "-cp", classpath, str(HERE / "Read020.java")], check=True)

    def run(values: list[bytes]) -> list[dict[str, Any]]:
        lines = "".join(base64.b64encode(v).decode() + "\n" for v in values)
        done = subprocess.run(
            ["java", "-Dlog4j2.level=OFF", "-cp", f"{out}{os.pathsep}{classpath}", "Read020"],
            input=lines,
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert len(results) == len(values), done.stderr[-2000:]
        return results

    return run


def _json_values(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value: every JSON type, nested, with the numbers and strings that are easy to get wrong."""
    kinds = ["null", "bool", "int", "float", "str"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, 1, -1, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 2**70, rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.0, 0.1, -2.5, 1e20, 1e-7, 123456.789, 1e16, 5e-324, 1.7976931348623157e308])
    if kind == "str":
        return rng.choice(["", "a", "a:1", "é😀", 'q"\\/', "\u0001\n\t", "x" * 300])
    if kind == "list":
        return [_json_values(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["k", "é", "", "a b"]) + str(i): _json_values(rng, depth + 1) for i in range(rng.randint(0, 4))}


def writer_corpus() -> list[tuple[ActionState, bytes]]:
    """What the 0.2 writer produces: the real job's states written again, and 200 generated states with
    events, memory values of every JSON type, successful and failed calls, in progress and completed."""
    out = []
    for name in ("flink-agents-0.2.0-kafka-topic.jsonl", "flink-agents-0.2.0-kafka-topic-calls.jsonl"):
        for rec in captured_records(name):
            state = read_legacy_020(rec["value_bytes"])
            out.append((state, write_legacy_020(state)))
    rng = random.Random(27)
    for n in range(200):
        calls = []
        for i in range(rng.randint(0, 3)):
            if rng.random() < 0.5:
                calls.append(CallResult.succeeded(f"m.f{i}", f"{n:016x}", cloudpickle.dumps(_json_values(rng))))
            else:
                calls.append(CallResult.failed(f"m.g{i}", f"{n:016x}", cloudpickle.dumps(ValueError(f"no {n}"))))
        state = ActionState(
            task_event=InputEvent(_json_values(rng)) if rng.random() < 0.9 else None,
            sensory_memory_updates=[MemoryUpdate(f"s{i}", _json_values(rng)) for i in range(rng.randint(0, 2))],
            short_term_memory_updates=[MemoryUpdate(f"a.b{i}", _json_values(rng)) for i in range(rng.randint(0, 3))],
            output_events=[OutputEvent(_json_values(rng)) for _ in range(rng.randint(0, 2))],
            call_results=calls,
            completed=rng.random() < 0.5,
        )
        out.append((state, write_legacy_020(state)))
    return out


def test_the_020_deserializer_reads_everything_the_020_writer_writes(read020: Any) -> None:
    """WIRE-13, WIRE-10: every record is accepted by 0.2.0's deserializer, which writes it back byte for byte,
    and reads each part as what it is: events as PythonEvents with our pickle, memory values as the JSON value,
    call results with their payloads and success flag, the completed flag."""
    corpus = writer_corpus()
    results = read020([value for _state, value in corpus])
    for n, ((state, value), got) in enumerate(zip(corpus, results, strict=True)):
        assert got["ok"], (n, got.get("error"))
        # Jackson hands a null sourceTimestamp to the primitive setter as 0, so 0.2.0 writes 0 back.
        written_back = base64.b64decode(got["reserialized"]).replace(
            b'"sourceTimestamp":0}', b'"sourceTimestamp":null}'
        )
        assert written_back == value, n
        events = [(state.task_event, got["taskEvent"])] if state.task_event is not None else []
        assert (got["taskEvent"] is None) == (state.task_event is None)
        events += list(zip(state.output_events, got["outputEvents"], strict=True))
        for event, java in events:
            assert java["class"] == "org.apache.flink.agents.runtime.python.event.PythonEvent"
            field = "input" if event.type == "_input_event" else "output"
            assert base64.b64decode(java["event"]) == event_pickle(event.type, event.attributes[field])[0]
            assert json.loads(java["eventJsonStr"])[field] == json.loads(json.dumps(event.attributes[field]))
        for ours, theirs in (
            (state.sensory_memory_updates, got["sensory"]),
            (state.short_term_memory_updates, got["shortTerm"]),
        ):
            assert [(u.path, u.value) for u in ours] == [(u["path"], u["value"]) for u in theirs], n
        assert [
            (c.function_id, c.args_digest, c.result_payload, c.exception_payload, c.exception_payload is None)
            for c in state.call_results
        ] == [
            (
                c["functionId"],
                c["argsDigest"],
                c["resultPayload"] and base64.b64decode(c["resultPayload"]),
                c["exceptionPayload"] and base64.b64decode(c["exceptionPayload"]),
                c["success"],
            )
            for c in got["calls"]
        ]
        assert got["completed"] == state.completed
    kinds = {type(u["value"]).__name__ for got in results for u in got["shortTerm"] + got["sensory"]}
    assert kinds >= {"NoneType", "bool", "int", "float", "str", "list", "dict"}
    assert any(not c["success"] for got in results for c in got["calls"])


def test_the_engine_check_agrees_with_the_020_deserializer(read020: Any) -> None:
    """WIRE-12, INS-8: for current-format records (the serialize vectors and what the current writer makes of
    the generated states) `engine_check` says 0.2 reads a record exactly when 0.2.0's deserializer accepts it
    and reads no Kryo envelope as a map."""
    values = [c.get("jdk25_json", c["json"]).encode() for c in cases("actionstate_serialize.jsonl")]
    values += [serialize(state) for state, _v in writer_corpus()[:60]]
    values += [serialize(ActionState()), serialize(ActionState(call_results=[CallResult.succeeded("f", "d", b"x")]))]
    results = read020(values)
    for value, got in zip(values, results, strict=True):
        misread = got["ok"] and any(
            isinstance(u["value"], dict) and {"serde", "payload"} <= set(u["value"])
            for u in got["shortTerm"] + got["sensory"]
        )
        assert ("0.2" in engine_check(value).readers) == (got["ok"] and not misread), (value[:200], got)
    assert any(got["ok"] for got in results) and not all(got["ok"] for got in results)
