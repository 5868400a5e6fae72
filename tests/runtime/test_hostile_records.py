"""Hostile store contents: resource bombs, process exits, state set on classes and moved or forged signed
records are refused with typed, located errors (spec LIM-*, PAY-6, SIG-*)."""

from __future__ import annotations

import copyreg
import fractions
import json
import pickle
import subprocess
import sys
import tracemalloc
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reference_runtime import (
    Agent,
    CallStatus,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
    record_imports,
    set_record_imports,
)
from reference_runtime.codecs import CloudpickleCodec, JavaStyleCodec, RecordBinding
from reference_runtime.errors import (
    CorruptRecordError,
    EventClassError,
    Location,
    PayloadDecodeError,
    PayloadLimitError,
    RecordLimitError,
    SignatureError,
    UntrustedPayloadError,
    WriteLimitError,
)
from reference_runtime.identity import args_digest, function_id
from reference_runtime.limits import DecodeLimits, decode_limits, safe_repr, set_decode_limits
from reference_runtime.records import ActionRef, ActionState, CallResult, StateRef
from reference_runtime.stores.forwarding import ForwardingStore
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.native import decode_state, encode_state

from . import agents
from .executions import REF, execution, stored

OTHER = StateRef("user-2", 4, ActionRef("work", "m", "A.work", ("_input_event",)), InputEvent("x"), "sk2")
MB = 1024 * 1024


class _Reduce:
    """Pickles as ``func(*args)``: how an attacker plants a call to an allow-listed callable."""

    def __init__(self, func: Any, *args: Any) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return self.func, self.args


@pytest.fixture
def peak_memory() -> Iterator[list[int]]:
    """The peak of traced allocations during the test, in bytes (read after the block under test)."""
    tracemalloc.start()
    out: list[int] = []
    try:
        yield out
    finally:
        out.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def bounded(peak_memory: list[int], decode: Any, data: bytes) -> PayloadDecodeError:
    with pytest.raises(PayloadDecodeError) as info:
        decode(data)
    peak = tracemalloc.get_traced_memory()[1]
    assert peak < 32 * MB, f"decoding a {len(data)}-byte payload allocated {peak} bytes"
    return info.value


# -- resource bombs ------------------------------------------------------------------------------------
def test_memo_index_bomb_is_refused_before_loading(peak_memory: list[int]) -> None:
    """LIM-2: a 9-byte plain pickle (LONG_BINPUT 100 000 000) used to allocate 1.5 GB in the fast path."""
    bomb = b"\x80\x04N" + b"r" + (100_000_000).to_bytes(4, "little") + b"."
    assert len(bomb) == 9
    error = bounded(peak_memory, CloudpickleCodec().decode_result, bomb)
    assert isinstance(error, PayloadLimitError) and "memo index" in str(error)
    # Trusted loading is bounded the same way: the limits are about resources, not about code.
    bounded(peak_memory, CloudpickleCodec(trusted=True).decode_result, bomb)


@pytest.mark.parametrize(
    "bomb",
    [
        _Reduce(bytearray, 600_000_000),
        _Reduce(bytes, 600_000_000),
        _Reduce(list, range(20_000_000)),
        _Reduce(set, range(20_000_000)),
        _Reduce(copyreg._reconstructor, bytearray, bytearray, 600_000_000),  # type: ignore[attr-defined]
    ],
    ids=["bytearray", "bytes", "list-range", "set-range", "reconstructor"],
)
def test_allow_listed_callables_cannot_allocate_beyond_the_budget(bomb: _Reduce, peak_memory: list[int]) -> None:
    """LIM-4: results of allow-listed callables are checked against the memory budget before they are built."""
    data = pickle.dumps(bomb, protocol=4)
    assert len(data) < 120
    error = bounded(peak_memory, CloudpickleCodec().decode_result, data)
    assert isinstance(error, PayloadLimitError)


def test_payload_size_limit_is_configurable_per_codec_and_process_wide() -> None:
    """LIM-1: limits come from the codec's ``limits`` or from set_decode_limits."""
    data = CloudpickleCodec().encode_result("x" * 1000)
    with pytest.raises(PayloadLimitError, match="max_payload_bytes=100"):
        CloudpickleCodec(limits=DecodeLimits(max_payload_bytes=100)).decode_result(data)
    previous = set_decode_limits(max_payload_bytes=100)
    try:
        assert decode_limits().max_payload_bytes == 100
        with pytest.raises(PayloadLimitError):
            CloudpickleCodec().decode_result(data)
        with pytest.raises(PayloadLimitError):
            JavaStyleCodec().decode_result(json.dumps("x" * 1000).encode())
    finally:
        set_decode_limits(previous)
    assert CloudpickleCodec().decode_result(data) == "x" * 1000
    with pytest.raises(ValueError, match="max_depth"):
        DecodeLimits(max_depth=0)


