"""Every example agent the installed flink_agents package ships, imported unchanged, with the inputs and the
fakes (supplied through ``resources``) its tests run it on, and the outputs a cluster would give with those
fakes. The ReAct example builds its agent inside ``main()`` with a Flink job around it; :func:`react_agent`
builds the same agent from the same arguments, and registers the example's environment resources."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import flink_agents.examples.quickstart as quickstart
from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.resource import ResourceDescriptor, ResourceName, ResourceType
from flink_agents.api.tools.tool import Tool
from flink_agents.examples.quickstart.agents.custom_types_and_resources import (
    ProductReview,
    ProductReviewAnalysisRes,
    ProductReviewSummary,
    notify_shipping_manager,
    review_analysis_react_prompt,
)
from flink_agents.examples.quickstart.agents.math_agent import MathAgent
from flink_agents.examples.quickstart.agents.parallel_chat_agent import INPUT_TEXT, ParallelChatAgent
from flink_agents.examples.quickstart.agents.product_suggestion_agent import ProductSuggestionAgent
from flink_agents.examples.quickstart.agents.review_analysis_agent import ReviewAnalysisAgent
from flink_agents.examples.quickstart.agents.table_review_analysis_agent import TableReviewAnalysisAgent
from flink_agents.examples.rag.rag_agent_example import MyRAGAgent
from flink_agents.plan.tools.bash.bash_tool import BashTool
from flink_agents.plan.tools.function_tool import FunctionTool
from flink_agents.runtime.skill.skill_tools import LoadSkillTool
from pyflink.common import Row

from reference_runtime.flink_agents_compat.local import ReferenceExecutionEnvironment

from . import example_fakes as fakes

REVIEWS = [
    ("p1", ProductReview(id="p1", review="Great sound, I love them")),
    ("p2", ProductReview(id="p2", review="The box arrived crushed in shipping")),
]
ANALYSES = {
    "p1": [{"id": "p1", "score": 5, "reasons": []}],
    "p2": [{"id": "p2", "score": 1, "reasons": ["shipping damage"]}],
}
#: What the quickstart's notify_shipping_manager tool prints when it runs (it only prints).
NOTIFIED = "Transportation issue for product [p2]"
HISTOGRAM = ["0%", "0%", "50%", "0%", "50%"]
#: The quickstart review agents' calls: p1 one model request; p2 a request, the shipping tool, a request.
REVIEW_CALLS = {"model": 3, "tool": 1}


def react_agent() -> Agent:
    """The agent of ``react_agent_example.main()``: a ReActAgent over an Ollama setup, the review prompt and
    output schema, with the example's environment resources (the Ollama connection and the shipping tool)."""
    env = ReferenceExecutionEnvironment()
    env.add_resource(
        "ollama_server",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_CONNECTION, request_timeout=120),
    ).add_resource("notify_shipping_manager", ResourceType.TOOL, Tool.from_callable(notify_shipping_manager))
    agent = ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ResourceName.ChatModel.OLLAMA_SETUP,
            connection="ollama_server",
            model="qwen3:8b",
            tools=["notify_shipping_manager"],
        ),
        prompt=review_analysis_react_prompt,
        output_schema=ProductReviewAnalysisRes,
    )
    return env.agent(agent)


def yaml_agent() -> Agent:
    """The agent ``yaml_workflow_agent_example`` loads from ``yaml_review_analysis_agent.yaml`` by name."""
    env = ReferenceExecutionEnvironment()
    env.load_yaml(Path(quickstart.__file__).parent / "yaml_review_analysis_agent.yaml")
    return env.agent("review_analysis_agent")


@dataclass
class Example:
    """One shipped example agent, how to feed it, and what it must answer."""

    name: str
    agent: Callable[[], Any]
    inputs: list[tuple[str, Any]]
    fakes: Callable[[], dict[str, Any]]
    outputs: dict[str, list[Any]]
    #: Calls of the services its crash-free run makes, by service (model requests, store queries, tool runs).
    calls: dict[str, int]

    def build(self) -> Any:
        return self.agent()


def _analyst() -> dict[str, Any]:
    return {"ollama_server": fakes.FakeConnection.answering(fakes.review_analyst)}


def _store() -> fakes.FakeVectorStore:
    return fakes.FakeVectorStore.over(
        [
            "Apache Flink is a stream processing framework for stateful computations.",
            "Python is a programming language.",
        ]
    )


