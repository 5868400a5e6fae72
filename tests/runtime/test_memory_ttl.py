"""Short-term memory state TTL, as Flink Agents configures it (spec MEM-14), in virtual time."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from reference_runtime import (
    Agent,
    ConfigError,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    VirtualClock,
    action,
)

TTL = "short-term-memory.state-ttl.ms"
UPDATE = "short-term-memory.state-ttl.update-type"
VISIBILITY = "short-term-memory.state-ttl.visibility"


class Notes(Agent):
    """``write`` sets ``notes.x`` (and sensory ``s``); ``read`` outputs what memory shows of it."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        stm = ctx.short_term_memory
        if event.attributes["input"] == "write":
            stm.set("notes.x", 1)
            ctx.sensory_memory.set("s", 1)
            ctx.send_event(OutputEvent("written"))
            return
        notes = stm.get("notes")
        ctx.send_event(
            OutputEvent(
                {
                    "x": stm.get("notes.x"),
                    "exists": stm.is_exist("notes.x"),
                    "fields": notes.get_field_names() if notes is not None else None,
                    "object": notes is not None,
                }
            )
        )


def _runner(clock: VirtualClock, **config: Any) -> Runner:
    return Runner(Notes, config={TTL: 1000, **config}, clock=clock)


def _read(runner: Runner) -> Any:
    return runner.run([("k", "read")]).outputs["k"][-1]


GONE = {"x": None, "exists": False, "fields": [], "object": True}
THERE = {"x": 1, "exists": True, "fields": ["x"], "object": True}


def test_a_value_expires_its_ttl_after_it_was_written() -> None:
    """MEM-14: on the runner's clock, a value reads as itself until the TTL has passed since its write, then
    as absent (`get` None, `is_exist` false, not listed); the object holding it stays."""
    clock = VirtualClock()
    runner = _runner(clock, **{UPDATE: "ON_CREATE_AND_WRITE"})
    runner.run([("k", "write")])
    clock.advance(0.999)
    assert _read(runner) == THERE
    clock.advance(0.001)
    assert _read(runner) == GONE


@pytest.mark.parametrize(("update", "after"), [("ON_READ_AND_WRITE", THERE), ("ON_CREATE_AND_WRITE", GONE)])
def test_a_read_refreshes_the_ttl_only_under_on_read_and_write(update: str, after: dict[str, Any]) -> None:
    """MEM-14: a read 0.6 s after the write, then another 0.6 s later: refreshed by the first read under
    ON_READ_AND_WRITE (the default), expired 1.2 s after the write under ON_CREATE_AND_WRITE."""
    clock = VirtualClock()
    runner = _runner(clock, **{UPDATE: update})
    runner.run([("k", "write")])
    clock.advance(0.6)
    assert _read(runner) == THERE
    clock.advance(0.6)
    assert _read(runner) == after


def test_return_expired_if_not_cleaned_up_keeps_expired_values_readable() -> None:
    """MEM-14: nothing is cleaned up in-process, so under that visibility an expired value reads as before."""
    clock = VirtualClock()
    runner = _runner(clock, **{VISIBILITY: "RETURN_EXPIRED_IF_NOT_CLEANED_UP"})
    runner.run([("k", "write")])
    clock.advance(5)
    assert _read(runner) == THERE


def test_no_ttl_by_default_and_none_for_sensory_memory() -> None:
    """MEM-14: without the key (or with 0) nothing expires; the TTL is short-term memory's only."""
    for config in ({}, {TTL: 0}):
        clock = VirtualClock()
        runner = Runner(Notes, config=config, clock=clock)
        runner.run([("k", "write")])
        clock.advance(3600)
        assert _read(runner) == THERE


def test_writing_an_expired_path_again_lists_it_once() -> None:
    """MEM-14, MEM-4: a write to the path of an expired value makes it visible again without listing the
    name twice in its parent object."""
    clock = VirtualClock()
    runner = _runner(clock)
    runner.run([("k", "write")])
    clock.advance(2)
    runner.run([("k", "write")])
    assert _read(runner) == THERE


def test_recovery_writes_the_replayed_updates_anew() -> None:
    """MEM-14, MEM-13: a crash in the second input restarts the key later (60 virtual seconds); the first
    input's completed action has its updates replayed then, so its value is fresh, as the crash-free run saw it."""
    clock = VirtualClock()
    crash = FaultInjector([CrashAt(Phase.BEFORE_COMPLETE, key="k", seq=1)])
    result = Runner(Notes, config={TTL: 1000}, clock=clock, injector=crash).run([("k", "write"), ("k", "read")])
    assert result.failovers == 1 and result.outputs == {"k": ["written", THERE]}


def test_a_value_restored_from_a_checkpoint_keeps_its_age() -> None:
    """MEM-14: a value restored from a checkpoint keeps the time it was written; after a restart that takes
    longer than the TTL it has expired, as Flink's state TTL does: an agent whose outputs depend on memory
    with a TTL gives other outputs after such a crash (which a sweep reports)."""
    clock = VirtualClock()
    crash = FaultInjector([CrashAt(Phase.BEFORE_COMPLETE, key="k", seq=1)])
    runner = Runner(Notes, config={TTL: 1000}, clock=clock, injector=crash, checkpoint_every=1)
    assert runner.run([("k", "write"), ("k", "read")]).outputs == {"k": ["written", GONE]}


class _Update(enum.Enum):
    ON_CREATE_AND_WRITE = "ON_CREATE_AND_WRITE"


def test_the_ttl_keys_are_parsed_and_checked_once() -> None:
    """MEM-14, CFG-3: the options take Flink Agents' enum values as well as their names; a bad value is one
    ConfigError naming the key."""
    runner = Runner(Notes, config={TTL: "250", UPDATE: _Update.ON_CREATE_AND_WRITE})
    assert (runner.settings.memory_ttl_ms, runner.settings.memory_ttl_update) == (250, "ON_CREATE_AND_WRITE")
    with pytest.raises(ConfigError, match=r"short-term-memory\.state-ttl\.visibility"):
        Runner(Notes, config={VISIBILITY: "SOMETIMES"})
