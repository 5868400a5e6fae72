"""The agents of the installed flink_agents package's end-to-end tests, which need a Flink job there, run on
the reference Runner with the inputs those tests give them, and answer what the tests expect of a cluster
(spec FA-8, MEM-14): pydantic and Row inputs, a MemoryRef sent in an event, Row outputs, an action that
edits its input in place, and short-term memory TTL."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flink_agents.api.core_options import AgentExecutionOptions, ShortTermMemoryTtlUpdate, ShortTermMemoryTtlVisibility
from flink_agents.e2e_tests.e2e_tests_integration.execute_test_agent import (
    ExecuteMultipleTestAgent,
    ExecuteTestAgent,
    ExecuteTestData,
    ExecuteWithAsyncExceptionTestAgent,
    ExecuteWithAsyncTestAgent,
)
from flink_agents.e2e_tests.e2e_tests_integration.flink_integration_agent import (
    DataStreamAgent,
    DataStreamToTableAgent,
    ItemData,
    TableAgent,
)
from flink_agents.e2e_tests.e2e_tests_integration.short_term_memory_ttl_test import (
    ShortTermMemoryTtlTestAgent,
    TtlTestInput,
)
from flink_agents.e2e_tests.e2e_tests_integration.workflow_test import MyAgent as WorkflowAgent
from pyflink.common import Row

from pytest_durable.sweep import sweep
from reference_runtime import ActionFailedError, Runner, VirtualClock
from reference_runtime.flink_agents_compat import cluster_outputs
from reference_runtime.stores.memory import InMemoryStore

ITEMS = [
    ItemData(id=1, review="great", review_score=4.5),
    ItemData(id=2, review="poor", review_score=1.0),
    ItemData(id=1, review="again", review_score=3.0),
]


@pytest.fixture
def virtual_sleep(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    """A virtual clock that the agents' own ``time.sleep`` advances (they sleep to let time pass)."""
    clock = VirtualClock(start=1_000.0)
    monkeypatch.setattr(time, "sleep", clock.advance)
    return clock


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        (ExecuteTestAgent, [{"id": 1, "result": 11}, {"id": 2, "result": 15}]),
        (ExecuteMultipleTestAgent, [{"id": 1, "result": 12}, {"id": 2, "result": 20}]),
        (ExecuteWithAsyncTestAgent, [{"id": 1, "result": 18}, {"id": 2, "result": 30}]),
        (
            ExecuteWithAsyncExceptionTestAgent,
            [{"id": 1, "error": "Test error: 1"}, {"id": 2, "error": "Test error: 5"}],
        ),
    ],
)
def test_the_durable_execute_agents_take_pydantic_inputs(agent: Any, expected: list[dict[str, Any]]) -> None:
    """FA-8: a pydantic input arrives as its JSON data (the agents `model_validate` it), a pydantic output
    leaves as its dict, as on a cluster; and every crash recovers to the same outputs."""
    inputs = [("1", ExecuteTestData(id=1, value=1)), ("2", ExecuteTestData(id=2, value=5))]
    result = Runner(agent).run(inputs)
    assert [out for key in ("1", "2") for out in result.outputs[key]] == expected
    assert all(o.ok for o in sweep(agent, inputs, InMemoryStore))


def test_the_datastream_agent_reads_a_memory_ref_sent_in_an_event(virtual_sleep: VirtualClock) -> None:
    """FA-8: the first action sends the MemoryRef `set` returned; the second reads it with `memory.get`
    from the dict it arrives as; the tool runs; counts live in short-term memory per key."""
    result = Runner(DataStreamAgent).run([(str(i.id), i) for i in ITEMS])
    suffix = " first action, log success=True, second action call my tool"
    assert result.outputs == {
        "1": [
            {"id": 1, "review": "great" + suffix, "review_score": 4.5, "memory_info": {"total_reviews": 1}},
            {"id": 1, "review": "again" + suffix, "review_score": 3.0, "memory_info": {"total_reviews": 2}},
        ],
        "2": [{"id": 2, "review": "poor" + suffix, "review_score": 1.0, "memory_info": {"total_reviews": 1}}],
    }
    assert result.memory["1"]["status"] == {"total_reviews": 2}


