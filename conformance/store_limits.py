"""Store checks for what recovery must be able to trust: nothing a store acknowledges is refused when it is
read back under the decode limits (LIM-9), and a store handed the recovery markers of data it does not hold
says the data is lost (FAIL-4, FAIL-6) instead of recovering from what is left.

Part of :class:`~conformance.store_suite.StoreConformance`; the limits are lowered for these checks (and put
back), so the records they write stay small.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reference_runtime.errors import DurableError, StoreDataLostError
from reference_runtime.limits import decode_limits, set_decode_limits
from reference_runtime.records import ActionState, CallResult, MemoryUpdate, StateRef
from reference_runtime.stores.base import ActionStateStore

from .factory import StoreFactory
from .marks import capability, clause
from .states import ref, same_state, tagged

#: ``max_payload_bytes`` while these checks run: small records, yet past any fixed-size framing.
LIMIT = 64 * 1024


class StoreLimitsConformance:
    """Checks of LIM-9 and FAIL-4/FAIL-6 for any store (not collected itself: no ``Test`` prefix)."""

    @pytest.fixture
    def small_limits(self) -> Iterator[int]:
        previous = set_decode_limits(max_payload_bytes=LIMIT)
        try:
            yield LIMIT
        finally:
            set_decode_limits(previous)

    @clause("LIM-9")
    @capability("core")
    def test_what_is_acknowledged_is_read_back_under_the_limits(
        self, durable_store_factory: StoreFactory, small_limits: int
    ) -> None:
        """LIM-9: call records and states around the record-size limit are either written and read back
        as they were, or refused by the write with a typed error that leaves the state as it was; none is
        acknowledged and then refused by ``get``. Records well under the limit are written."""
        assert decode_limits().max_payload_bytes == small_limits
        store = durable_store_factory.new()
        try:
            r = ref("limits", 0)
            store.put(r, tagged("limits", calls=1))
            expected = tagged("limits", calls=1)
            for size in (small_limits // 8, small_limits // 2, small_limits - 64, small_limits, 2 * small_limits):
                record = CallResult.succeeded(f"f{size}", "d", b"p" * size)
                index = len(expected.call_results)
                if _written(store.put_call_results, (r, index, [record]), size):
                    expected.call_results.append(record)
                elif size <= small_limits // 2:
                    pytest.fail(f"LIM-9: a call record with a {size}-byte payload (limit {small_limits}) was refused")
                same_state("LIM-9", f"after writing a {size}-byte payload", expected, _read(store, r, size))
            for size in (small_limits // 2, small_limits, 2 * small_limits):
                big = tagged("limits", calls=0)
                big.short_term_memory_updates.append(MemoryUpdate("blob", "m" * size))
                s = ref("header", size)
                if _written(store.put, (s, big), size):
                    same_state("LIM-9", f"a state holding a {size}-character value", big, _read(store, s, size))
                elif size <= small_limits // 2:
                    pytest.fail(f"LIM-9: a state holding a {size}-character value (limit {small_limits}) was refused")
        finally:
            store.close()

    @clause("FAIL-4")
    @clause("FAIL-6")
    @capability("restart")
    def test_markers_of_data_the_store_does_not_hold_are_refused(self, durable_store_factory: StoreFactory) -> None:
        """FAIL-4, FAIL-6: a store whose data outlives it, handed the recovery markers of another store's data
        (as a server restarted empty, or a topic created again, would be), raises StoreDataLostError from
        ``rebuild_state``; its own markers are accepted."""
        if "restart" not in durable_store_factory.capabilities:
            pytest.skip("backend does not declare the 'restart' capability")
        first, second = durable_store_factory.new(), durable_store_factory.new()
        try:
            first.put(ref("lost", 0), tagged("lost", calls=2))
            first.put_call_results(ref("lost", 0), 2, [CallResult.succeeded("f2", "lost", b"x")])
            marker = first.get_recovery_marker()
            second.put(ref("other", 0), tagged("other"))
            own = second.get_recovery_marker()
            second.rebuild_state([own])  # its own marker: nothing lost
            try:
                second.rebuild_state([marker])
            except StoreDataLostError:
                pass
            else:
                pytest.fail(
                    "FAIL-6: rebuild_state with the recovery marker of data this store does not hold: expected "
                    f"StoreDataLostError, it returned (marker {marker!r})"
                )
        finally:
            first.close()
            second.close()


def _written(write: Callable[..., None], args: tuple[Any, ...], size: int) -> bool:
    """``write(*args)``: True when the store acknowledged it, False when it refused with a typed error."""
    what = getattr(write, "__name__", "the write")
    try:
        write(*args)
    except DurableError:
        return False
    except Exception as exc:
        pytest.fail(f"LIM-9: {what} of a {size}-byte record raised {type(exc).__name__}: {exc}, not a typed error")
    return True


def _read(store: ActionStateStore, r: StateRef, size: int) -> ActionState | None:
    try:
        return store.get(r)
    except DurableError as exc:
        pytest.fail(
            f"LIM-9: a store acknowledged a write (a {size}-byte record) that get then refused: "
            f"{type(exc).__name__}: {exc}"
        )