def test_deep_pickled_value_is_refused_by_depth_limit() -> None:
    """LIM-3: a loaded value nesting beyond max_depth is a typed error, not a RecursionError later."""
    value: Any = []
    for _ in range(300):
        value = [value]
    data = pickle.dumps(value, protocol=5)
    with pytest.raises(PayloadLimitError, match="max_depth"):
        CloudpickleCodec().decode_result(data)
    assert CloudpickleCodec(limits=DecodeLimits(max_depth=400)).decode_result(data) == value
    # LIM-9: the codec does not write what it would refuse to read.
    with pytest.raises(WriteLimitError, match="max_depth=200"):
        CloudpickleCodec().encode_result(value)


# -- process exits and class state ----------------------------------------------------------------
@pytest.mark.parametrize(
    "exc",
    [SystemExit(77), KeyboardInterrupt(), GeneratorExit()],
    ids=["SystemExit", "KeyboardInterrupt", "GeneratorExit"],
)
@pytest.mark.parametrize("trusted", [False, True])
def test_failed_record_holding_a_base_exception_does_not_stop_the_process(exc: BaseException, trusted: bool) -> None:
    """PAY-6: only Exception subclasses replay; the rest is a typed error at the record's location."""
    store = InMemoryStore()
    fid, digest = function_id(agents.step), args_digest((1,), {})
    store.put(REF, ActionState(task_event=REF.event, call_results=[CallResult.failed(fid, digest, pickle.dumps(exc))]))
    with pytest.raises(UntrustedPayloadError) as info:
        execution(store, CloudpickleCodec(trusted=trusted)).execute(agents.step, (1,), {})
    assert (info.value.key, info.value.seq, info.value.call_index) == ("user-1", 4, 0)


@pytest.mark.parametrize("name", ["SystemExit", "KeyboardInterrupt", "builtins.GeneratorExit"])
def test_java_style_exception_payload_naming_a_base_exception_is_refused(name: str) -> None:
    """PAY-6: JavaStyleCodec {"exceptionClass": "SystemExit"} is refused, not raised."""
    store = InMemoryStore()
    fid, digest = function_id(agents.step), args_digest((1,), {})
    payload = json.dumps({"exceptionClass": name, "message": "77"}).encode()
    store.put(REF, ActionState(task_event=REF.event, call_results=[CallResult.failed(fid, digest, payload)]))
    with pytest.raises(UntrustedPayloadError, match="not an Exception subclass") as info:
        execution(store, JavaStyleCodec()).execute(agents.step, (1,), {})
    assert info.value.call_index == 0


def test_payload_cannot_set_state_on_an_allow_listed_class() -> None:
    """LIM-6: BUILD on a class (fractions.Fraction.__repr__ = str) is refused; the class is unchanged."""
    payload = b"\x80\x04cfractions\nFraction\nN}\x8c\x08__repr__cbuiltins\nstr\ns\x86b0N."
    original = fractions.Fraction.__repr__
    try:
        with pytest.raises(UntrustedPayloadError, match="sets state on Fraction"):
            CloudpickleCodec().decode_result(payload)
    finally:
        changed = fractions.Fraction.__repr__ is not original
        fractions.Fraction.__repr__ = original  # type: ignore[method-assign]
    assert not changed


def test_payload_cannot_swap_an_instance_class() -> None:
    """LIM-6: BUILD cannot set special attributes such as __class__ on what it builds."""
    assert CloudpickleCodec().decode_exception(pickle.dumps(ValueError("x"))).args == ("x",)
    state_payload = pickle.dumps(ValueError("x"))
    tampered = _with_build_state(state_payload)
    with pytest.raises(UntrustedPayloadError, match="__class__"):
        CloudpickleCodec().decode_exception(tampered)


def _with_build_state(data: bytes) -> bytes:
    """``data`` (a pickle of one object) followed by a BUILD setting ``__class__`` on it."""
    assert data.endswith(b".")
    return data[:-1] + b"}\x8c\x09__class__cbuiltins\nKeyError\nsb."