def test_an_action_that_edits_its_input_in_place_replays_the_same_input() -> None:
    """FA-8: TableAgent appends to its input row and to the event it received; each delivery is a fresh
    object, so the crash-free run and every recovery see the input as it was sent (a runner that handed
    out its own copy would replay "first action first action second action")."""
    inputs = [("1", Row(id=1, review="good", review_score=4.0)), ("2", {"id": 2, "review": "bad", "review_score": 1.0})]
    result = Runner(TableAgent).run(inputs)
    assert cluster_outputs(result) == {
        "1": [Row(id=1, review="good first action second action", review_score=4.0)],
        "2": [{"id": 2, "review": "bad first action second action", "review_score": 1.0}],
    }
    outcomes = sweep(TableAgent, inputs, InMemoryStore)
    assert len(outcomes) > 10 and all(o.ok for o in outcomes), [v for o in outcomes for v in o.violations]


def test_a_row_output_is_a_row_on_the_cluster_side() -> None:
    """FA-8: an OutputEvent's Row travels as Row JSON data (`RunResult.outputs`) and comes back as a
    `pyflink` Row, as a cluster's job emits it (`cluster_outputs`)."""
    result = Runner(DataStreamToTableAgent).run([("1", ITEMS[0])])
    assert result.outputs == {
        "1": [
            {
                "type": "Row",
                "values": [1, "great first action second action", 4.5],
                "fields": ["id", "review", "review_score"],
            }
        ]
    }
    assert cluster_outputs(result) == {"1": [Row(id=1, review="great first action second action", review_score=4.5)]}


def _ttl_config(ttl_ms: int | None, options: bool) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if ttl_ms is not None:
        config[AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_MS.get_key()] = ttl_ms
    if options:
        config[AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE.get_key()] = (
            ShortTermMemoryTtlUpdate.ON_CREATE_AND_WRITE
        )
        config[AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY.get_key()] = (
            ShortTermMemoryTtlVisibility.NEVER_RETURN_EXPIRED
        )
    return config


@pytest.mark.parametrize(
    ("ttl_ms", "sleep_ms", "options", "expected"),
    [
        (1000, 0, True, ["event1|NEW", "event2|NEW", "event1|EXISTING"]),  # visible before expiry
        (0, 50, True, ["event1|NEW", "event2|NEW", "event1|EXISTING"]),  # 0 disables it
        (None, 50, True, ["event1|NEW", "event2|NEW", "event1|EXISTING"]),  # off by default
        (50, 200, True, ["event1|NEW", "event2|NEW", "event1|NEW"]),  # expires
        (50, 200, False, ["event1|NEW", "event2|NEW", "event1|NEW"]),  # default update type and visibility
    ],
)
def test_short_term_memory_ttl_as_the_end_to_end_test_expects(
    ttl_ms: int | None, sleep_ms: int, options: bool, expected: list[str], virtual_sleep: VirtualClock
) -> None:
    """MEM-14, FA-8: the scenarios of Flink Agents' short-term-memory TTL test, in virtual time (the agent's
    sleeps advance the runner's clock), give the outputs that test expects of a cluster."""
    inputs = [("test_key", TtlTestInput(event_key=key, sleep_ms=sleep_ms)) for key in ("event1", "event2", "event1")]
    result = Runner(ShortTermMemoryTtlTestAgent, config=_ttl_config(ttl_ms, options), clock=virtual_sleep).run(inputs)
    assert result.outputs == {"test_key": expected}


def test_the_workflow_agent_fails_on_the_reference_runtime_as_on_a_cluster() -> None:
    """FA-8: the agent of the package's workflow test reads `.path` of the MemoryRef it took from an event.
    That passes only on Flink Agents' LocalRunner, which does not serialize events; on a cluster the ref
    arrives as its dict form, and so it does here: the same AttributeError, located."""
    with pytest.raises(ActionFailedError, match=r"'dict' object has no attribute 'path'.*action='second_action'"):
        Runner(WorkflowAgent).run([("bob", "The message from bob")])
