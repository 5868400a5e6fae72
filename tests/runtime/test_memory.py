"""Short-term and sensory memory (spec MEM-*)."""

from __future__ import annotations

from typing import Any

import pytest

from reference_runtime import (
    Agent,
    CrashAt,
    Event,
    FaultInjector,
    InputEvent,
    InvalidValueError,
    MemoryAccessError,
    MemoryRef,
    OutputEvent,
    Phase,
    Runner,
    RunnerContext,
    action,
    set_decode_limits,
)
from reference_runtime.memory import NESTED_OBJECT, FlatMemory, MemoryObject, MemoryView
from reference_runtime.stores.memory import InMemoryStore


def fresh() -> tuple[FlatMemory, MemoryView, MemoryObject]:
    base = FlatMemory()
    view = MemoryView(base)
    return base, view, MemoryObject(view, "short_term")


def test_set_get_and_nested_objects() -> None:
    """MEM-1: get/set/new_object/is_exist/get_field_names/get_fields."""
    _, _, mem = fresh()
    ref = mem.set("a.b.c", 1)
    assert ref == MemoryRef("short_term", "a.b.c")
    assert mem.get("a.b.c") == 1
    a = mem.get("a")
    assert isinstance(a, MemoryObject) and a.path == "a"
    assert a.get("b.c") == 1
    assert mem.is_exist("a.b") and not mem.is_exist("a.x")
    mem.set("a.v", [1, {"k": b"x"}])
    assert a.get_field_names() == ["b", "v"]
    assert a.get_fields() == {"b": NESTED_OBJECT, "v": [1, {"k": b"x"}]}
    assert mem.get("missing") is None
    assert mem.get(ref) == 1


def test_values_are_copied_in_and_out() -> None:
    """MEM-3: mutating a value after set or after get does not change memory."""
    _, _, mem = fresh()
    value = {"xs": [1]}
    mem.set("v", value)
    value["xs"].append(2)
    got = mem.get("v")
    got["xs"].append(3)
    assert mem.get("v") == {"xs": [1]}


@pytest.mark.parametrize(
    ("value", "breadcrumb"),
    [
        (object(), "'x'"),
        ([1, object()], "'x'[1]"),
        ({"k": [set()]}, "'x'['k'][0]"),
        ((1, 2), "'x'"),
        ({1: "a"}, "'x'"),
    ],
)
def test_invalid_values_raise_type_error_with_breadcrumb(value: Any, breadcrumb: str) -> None:
    """MEM-2: only None/bool/int/float/str/bytes/list/dict[str, …]; the error names the path."""
    _, _, mem = fresh()
    with pytest.raises(TypeError) as info:
        mem.set("x", value)
    assert f"value at memory path {breadcrumb} " in str(info.value)
    assert not mem.is_exist("x")


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize("value", [{1, 2}, {1: "a"}, (1, 2), bytearray(b"x"), [[1], {"k": object()}]])
def test_a_value_memory_cannot_hold_is_an_invalid_value_error(value: Any) -> None:
    """MEM-2, PAY-7: memory refuses what it cannot hold with the one value error of the runtime (a TypeError,
    as MEM-2 asks, and the InvalidValueError of PAY-7); memory used to raise a plain TypeError."""
    _, _, mem = fresh()
    with pytest.raises(InvalidValueError, match="value at memory path 'x'"):
        mem.set("x", value)
    assert not mem.is_exist("x")


def test_memory_nesting_is_bounded_by_the_decode_limit_max_depth() -> None:
    """PAY-7, LIM-1: memory values nest at most max_depth levels, the limit decoders read back with; memory
    used a fixed 200 of its own, so raising or lowering the limit did not apply to memory."""
    _, _, mem = fresh()
    previous = set_decode_limits(max_depth=300)
    try:
        mem.set("deep", _nested(250))  # beyond memory's old fixed 200
        assert mem.get("deep") == _nested(250)
        with pytest.raises(InvalidValueError, match="nests deeper than max_depth=300"):
            mem.set("deeper", _nested(301))
        set_decode_limits(max_depth=5)
        mem.set("five", _nested(5))
        with pytest.raises(
            InvalidValueError, match=r"value at memory path 'six'\[0\]\[0\]\[0\]\[0\]\[0\] nests deeper"
        ):
            mem.set("six", _nested(6))
    finally:
        set_decode_limits(previous)