# -- huge integers and deep nesting in JSON records -------------------------------------------------
def _header_with_value(value_json: str) -> bytes:
    return (
        '{"v":1,"taskEvent":null,"sensory":[],"shortTerm":[["a",'
        + value_json
        + ',false]],"outputs":[],"completed":false}'
    ).encode()


@pytest.mark.parametrize(
    "value_json",
    ["9" * 5000, "[" * 900 + "]" * 900, "[" * 100_000 + "]" * 100_000],
    ids=["5000-digit-int", "900-brackets", "100000-brackets"],
)
def test_native_record_limits_are_typed_located_errors(value_json: str) -> None:
    """LIM-3/LIM-5: a 5 000-digit integer or 900 nested brackets in a native record used to raise a raw
    ValueError / RecursionError."""
    loc_ref = REF
    from reference_runtime.errors import Location

    with pytest.raises(RecordLimitError) as info:
        decode_state(_header_with_value(value_json), Location(loc_ref.key, loc_ref.seq, "work"))
    assert isinstance(info.value, CorruptRecordError)
    assert info.value.key == "user-1" and info.value.seq == 4


@pytest.mark.parametrize("text", ["9" * 5000, "[" * 900 + "]" * 900, "[" * 100_000 + "]" * 100_000])
def test_java_style_codec_limits_are_typed(text: str) -> None:
    """LIM-3/LIM-5: the same for JavaStyleCodec results and exception payloads."""
    with pytest.raises(PayloadLimitError):
        JavaStyleCodec().decode_result(text.encode())
    with pytest.raises(PayloadDecodeError):
        JavaStyleCodec().decode_exception(text.encode())


def test_error_messages_never_fail_on_the_values_they_quote() -> None:
    """LIM-7: building an error message from a hostile value (huge int, deep or self-referencing value)
    never raises."""
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    loop: list[Any] = []
    loop.append(loop)
    assert safe_repr(10**5000).startswith("<int of")
    assert len(safe_repr(deep)) <= 80
    assert "..." in safe_repr(loop)
    assert len(safe_repr("x" * 10_000)) <= 80


# -- signatures bind the record ------------------------------------------------------------------
KEY = b"secret-key"


def test_signed_payload_moved_to_another_call_index_is_refused() -> None:
    """SIG-1: a validly signed payload copied into another record no longer verifies."""
    store = InMemoryStore()
    codec = CloudpickleCodec(hmac_key=KEY)
    ex = execution(store, codec)
    assert ex.execute(agents.step, (1,), {}) == 10
    assert ex.execute(agents.step, (1,), {}) == 10
    assert ex.execute(agents.step, (2,), {}) == 20
    state = store.get(REF)
    assert state is not None
    # Record 1 has the same function and digest as record 0: its payload still does not verify at index 0.
    store.put(
        REF,
        ActionState(
            task_event=REF.event,
            call_results=[state.call_results[0]._replace(result_payload=state.call_results[1].result_payload)],
        ),
    )
    with pytest.raises(SignatureError):
        execution(store, codec).execute(agents.step, (1,), {})
    # Another call's payload (20) in record 0: refused, where an unbound signature replayed 20.
    store.put(
        REF,
        ActionState(
            task_event=REF.event,
            call_results=[state.call_results[0]._replace(result_payload=state.call_results[2].result_payload)],
        ),
    )
    with pytest.raises(SignatureError) as info:
        execution(store, codec).execute(agents.step, (1,), {})
    assert info.value.call_index == 0 and info.value.key == "user-1"


def test_signed_payload_moved_to_another_key_is_refused() -> None:
    """SIG-1: the key and the sequence number are bound too."""
    store = InMemoryStore()
    codec = CloudpickleCodec(hmac_key=KEY)
    execution(store, codec).execute(agents.step, (1,), {})
    state = store.get(REF)
    assert state is not None
    store.put(OTHER, ActionState(task_event=OTHER.event, call_results=list(state.call_results)))
    with pytest.raises(SignatureError) as info:
        execution(store, codec, OTHER).execute(agents.step, (1,), {})
    assert info.value.key == "user-2"


def test_signed_terminal_record_without_payload_is_refused() -> None:
    """SIG-1: with HMAC on, a SUCCEEDED record without a payload would replay as None: refused."""
    store = InMemoryStore()
    fid, digest = function_id(agents.step), args_digest((1,), {})
    store.put(REF, ActionState(task_event=REF.event, call_results=[CallResult.succeeded(fid, digest, None)]))
    with pytest.raises(SignatureError):
        execution(store, CloudpickleCodec(hmac_key=KEY)).execute(agents.step, (1,), {})


