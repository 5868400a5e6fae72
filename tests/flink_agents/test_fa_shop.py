"""An agent written only against flink_agents 0.3.1 behaves on the reference runtime like its
reference_runtime twin (spec FA-1..FA-4, FA-6, EVT-1)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action
from flink_agents.api.events.chat_event import ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.runner_context import RunnerContext as FlinkRunnerContext

from pytest_durable.sweep import PointOutcome, sweep
from reference_runtime import ActionFailedError, CrashAt, FaultInjector, Phase, Runner, RunResult
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.sqlite import SqliteStore

from . import shop_flink, shop_reference, shop_services

INPUTS = [
    ("alice", {"order": "o1", "items": [30, 12]}),
    ("bob", {"order": "o2", "items": [5]}),
    ("alice", {"order": "o3", "items": [7, 7]}),
]
CONFIG = {"shop.discount": 2}


def _reset() -> None:
    shop_services.BANK.charges.clear()
    shop_services.MAILER.sent.clear()


def _fresh_world() -> InMemoryStore:
    # The sweep opens a store for every run: each run starts with an empty bank and mailbox.
    _reset()
    return InMemoryStore()


def _sweep(agent: Any) -> list[PointOutcome]:
    return sweep(agent, INPUTS, _fresh_world, config=CONFIG)


def _verdicts(outcomes: list[PointOutcome]) -> dict[tuple[Any, ...], bool]:
    # The function id is left out: the tool call is `notify` itself in the twin, FunctionTool.call here.
    return {(p.phase, p.key, p.seq, p.action, p.call_index): o.ok for o in outcomes for p in [o.point]}


@pytest.mark.parametrize(
    "flink, twin",
    [(shop_flink.ShopAgent, shop_reference.ShopTwin), (shop_flink.UnsafeShopAgent, shop_reference.UnsafeShopTwin)],
    ids=["reconciled", "unsafe"],
)
def test_the_flink_agent_passes_and_fails_the_same_sweep_points_as_its_twin(flink: Any, twin: Any) -> None:
    """FA-1: crashed at every fault point, the flink_agents agent and its reference twin reach the same
    points and pass or fail at the same ones: the reconciled agent everywhere, the unsafe one where a crash
    lands between the charge and its record (a duplicated charge)."""
    flink_outcomes = _sweep(flink)
    twin_outcomes = _sweep(twin)
    assert _verdicts(flink_outcomes) == _verdicts(twin_outcomes)
    failed = [o for o in flink_outcomes if not o.ok]
    if flink is shop_flink.ShopAgent:
        assert not failed, [o.violations for o in failed]
    else:
        assert failed and all(o.point.phase is Phase.AFTER_EFFECT and o.point.action == "pay" for o in failed)
        assert any("#2" in v for o in failed for v in o.violations), "the second charge shows in the outputs"


def test_outputs_and_memory_equal_the_twins() -> None:
    """FA-1, FA-6: same outputs and memory; the config option (discount) and the action config
    (reconcile) reach the actions; the tool resource is called durably."""
    _reset()
    flink = Runner(shop_flink.ShopAgent, config=CONFIG).run(INPUTS)
    _reset()
    twin = Runner(shop_reference.ShopTwin, config=CONFIG).run(INPUTS)
    assert (
        flink.outputs
        == twin.outputs
        == {
            "alice": ["receipt o1 40 #1, mailed o1", "receipt o3 12 #1, mailed o3"],
            "bob": ["receipt o2 3 #1, mailed o2"],
        }
    )
    assert flink.memory == twin.memory
    assert flink.memory["alice"] == {"orders": 2, "receipts": {"o1": "receipt o1 40 #1", "o3": "receipt o3 12 #1"}}


def _user_calls(result: RunResult) -> list[tuple[Any, ...]]:
    # The tool call is left out: it is a different callable in each (FunctionTool.call vs notify).
    return [(e.call_id, e.function_id, e.args_digest, e.outcome) for e in result.journal if e.call_id.action != "done"]


def test_function_ids_and_digests_are_those_of_the_twin() -> None:
    """FA-3: every durable call the user's actions make has the function id, args digest and call id
    of the same call made by the reference_runtime twin."""
    _reset()
    flink = _user_calls(Runner(shop_flink.ShopAgent, config=CONFIG).run(INPUTS))
    _reset()
    twin = _user_calls(Runner(shop_reference.ShopTwin, config=CONFIG).run(INPUTS))
    assert flink == twin
    assert {f for _, f, _, _ in flink} == {
        "tests.flink_agents.shop_services.price_of",
        "tests.flink_agents.shop_services.charge",
    }


def test_the_context_is_a_flink_agents_runner_context() -> None:
    """FA-2: the action's ctx is an instance of the real RunnerContext ABC, with no abstract method left."""
    from reference_runtime.flink_agents_compat.context import FlinkContext

    assert issubclass(FlinkContext, FlinkRunnerContext)
    assert not FlinkContext.__abstractmethods__
    abstract = {
        n
        for n, v in vars(FlinkRunnerContext).items()
        if getattr(v, "__isabstractmethod__", False) or getattr(getattr(v, "fget", None), "__isabstractmethod__", False)
    }
    assert {
        "send_event",
        "short_term_memory",
        "sensory_memory",
        "long_term_memory",
        "durable_execute",
        "durable_execute_async",
        "config",
        "action_config",
        "get_action_config_value",
        "get_resource",
        "agent_metric_group",
        "action_metric_group",
        "close",
    } <= abstract
    for name in abstract:
        assert name in vars(FlinkContext), f"{name} is not implemented by the adapter"
    seen: list[object] = []
    original = shop_flink.quote

    def spy(event: Any, ctx: Any) -> None:
        seen.append(ctx)
        original(event, ctx)

    shop_flink.quote = spy  # type: ignore[assignment]
    try:
        _reset()
        Runner(shop_flink.ShopAgent).run(INPUTS[:1])
    finally:
        shop_flink.quote = original  # type: ignore[assignment]
    assert seen and all(isinstance(c, FlinkRunnerContext) for c in seen)
    assert (
        inspect.signature(FlinkContext.durable_execute).parameters["reconciler"].kind is inspect.Parameter.KEYWORD_ONLY
    )