def test_a_self_referencing_memory_value_is_named_as_such() -> None:
    """PAY-7: a cycle is reported as a cycle; memory used to report it as "refers to itself or nests deeper
    than 200 levels" after walking 200 levels of it."""
    _, _, mem = fresh()
    cycle: list[Any] = [1]
    cycle.append({"again": cycle})
    with pytest.raises(InvalidValueError, match=r"value at memory path 'x'\[1\]\['again'\] refers to itself;"):
        mem.set("x", cycle)


def test_memory_copies_what_it_checks() -> None:
    """MEM-3: the checked value is a copy, order and types kept (a bytes subclass becomes bytes)."""

    class Blob(bytes):
        pass

    _, _, mem = fresh()
    value = {"b": [1, Blob(b"x")], "a": {"n": None, "f": 1.5, "s": "é"}}
    mem.set("v", value)
    stored = mem.get("v")
    assert stored == value and list(stored) == ["b", "a"] and type(stored["b"][1]) is bytes
    value["a"]["n"] = 2
    assert mem.get("v.a") is None and mem.get("v")["a"]["n"] is None


def test_the_first_offending_item_is_the_one_named() -> None:
    """PAY-7: of several bad items in a memory value, the first is named."""
    _, _, mem = fresh()
    with pytest.raises(InvalidValueError, match=r"'x'\[0\] is a set"):
        mem.set("x", [{1}, object()])


def test_flat_path_map_with_object_children() -> None:
    """MEM-4: a flat map from absolute path to item; objects list their children; root is ''."""
    base, view, mem = fresh()
    mem.set("a.b", 1)
    mem.set("a.c", 2)
    view.commit()
    assert sorted(base.items) == ["", "a", "a.b", "a.c"]
    assert base.items[""].children == ["a"]
    assert base.items["a"].is_object and base.items["a"].children == ["b", "c"]
    assert base.items["a.b"].value == 1


def test_set_refuses_to_overwrite_an_object_and_new_object_rules() -> None:
    """MEM-5/MEM-6: set never replaces an object; new_object keeps objects, replaces values only
    with overwrite=True."""
    _, _, mem = fresh()
    mem.set("o.x", 1)
    with pytest.raises(ValueError, match="object"):
        mem.set("o", 5)
    mem.set("v", 1)
    with pytest.raises(ValueError, match="overwrite=True"):
        mem.new_object("v")
    mem.new_object("v", overwrite=True)
    assert isinstance(mem.get("v"), MemoryObject)
    kept = mem.new_object("o")
    assert kept.get("x") == 1
    with pytest.raises(ValueError, match="holds a value"):
        mem.set("x.y", 1) if mem.set("x", 1) else None


def test_writes_are_buffered_until_commit() -> None:
    """MEM-9: the action sees its writes; the committed map changes only on completion."""
    base, view, mem = fresh()
    mem.set("a", 1)
    assert mem.get("a") == 1
    assert "a" not in base.items
    view.commit()
    assert base.items["a"].value == 1


def test_update_log_replays_object_creation_exactly() -> None:
    """MEM-10: replaying the log of an action that created objects yields the same map (#1029)."""
    base, view, mem = fresh()
    conv = mem.new_object("conv")
    conv.set("t1", "hi")
    mem.new_object("empty")
    mem.set("v", 1)
    mem.new_object("v", overwrite=True)
    view.commit()
    replayed = FlatMemory()
    replayed.apply(view.log)
    assert replayed.to_dict() == base.to_dict() == {"conv": {"t1": "hi"}, "empty": {}, "v": {}}
    assert [u.object_creation for u in view.log] == [True, False, True, False, True]


class NewObjectAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def remember(event: Event, ctx: RunnerContext) -> None:
        stm = ctx.short_term_memory
        conv = stm.new_object("conversation")
        conv.set(f"m{ctx.seq}", event.attributes["input"])
        ctx.send_event(OutputEvent(stm.get("conversation").get_field_names()))