def test_key_rotation_signs_with_the_new_key_and_verifies_old_ones() -> None:
    """SIG-3: verify_keys keep old records readable; a codec without the old key refuses them."""
    store = InMemoryStore()
    execution(store, CloudpickleCodec(hmac_key=b"old")).execute(agents.step, (1,), {})
    rotated = CloudpickleCodec(hmac_key=b"new", verify_keys=[b"old"])
    ex = execution(store, rotated)
    assert ex.execute(agents.step, (1,), {}) == 10
    assert ex.execute(agents.step, (2,), {}) == 20
    with pytest.raises(SignatureError):
        execution(store, CloudpickleCodec(hmac_key=b"new")).execute(agents.step, (1,), {})
    binding = RecordBinding("k", 0, "a", 0, "f", "d", "result")
    sealed = rotated.encode_result(5, binding=binding)
    assert CloudpickleCodec(hmac_key=b"new").decode_result(sealed, binding=binding) == 5
    with pytest.raises(ValueError):
        CloudpickleCodec(verify_keys=[b"old"])


class _Refs(ForwardingStore):
    def __init__(self, inner: InMemoryStore) -> None:
        super().__init__(inner)
        self.refs: list[StateRef] = []

    def put(self, ref: StateRef, state: ActionState) -> None:
        self.refs.append(ref)
        super().put(ref, state)


class Echo(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(agents.step, event.attributes["input"])))


def test_forged_unsigned_header_is_refused_with_its_location() -> None:
    """SIG-2: with HMAC on, a completed state nobody signed (outputs chosen by an attacker) is refused."""
    store = _Refs(InMemoryStore())
    codec = CloudpickleCodec(hmac_key=KEY)
    assert Runner(Echo, store, codec=codec).run([("k", 1)]).outputs == {"k": [10]}
    ref = store.refs[-1]
    forged = ActionState(task_event=ref.event, output_events=[OutputEvent("attacker")], completed=True)
    store.put(ref, forged)
    with pytest.raises(SignatureError, match="not signed") as info:
        Runner(Echo, store, codec=codec).run([("k", 1)])
    assert (info.value.key, info.value.seq, info.value.action) == ("k", 0, "work")


def test_signed_header_moved_to_another_key_is_refused() -> None:
    """SIG-2: a signed completed header copied under another key's state does not verify."""
    inner = InMemoryStore()
    store = _Refs(inner)
    codec = CloudpickleCodec(hmac_key=KEY)
    runner = Runner(Echo, store, codec=codec, checkpoint_every=None)
    runner.inputs.extend([("a", 1), ("b", 2)])
    # Capture the completed headers before the final checkpoint prunes them.
    captured: dict[str, ActionState] = {}
    original_put = store.put

    def put(ref: StateRef, state: ActionState) -> None:
        original_put(ref, state)
        if state.completed:
            got = inner.get(ref)
            assert got is not None
            captured[ref.key] = got

    store.put = put  # type: ignore[method-assign]
    runner.run()
    ref_b = next(r for r in store.refs if r.key == "b")
    inner.put(ref_b, captured["a"])
    with pytest.raises(SignatureError, match="does not verify") as info:
        Runner(Echo, inner, codec=codec).run([("a", 1), ("b", 2)])
    assert info.value.key == "b"


def test_signing_is_off_without_a_key_and_headers_stay_readable() -> None:
    """SIG-2: without a key nothing is signed, and an unsigned header is accepted as before."""
    store = _Refs(InMemoryStore())
    assert Runner(Echo, store).run([("k", 1)]).outputs == {"k": [10]}
    ref = store.refs[-1]
    store.put(ref, ActionState(task_event=ref.event, output_events=[OutputEvent(7)], completed=True))
    assert Runner(Echo, store).run([("k", 1)]).outputs == {"k": [7]}


def test_signing_is_off_by_default_and_the_docs_say_when_to_turn_it_on() -> None:
    """SIG-4: the default codec writes plain cloudpickle (Flink-readable); docs/stores.md tells shared-store
    users to turn signing on and how to rotate keys."""
    from pathlib import Path

    codec = CloudpickleCodec()
    assert codec.hmac_key is None and not codec.binds_records
    assert pickle.loads(codec.encode_result({"a": 1})) == {"a": 1}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "stores.md").read_text(encoding="utf-8")
    assert "### When to turn signing on" in docs and "### Rotating keys" in docs


