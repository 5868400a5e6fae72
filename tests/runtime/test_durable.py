"""The durable-call state machine of one action execution (spec DE-*, PAY-*)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from reference_runtime import (
    CallResult,
    CallStatus,
    CrashAt,
    FaultInjector,
    NondeterminismError,
    PayloadDecodeError,
    Phase,
    SimulatedCrash,
)
from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.identity import args_digest, function_id
from reference_runtime.records import ActionState
from reference_runtime.stores.memory import InMemoryStore

from . import agents
from .executions import REF, execution, stored


@pytest.fixture(autouse=True)
def _reset() -> None:
    agents.reset()


def test_miss_executes_and_appends_terminal_record() -> None:
    """DE-1: no slot → execute, persist a terminal record, advance the index; no PENDING is written."""
    store = InMemoryStore()
    ex = execution(store)
    assert ex.execute(agents.step, (1,), {}) == 10
    assert ex.execute(agents.step, (2,), {}) == 20
    records = stored(store)
    assert [r.status for r in records] == [CallStatus.SUCCEEDED, CallStatus.SUCCEEDED]
    assert records[0].function_id == function_id(agents.step)
    assert records[1].args_digest == args_digest((2,), {})
    assert ex.index == 2


def test_matching_terminal_record_replays_without_executing() -> None:
    """DE-2: a matching terminal slot is replayed; the function does not run again."""
    store = InMemoryStore()
    execution(store).execute(agents.step, (1,), {})
    assert sum(agents.EFFECTS.values()) == 1
    again = execution(store)
    assert again.execute(agents.step, (1,), {}) == 10
    assert sum(agents.EFFECTS.values()) == 1
    assert again.journal[0].source == "replayed"


def test_exceptions_are_recorded_and_replayed_as_equivalent_exceptions() -> None:
    """DE-9: a FAILED record re-raises an exception of the same type and arguments."""
    store = InMemoryStore()
    with pytest.raises(ValueError, match="boom 3"):
        execution(store).execute(agents.fail_once, (3,), {})
    assert stored(store)[0].status is CallStatus.FAILED
    with pytest.raises(ValueError, match="boom 3") as info:
        execution(store).execute(agents.fail_once, (3,), {})
    assert info.value.args == ("boom 3",)
    assert sum(agents.EFFECTS.values()) == 1


def test_reconciler_path_persists_pending_before_the_call() -> None:
    """DE-3: with a reconciler, PENDING is durable before the function starts; the index stays put."""
    store = InMemoryStore()
    injector = FaultInjector([CrashAt(Phase.AFTER_PENDING)])
    ex = execution(store, injector=injector)
    with pytest.raises(SimulatedCrash):
        ex.execute(agents.step, (1,), {}, reconciler=lambda: 99)
    assert [r.status for r in stored(store)] == [CallStatus.PENDING]
    assert ex.index == 0
    assert not agents.EFFECTS


def test_reconciler_finalizes_in_place() -> None:
    """DE-4: the PENDING slot is finalized at the same index (no second record)."""
    store = InMemoryStore()
    execution(store).execute(agents.step, (1,), {}, reconciler=lambda: 99)
    records = stored(store)
    assert len(records) == 1 and records[0].status is CallStatus.SUCCEEDED


def test_pending_with_reconciler_runs_the_reconciler_not_the_function() -> None:
    """DE-5: a matching PENDING slot plus a reconciler → reconcile, persist, replay."""
    store = InMemoryStore()
    with pytest.raises(SimulatedCrash):
        execution(store, injector=FaultInjector([CrashAt(Phase.AFTER_EFFECT)])).execute(
            agents.step, (1,), {}, reconciler=lambda: 99
        )
    assert sum(agents.EFFECTS.values()) == 1
    ex = execution(store)
    assert ex.execute(agents.step, (1,), {}, reconciler=lambda: 99) == 99
    assert sum(agents.EFFECTS.values()) == 1
    assert stored(store)[0].status is CallStatus.SUCCEEDED
    assert ex.journal[0].source == "reconciled"
    assert execution(store).execute(agents.step, (1,), {}, reconciler=lambda: 0) == 99


def test_reconciler_that_raises_records_failure() -> None:
    """DE-5: a raising reconciler finalizes the slot as FAILED and the error replays."""
    store = InMemoryStore()
    store.put(
        REF,
        ActionState(
            task_event=REF.event, call_results=[CallResult.pending(function_id(agents.step), args_digest((1,), {}))]
        ),
    )

    def broken() -> int:
        raise KeyError("lost")

    with pytest.raises(KeyError):
        execution(store).execute(agents.step, (1,), {}, reconciler=broken)
    assert stored(store)[0].status is CallStatus.FAILED
    assert not agents.EFFECTS


def test_pending_without_reconciler_re_executes() -> None:
    """DE-6: PENDING and no reconciler → run the function again (not replay None, the 0.3.1 bug)."""
    store = InMemoryStore()
    store.put(
        REF,
        ActionState(
            task_event=REF.event, call_results=[CallResult.pending(function_id(agents.step), args_digest((1,), {}))]
        ),
    )
    assert execution(store).execute(agents.step, (1,), {}) == 10
    assert stored(store)[0].status is CallStatus.SUCCEEDED
    assert sum(agents.EFFECTS.values()) == 1


def test_lenient_mismatch_warns_truncates_persists_and_re_executes(caplog: pytest.LogCaptureFixture) -> None:
    """DE-7: lenient mode logs the index, truncates from it durably and executes the new call."""
    store = InMemoryStore()
    first = execution(store)
    for i in range(3):
        first.execute(agents.step, (i,), {})
    second = execution(store)
    second.execute(agents.step, (0,), {})
    with caplog.at_level(logging.WARNING, logger="reference_runtime.durable"):
        assert second.execute(agents.step, (7,), {}) == 70
    assert "Non-deterministic call detected at index 1" in caplog.text
    records = stored(store)
    assert len(records) == 2 and records[1].args_digest == args_digest((7,), {})


def test_lenient_truncation_is_persisted_before_the_new_call_runs() -> None:
    """DE-7: the truncation is durable even if the process dies right after it."""
    store = InMemoryStore()
    first = execution(store)
    for i in range(3):
        first.execute(agents.step, (i,), {})
    second = execution(store, injector=FaultInjector([CrashAt(Phase.AFTER_EFFECT, call_index=0)]))
    with pytest.raises(SimulatedCrash):
        second.execute(agents.step, (5,), {})
    assert stored(store) == []


def test_strict_mismatch_raises_with_expected_and_actual() -> None:
    """DE-8: strict mode raises NondeterminismError naming both calls and the location; nothing is lost."""
    store = InMemoryStore()
    execution(store).execute(agents.step, (1,), {})
    with pytest.raises(NondeterminismError) as info:
        execution(store, mode="strict").execute(agents.fail_once, (1,), {})
    err = info.value
    assert err.expected_function_id == function_id(agents.step)
    assert err.actual_function_id == function_id(agents.fail_once)
    assert err.expected_digest == err.actual_digest == args_digest((1,), {})
    assert (err.key, err.seq, err.action, err.call_index) == ("user-1", 4, "work", 0)
    assert "conformance.agents.step" in str(err) and "fail_once" in str(err)
    assert len(stored(store)) == 1


def test_durable_id_overrides_function_id() -> None:
    """IDN-4: durable_id replaces the function id and is not passed to the function."""
    store = InMemoryStore()
    execution(store).execute(agents.step, (1,), {}, durable_id="charge-card")
    assert stored(store)[0].function_id == "charge-card"


def test_reconciler_validation_messages() -> None:
    """IDN-7: a reconciler must be callable with no arguments (Flink's exact messages)."""
    ex = execution(InMemoryStore())
    with pytest.raises(TypeError, match=r"^reconciler must be callable$"):
        ex.execute(agents.step, (1,), {}, reconciler=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes no arguments"):
        ex.execute(agents.step, (1,), {}, reconciler=lambda x: x)


def test_undecodable_payload_fails_fast_with_location_and_keeps_the_record() -> None:
    """DE-10: a payload that cannot be decoded names key, seq, action, call index; nothing is deleted."""
    store = InMemoryStore()
    fid, digest = function_id(agents.step), args_digest((1,), {})
    store.put(
        REF, ActionState(task_event=REF.event, call_results=[CallResult.succeeded(fid, digest, b"\x80\x05garbage")])
    )
    with pytest.raises(PayloadDecodeError) as info:
        execution(store).execute(agents.step, (1,), {})
    assert (info.value.key, info.value.seq, info.value.action, info.value.call_index) == ("user-1", 4, "work", 0)
    assert "key='user-1'" in str(info.value) and "call_index=0" in str(info.value)
    assert len(stored(store)) == 1 and not agents.EFFECTS


def test_malicious_pickle_in_store_runs_nothing(tmp_path: Any) -> None:
    """PAY-3: a planted pickle that would run a command is refused by the default loader."""
    import os
    import pickle

    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    store = InMemoryStore()
    fid, digest = function_id(agents.step), args_digest((1,), {})
    store.put(
        REF, ActionState(task_event=REF.event, call_results=[CallResult.succeeded(fid, digest, pickle.dumps(Evil()))])
    )
    with pytest.raises(PayloadDecodeError, match="does not admit"):
        execution(store).execute(agents.step, (1,), {})
    assert not marker.exists()


def test_hmac_rejects_tampered_payloads() -> None:
    """PAY-5: with an HMAC key, a modified payload is refused before unpickling."""
    store = InMemoryStore()
    codec = CloudpickleCodec(hmac_key=b"k")
    execution(store, codec=codec).execute(agents.step, (1,), {})
    state = store.get(REF)
    assert state is not None
    payload = bytearray(state.call_results[0].result_payload or b"")
    payload[-2] ^= 1
    state.call_results[0] = state.call_results[0]._replace(result_payload=bytes(payload))
    store.put(REF, state)
    with pytest.raises(PayloadDecodeError, match="signature"):
        execution(store, codec=codec).execute(agents.step, (1,), {})