def test_issue_1029_completed_new_object_action_replays_without_corruption() -> None:
    """MEM-10: in Flink Agents 0.3.1 a completed action that called new_object replays as
    set(path, None), which then breaks the next write under that object. Here it cannot."""
    clean = Runner(NewObjectAgent).run([("k", "a"), ("k", "b")])
    injector = FaultInjector([CrashAt(Phase.AFTER_COMPLETE, seq=1)])
    crashed = Runner(NewObjectAgent, InMemoryStore(), injector=injector).run([("k", "a"), ("k", "b")])
    assert crashed.failovers == 1
    assert crashed.memory == clean.memory == {"k": {"conversation": {"m0": "a", "m1": "b"}}}
    assert crashed.outputs == clean.outputs == {"k": [["m0"], ["m0", "m1"]]}


class KeyedAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def count(event: Event, ctx: RunnerContext) -> None:
        n = (ctx.short_term_memory.get("n") or 0) + 1
        ctx.short_term_memory.set("n", n)
        assert ctx.sensory_memory.get("scratch") is None, "sensory memory leaked across runs"
        ctx.sensory_memory.set("scratch", n)
        ctx.send_event(OutputEvent(n))


def test_memory_is_isolated_per_key_and_sensory_memory_is_cleared_per_run() -> None:
    """MEM-7/MEM-8: each key has its own memory; sensory memory is empty at the start of every run."""
    result = Runner(KeyedAgent).run([("a", 0), ("b", 0), ("a", 0), ("a", 0)])
    assert result.outputs == {"a": [1, 2, 3], "b": [1]}
    assert result.memory == {"a": {"n": 3}, "b": {"n": 1}}


def test_memory_changes_of_an_interrupted_action_are_discarded() -> None:
    """MEM-9: a crash before completion leaves memory as it was before the action."""
    injector = FaultInjector([CrashAt(Phase.BEFORE_COMPLETE, seq=1)])
    result = Runner(KeyedAgent, injector=injector).run([("a", 0), ("a", 0)])
    assert result.memory == {"a": {"n": 2}}
    assert result.outputs == {"a": [1, 2]}


def sneaky_memory_read(ctx: RunnerContext) -> Any:
    return ctx.short_term_memory.get("n")


def sneaky_send(ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent("x"))


class SneakyAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.durable_execute(sneaky_memory_read if event.attributes["input"] == "mem" else sneaky_send, ctx)


class SneakyAsyncAgent(Agent):
    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        await ctx.durable_execute_async(sneaky_memory_read, ctx)


@pytest.mark.parametrize("what", ["mem", "send"])
def test_memory_and_send_event_inside_a_durable_function_raise(what: str) -> None:
    """DE-11/MEM-11: a durable function may not touch memory or send events; the error says why."""
    with pytest.raises(MemoryAccessError, match="inside a durable function") as info:
        Runner(SneakyAgent).run([("k", what)])
    assert "sneaky" in str(info.value)


def test_memory_access_from_the_async_pool_raises() -> None:
    """MEM-11: durable work on the pool cannot reach memory either."""
    with pytest.raises(MemoryAccessError):
        Runner(SneakyAsyncAgent).run([("k", 0)])