class _Model:
    """Like a pydantic model: pickles its __dict__ and field set and restores them in __setstate__."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __getstate__(self) -> dict[str, object]:
        return {"__dict__": dict(self.__dict__), "__fields_set__": {"text"}}

    def __setstate__(self, state: dict[str, object]) -> None:
        object.__setattr__(self, "__dict__", dict(state["__dict__"]))  # type: ignore[call-overload]


def test_an_allowed_class_restores_its_own_state() -> None:
    """LIM-6/PAY-3: an allow-listed class with its own __setstate__ (pydantic models: chat messages of a
    flink_agents agent) decides what its state means; the special-name refusal guards the default path."""
    payload = pickle.dumps(_Model("hi"))
    got = CloudpickleCodec(allowed_classes=[f"{__name__}._Model"]).decode_result(payload)
    assert isinstance(got, _Model) and got.text == "hi"


# -- no import or code run because a record says so (EVT-3, EVT-4) ---------------------------------------
def _decode_in_a_fresh_process(py_class: str, tmp_path: Path, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """Decode a native header whose output event names ``py_class``, in a new interpreter run from an empty
    directory: what the decode raises, and which modules it imported, are printed on stdout."""
    script = f"""
import json, sys
{prelude}
from reference_runtime.errors import Location
from reference_runtime.events import Event
from reference_runtime.records import ActionState
from reference_runtime.stores.native import decode_state, encode_state
doc = json.loads(encode_state(ActionState(output_events=[Event("x", {{}})])))
doc["outputs"][0]["py"] = {py_class!r}
before = set(sys.modules)
try:
    decode_state(json.dumps(doc).encode(), Location("k", 1, "a"))
    print("decoded")
except BaseException as exc:
    print(type(exc).__name__, exc)
print("new modules:", sorted(set(sys.modules) - before))
"""
    return subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_record_naming_a_main_module_runs_nothing(tmp_path: Path) -> None:
    """EVT-4: an event class ``unittest.__main__:T`` used to import ``unittest.__main__``, which runs
    ``unittest.main()``: it discovered and ran test modules of the working directory, then exited the process.
    Now it is an EventClassError naming the record's location, and nothing is imported."""
    (tmp_path / "test_planted.py").write_text("print('PLANTED TEST MODULE RAN')\n", encoding="utf-8")
    done = _decode_in_a_fresh_process("unittest.__main__:T", tmp_path, prelude="import unittest")
    assert done.returncode == 0, done.stderr
    assert "PLANTED" not in done.stdout + done.stderr
    first, modules = done.stdout.strip().splitlines()
    assert first.startswith("EventClassError") and "never imports a module" in first and "seq=1" in first
    assert modules == "new modules: []"


def test_a_record_naming_a_store_module_loads_no_package(tmp_path: Path) -> None:
    """EVT-4: naming the Kafka store module (with its client library) used to load 19 packages."""
    done = _decode_in_a_fresh_process("reference_runtime.stores.kafka:KafkaStore", tmp_path)
    first, modules = done.stdout.strip().splitlines()
    assert first.startswith("EventClassError") and "reference_runtime.stores.kafka" in first
    assert modules == "new modules: []"


