"""State keys against every case of ``state_keys.jsonl`` (spec KEY-*)."""

from __future__ import annotations

from typing import Any

import pytest

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.records import ActionRef
from reference_runtime.serde.jackson import jackson_sorted_json
from reference_runtime.state_keys import (
    action_hash,
    collision_free_state_key,
    java_list_hash,
    java_state_key,
    java_string_hash,
)

from ..vectors import cases

CASES = cases("state_keys.jsonl")


def parts(case: dict[str, Any]) -> tuple[Any, int, ActionRef, Event]:
    i = case["input"]
    a = i["action"]
    ref = ActionRef(a["name"], a["module"], a["qualName"], tuple(a["triggerConditions"]))
    key = i["key"]["value"] if i["key"] is not None else None
    return key, i["seqNum"], ref, Event(i["event"]["type"], i["event"]["attributes"])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_state_key_matches_java(case: dict[str, Any]) -> None:
    """KEY-1: key_seq_eventUUID_actionUUID byte for byte, with every intermediate hash."""
    key, seq, ref, event = parts(case)
    assert java_string_hash(ref.name) == case["name_hash"]
    assert java_list_hash(list(ref.triggers)) == case["trigger_conditions_hash"]
    assert action_hash(ref) == case["action_hash"]
    if "jdk25_state_key" in case:
        # Java 17 and 19+ print some doubles differently; we follow the shortest-digit (19+) form.
        assert jackson_sorted_json(event.attributes) == case["jdk25_event_uuid_input_utf8"]
        assert java_state_key(key, seq, ref, event) == case["jdk25_state_key"]
    else:
        assert jackson_sorted_json(event.attributes) == case["event_uuid_input_utf8"]
        assert java_state_key(key, seq, ref, event) == case["state_key"]


def test_collision_free_keys_differ_by_occurrence_and_escape_underscores() -> None:
    """KEY-3: the opt-in scheme separates occurrences and keeps business keys parseable."""
    ref = ActionRef("a", "m", "A.a", ("_input_event",))
    ev = InputEvent("same")
    k0 = collision_free_state_key("user_1", 0, ref, ev, 0)
    k1 = collision_free_state_key("user_1", 0, ref, ev, 1)
    assert k0 != k1
    assert k0.split("_")[0] == "user%5F1"
    assert java_state_key("user_1", 0, ref, ev) != java_state_key("user", 0, ref, ev)


class Twice(Agent):
    @action(InputEvent)
    @staticmethod
    def fan_out(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(Event("ping", {"n": 1}))
        ctx.send_event(Event("ping", {"n": 1}))

    @action("ping")
    @staticmethod
    def pong(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent("pong"))


@pytest.mark.parametrize("scheme", ["java", "collision-free"])
def test_identical_attributes_do_not_collide_in_the_runner(scheme: str) -> None:
    """KEY-2: Flink Agents #1084 would skip the second identical execution; the runner files repeats
    under the collision-free key, even in the Java scheme, so both run."""
    result = Runner(Twice, key_scheme=scheme).run([("k", 0)])
    assert result.outputs == {"k": ["pong", "pong"]}