class PassAlong(Agent):
    """The first action writes short-term memory; the next action of the same run reads it."""

    @action(InputEvent)
    @staticmethod
    def first(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("note", f"{event.attributes['input']}-noted")
        ctx.short_term_memory.new_object("profile").set("name", "ada")
        ctx.send_event(Event("next", {}))

    @action("next")
    @staticmethod
    def second(event: Event, ctx: RunnerContext) -> None:
        stm = ctx.short_term_memory
        ctx.send_event(OutputEvent([stm.get("note"), stm.get("profile.name"), stm.get_field_names()]))


@pytest.mark.parametrize(
    "crash",
    [None, CrashAt(Phase.BETWEEN_ACTIONS), CrashAt(Phase.BEFORE_COMPLETE, action="second")],
    ids=["crash-free", "crash-between-actions", "crash-in-second"],
)
def test_short_term_memory_written_by_one_action_is_read_by_the_next_of_the_run(crash: CrashAt | None) -> None:
    """MEM-13: short-term memory is shared by the actions of a run: the next action sees what the
    previous one wrote, also when recovery skips the completed first action and replays its updates."""
    injector = FaultInjector([crash] if crash else [])
    result = Runner(PassAlong, InMemoryStore(), injector=injector).run([("a", "x")])
    assert result.outputs == {"a": [["x-noted", "ada", ["note", "profile"]]]}
    assert result.memory == {"a": {"note": "x-noted", "profile": {"name": "ada"}}}
    assert len(injector.fired) == (0 if crash is None else 1)


@pytest.mark.parametrize("path", ["", "a..b", ".a", "a.", 3])
def test_malformed_memory_paths_are_refused_naming_the_path(path: Any) -> None:
    """MEM-4: a path is a non-empty dotted string without empty segments; anything else is refused with
    a ValueError naming it, and memory is unchanged."""
    base, view, mem = fresh()
    with pytest.raises(ValueError, match="memory path") as info:
        mem.set(path, 1)
    assert repr(path) in str(info.value)
    for op in (mem.get, mem.is_exist, mem.new_object):
        with pytest.raises(ValueError, match="memory path"):
            op(path)
    assert view.log == [] and view.overlay == {} and base.to_dict() == {}


def test_new_object_creates_missing_parents() -> None:
    """MEM-5, MEM-6: like ``set``, ``new_object`` creates the objects on its path."""
    base, view, mem = fresh()
    mem.new_object("x.y.z")
    assert mem.get_fields() == {"x": NESTED_OBJECT}
    assert mem.get("x").get_field_names() == ["y"] and mem.is_exist("x.y.z")
    view.commit()
    assert base.to_dict() == {"x": {"y": {"z": {}}}}


HANDED: list[Any] = []


def use_handed_memory(op: str) -> Any:
    """A durable function given the action's MemoryObject (captured, not fetched through the context)."""
    mem = HANDED[0]
    calls = {
        "get": lambda: mem.get("n"),
        "get-ref": lambda: mem.get(MemoryRef("short_term", "n")),
        "set": lambda: mem.set("n", 2),
        "new_object": lambda: mem.new_object("o"),
        "is_exist": lambda: mem.is_exist("n"),
        "get_field_names": mem.get_field_names,
        "get_fields": mem.get_fields,
    }
    return calls[op]()


class HandsMemoryOver(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("n", 1)
        HANDED[:] = [ctx.short_term_memory]
        ctx.durable_execute(use_handed_memory, event.attributes["input"])


@pytest.mark.parametrize("op", ["get", "get-ref", "set", "new_object", "is_exist", "get_field_names", "get_fields"])
def test_a_memory_object_handed_to_a_durable_function_refuses_every_operation(op: str) -> None:
    """DE-11, MEM-11: every MemoryObject operation checks where it runs, not only the context's
    properties, so memory captured by a durable function is refused too."""
    with pytest.raises(MemoryAccessError, match="inside a durable function"):
        Runner(HandsMemoryOver).run([("k", op)])


class WritesOnSecondInput(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        if event.attributes["input"]:
            ctx.short_term_memory.set("seen", event.attributes["input"])
        ctx.send_event(OutputEvent(ctx.seq))


def test_an_empty_memory_survives_a_checkpoint_and_failover() -> None:
    """RUN-7, MEM-4: a key whose memory is still empty at a checkpoint gets a usable empty memory (a root
    object) back after failover."""
    injector = FaultInjector([CrashAt(Phase.BEFORE_COMPLETE, seq=1)])
    result = Runner(WritesOnSecondInput, injector=injector, checkpoint_every=1).run([("k", 0), ("k", 5)])
    assert injector.fired and result.outputs == {"k": [0, 1]}
    assert result.memory == {"k": {"seen": 5}}


def test_a_memory_ref_is_created_only_for_a_well_formed_path() -> None:
    """MEM-12: ``MemoryRef.create`` validates its path like memory does."""
    assert MemoryRef.create("sensory", "a.b") == MemoryRef("sensory", "a.b")
    with pytest.raises(ValueError, match="empty segment"):
        MemoryRef.create("short_term", "a..b")