def test_record_imports_are_the_users_allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EVT-4: a module nothing imported yet is imported for a record only once set_record_imports names it."""
    (tmp_path / "lazy_events_h28.py").write_text(
        "from reference_runtime import Event\n\nclass Late(Event):\n    pass\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    doc = json.loads(encode_state(ActionState(output_events=[Event("x", {"a": 1})])))
    doc["outputs"][0]["py"] = "lazy_events_h28:Late"
    data = json.dumps(doc).encode()
    with pytest.raises(EventClassError, match="never imports a module"):
        decode_state(data, Location("k", 1, "a"))
    assert "lazy_events_h28" not in sys.modules
    previous = set_record_imports(["lazy_events_h28"])
    try:
        assert record_imports() == {"lazy_events_h28"}
        event = decode_state(data, Location("k", 1, "a")).output_events[0]
        assert type(event).__name__ == "Late" and event.attributes == {"a": 1}
    finally:
        set_record_imports(previous)
        sys.modules.pop("lazy_events_h28", None)
    with pytest.raises(ValueError, match="module names"):
        set_record_imports(["not a module"])


class _Lazy(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a record made the runtime call a module __getattr__ for {name!r}")


def test_class_lookups_run_no_code_of_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """EVT-4, PAY-3: an event class, a pickled exception class and a Java-style exception name are looked up
    in the module's own dictionary: a module ``__getattr__`` (lazy loaders) is never asked."""
    monkeypatch.setitem(sys.modules, "lazy_h28", _Lazy("lazy_h28"))
    doc = json.loads(encode_state(ActionState(output_events=[Event("x", {})])))
    doc["outputs"][0]["py"] = "lazy_h28:Anything"
    with pytest.raises(EventClassError, match="no attribute"):
        decode_state(json.dumps(doc).encode(), Location("k", 1, "a"))
    with pytest.raises(UntrustedPayloadError):
        CloudpickleCodec().decode_exception(b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00clazy_h28\nBoom\n)R.")
    remote = JavaStyleCodec().decode_exception(b'{"exceptionClass":"lazy_h28.Boom","message":"m"}')
    assert type(remote).__name__ == "RemoteCallError"


# -- the record's status is signed (SIG-5) -----------------------------------------------------------------
def refuse(n: int) -> int:
    raise LookupError(f"no {n}")


def test_a_signed_failed_record_replays_its_exception() -> None:
    """SIG-1: a signed FAILED record replays the recorded exception (not a SignatureError, not a re-run)."""
    store = InMemoryStore()
    codec = CloudpickleCodec(hmac_key=KEY)
    with pytest.raises(LookupError, match="no 3"):
        execution(store, codec).execute(refuse, (3,), {})
    [record] = stored(store)
    assert record.status is CallStatus.FAILED and record.exception_payload is not None
    replay = execution(store, codec)
    with pytest.raises(LookupError, match="no 3"):
        replay.execute(refuse, (3,), {})
    assert replay.journal[-1].source == "replayed"


def test_a_terminal_record_rewritten_as_pending_is_refused() -> None:
    """SIG-5: a signed SUCCEEDED record changed to PENDING (payload dropped, or kept) used to be accepted, and
    the call ran again; a PENDING record must carry the signature of its own status."""
    store = InMemoryStore()
    codec = CloudpickleCodec(hmac_key=KEY)
    assert execution(store, codec).execute(agents.step, (1,), {}) == 10
    [record] = stored(store)
    for forged in (
        CallResult.pending(record.function_id, record.args_digest),
        record._replace(status=CallStatus.PENDING),
        record._replace(status=CallStatus.FAILED, result_payload=None, exception_payload=record.result_payload),
    ):
        store.put(REF, ActionState(task_event=REF.event, call_results=[forged]))
        with pytest.raises(SignatureError) as info:
            execution(store, codec).execute(agents.step, (1,), {})
        assert (info.value.key, info.value.seq, info.value.call_index) == ("user-1", 4, 0)


class Reconciled(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        n = event.attributes["input"]
        ctx.send_event(OutputEvent(ctx.durable_execute(agents.step, n, reconciler=lambda: n * 100)))


def test_signed_pending_records_recover_and_move_nowhere() -> None:
    """SIG-5: with a key, a PENDING record is written signed: a crash right after it recovers through the
    reconciler as without signing, and a PENDING signature copied to another call index does not verify."""
    store = _Refs(InMemoryStore())
    codec = CloudpickleCodec(hmac_key=KEY)
    crash = FaultInjector([CrashAt(Phase.AFTER_PENDING)])
    result = Runner(Reconciled, store, codec=codec, injector=crash).run([("k", 2)])
    assert result.failovers == 1 and result.outputs == {"k": [200]}
    ex = execution(InMemoryStore(), codec)
    ex.reserve([ex.open_slot(0, agents.step, (1,), {}, reserve=False)])
    [pending] = ex.records
    assert pending.status is CallStatus.PENDING and pending.result_payload is not None
    moved = InMemoryStore()
    moved.put(REF, ActionState(task_event=REF.event, call_results=[CallResult.succeeded("f", "d", None), pending]))
    other = execution(moved, codec)
    other.state.call_results[0] = CallResult.pending(pending.function_id, pending.args_digest)
    with pytest.raises(SignatureError):
        other.open_slot(0, agents.step, (1,), {})
    with pytest.raises(SignatureError) as info:
        execution(moved, codec).open_slot(1, agents.step, (1,), {})
    assert info.value.call_index == 1