EXAMPLES = [
    # The quickstart review agent in its three forms: class, table input (Rows), YAML.
    Example("review", lambda: ReviewAnalysisAgent, REVIEWS, _analyst, ANALYSES, REVIEW_CALLS),
    Example(
        "table_review",
        lambda: TableReviewAnalysisAgent,
        [
            ("p1", Row(id="p1", review="Great sound, I love them", ts=1)),
            ("p2", Row(id="p2", review="The box arrived crushed in shipping", ts=2)),
        ],
        _analyst,
        ANALYSES,
        REVIEW_CALLS,
    ),
    Example("yaml_review", yaml_agent, REVIEWS, _analyst, ANALYSES, REVIEW_CALLS),
    Example("react", react_agent, REVIEWS, _analyst, ANALYSES, REVIEW_CALLS),
    Example(
        "product_suggestion",
        lambda: ProductSuggestionAgent,
        [("p1", ProductReviewSummary(id="p1", score_hist=HISTOGRAM, unsatisfied_reasons=["noise", "weight"]))],
        lambda: {"ollama_server": fakes.FakeConnection.answering(fakes.suggester)},
        {"p1": [{"id": "p1", "score_hist": HISTOGRAM, "suggestions": ["fix noise", "fix weight"]}]},
        {"model": 1},
    ),
    Example(
        "math_skills",
        lambda: MathAgent,
        [("q1", "Compute: (2 + 3) * 4"), ("q2", "Compute: 2 ^ 10")],
        lambda: {"ollama_server": fakes.FakeConnection.answering(fakes.calculator)},
        {"q1": ["20"], "q2": ["1024"]},
        {"model": 6, "tool": 4},  # per question: load the skill, run bc, answer
    ),
    Example(
        "parallel_chat",
        lambda: ParallelChatAgent,
        [("1", {"id": 1, "text": INPUT_TEXT})],
        lambda: {"ollama_server": fakes.FakeConnection.answering(fakes.sentiment)},
        {"1": [{"id": 1, "text": INPUT_TEXT, "summary": "taste:positive, service:negative"}]},
        {"model": 3},
    ),
    Example(
        "rag",
        lambda: MyRAGAgent,
        [("001", "What is Apache Flink?"), ("003", "What is Python?")],
        lambda: {
            "knowledge_base": _store(),
            "ollama_chat_connection": fakes.FakeConnection.answering(fakes.rag_answerer),
        },
        {
            "001": ["Answer: 1. Apache Flink is a stream processing framework for stateful computations."],
            "003": ["Answer: 1. Python is a programming language."],
        },
        {"model": 2, "store": 2},
    ),
]


#: The tool classes whose ``call`` the built-in tool action runs for the examples: the agents' own Python
#: tools, and the skill tools ``@skills`` adds.
TOOL_CLASSES = (FunctionTool, BashTool, LoadSkillTool)
#: Which service the durable calls of each built-in action make.
SERVICE_OF_ACTION = {"chat_model_action": "model", "tool_call_action": "tool", "context_retrieval_action": "store"}


@contextlib.contextmanager
def counting(resources: dict[str, Any]) -> Iterator[Callable[[], Counter[str]]]:
    """While inside, counts every call a run makes to its services, by service (``model``, ``store``,
    ``tool``): the fakes' own logs, and each run of a tool's ``call`` (wrapped in place, its name and
    module kept, so durable calls keep their function ids). Kept outside the runtime: what really ran."""
    tools: Counter[str] = Counter()
    lock = threading.Lock()
    saved = {cls: cls.call for cls in TOOL_CLASSES}

    def counted(call: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(call)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:
                tools["tool"] += 1
            return call(self, *args, **kwargs)

        return run

    for cls, call in saved.items():
        cls.call = counted(call)  # type: ignore[method-assign]
    try:

        def count() -> Counter[str]:
            made = Counter(tools)
            made["model"] = sum(len(f.calls) for f in resources.values() if isinstance(f, fakes.FakeConnection))
            made["store"] = sum(len(f.queries) for f in resources.values() if isinstance(f, fakes.FakeVectorStore))
            return made

        yield count
    finally:
        for cls, call in saved.items():
            cls.call = call  # type: ignore[method-assign]