class Scored(Event):
    """A user event with a declared pydantic field instead of attributes."""

    type: str = "scored"
    score: int


RECEIVED: list[Any] = []


class Relay(Agent):
    """Hands a user event with attributes, one with a declared field and a built-in event with a chat
    message to the next actions, which record what they receive."""

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(shop_flink.Quoted(order=event.input, amount=3))
        ctx.send_event(Scored(score=7))
        reply = ChatMessage(role=MessageRole.ASSISTANT, content=f"hi {event.input}")
        ctx.send_event(ChatResponseEvent(request_id=event.id, response=reply))

    @action(shop_flink.Quoted.EVENT_TYPE, "scored", ChatResponseEvent.EVENT_TYPE)
    @staticmethod
    def record(event: Event, ctx: RunnerContext) -> None:
        RECEIVED.append(event)
        value = {
            shop_flink.Quoted: lambda e: e.amount,
            Scored: lambda e: e.score,
            ChatResponseEvent: lambda e: e.response.content,
        }[type(event)](event)
        ctx.send_event(OutputEvent(output=value))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_user_events_survive_recovery_as_their_class(kind: str, tmp_path: Any) -> None:
    """EVT-1, FA-4: crashed right after `start` completed, recovery skips it and `record` still receives
    a Quoted, a Scored and a ChatResponseEvent whose response is a ChatMessage, built from the stored data;
    the outputs equal the crash-free run's."""

    files = iter(range(2))  # one file per run: the crash run must not open the crash-free run's records

    def store() -> Any:
        return InMemoryStore() if kind == "memory" else SqliteStore(tmp_path / f"s{next(files)}.db")

    RECEIVED.clear()
    baseline = Runner(Relay, store()).run([("k", "a")])
    RECEIVED.clear()
    injector = FaultInjector([CrashAt(Phase.AFTER_COMPLETE, action="start")])
    result = Runner(Relay, store(), injector=injector).run([("k", "a")])
    assert injector.fired
    assert [type(e) for e in RECEIVED] == [shop_flink.Quoted, Scored, ChatResponseEvent]
    assert isinstance(RECEIVED[2].response, ChatMessage)
    assert result.outputs == baseline.outputs == {"k": [3, 7, "hi a"]}


def test_an_event_class_that_refuses_its_stored_data_is_a_located_error() -> None:
    """EVT-2: a stored flink_agents event whose class no longer accepts the data fails where it is read,
    naming key, seq and action."""
    import json

    from reference_runtime.errors import EventClassError, Location
    from reference_runtime.flink_agents_compat.events import wrap
    from reference_runtime.records import ActionState
    from reference_runtime.stores.native import decode_state, encode_state

    doc = json.loads(encode_state(ActionState(output_events=[wrap(Scored(score=1))])))
    doc["outputs"][0]["fields"] = {"$map": {"score": "not a number"}}
    with pytest.raises(EventClassError) as info:
        decode_state(json.dumps(doc).encode(), Location("k", 2, "start"))
    assert "Scored" in str(info.value) and (info.value.key, info.value.seq, info.value.action) == ("k", 2, "start")


def test_cluster_delivery_hands_actions_plain_events() -> None:
    """FA-4: with `flink-agents.event-delivery: base` actions receive plain flink_agents Events, as on a
    cluster: an agent that calls `X.from_event` (the shop) still works; one that relies on the typed class
    (Relay reads `event.input` of its InputEvent) fails here, as it would on a cluster."""
    _reset()
    config = {**CONFIG, "flink-agents.event-delivery": "base"}
    assert Runner(shop_flink.ShopAgent, config=config).run(INPUTS[:1]).outputs == {
        "alice": ["receipt o1 40 #1, mailed o1"]
    }
    with pytest.raises(ActionFailedError, match=r"AttributeError.*input") as info:
        Runner(Relay, config={"flink-agents.event-delivery": "base"}).run([("k", "a")])
    assert info.value.action == "start"
