"""The configuration registry (spec CFG-1 … CFG-5): one declaration per key, parsed once, one error for a bad
value, a warning for a key meant for the runtime but unknown to it, and a docs table that cannot drift."""

from __future__ import annotations

import ast
import dataclasses
import re
import warnings
from pathlib import Path
from typing import Any, ClassVar

import pytest

from reference_runtime import (
    Agent,
    DurableCall,
    Event,
    InputEvent,
    OutputEvent,
    Runner,
    RunnerContext,
    ToolRequestEvent,
    action,
)
from reference_runtime.config import (
    ACTION_KEY,
    KEYS,
    ConfigError,
    ConfigKey,
    RuntimeSettings,
    UnknownConfigKeyWarning,
    markdown_table,
    parse_settings,
)
from reference_runtime.stores.memory import InMemoryStore

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "reference_runtime"


def double(x: int) -> int:
    return 2 * x


def add(a: int, b: int) -> int:
    return a + b


class Busy(Agent):
    """Exercises every path that reads a runtime key: a batch, the tool-call action, the reconciler switch."""

    config: ClassVar[dict[str, Any]] = {"tool-call.parallelism": 2, "action.work": {"n": 3}}
    tools: ClassVar[dict[str, Any]] = {"add": add}

    @action(InputEvent)
    @staticmethod
    async def work(event: Event, ctx: RunnerContext) -> None:
        outcomes = await ctx.durable_execute_all_async([DurableCall(double, (i,)) for i in range(3)])
        value = ctx.durable_execute(double, ctx.get_action_config_value("n"), reconciler=lambda: 0)
        call = {"id": "t1", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
        ctx.send_event(ToolRequestEvent("m", [call]))
        ctx.send_event(OutputEvent([o.value for o in outcomes] + [value]))


def _quiet(config: dict[str, Any], agent: type[Agent] = Busy) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Runner(agent, InMemoryStore(), config=config)
    return [w for w in caught if issubclass(w.category, UnknownConfigKeyWarning)]


# -- CFG-1: one registry -------------------------------------------------------------------------------------


def test_every_settings_field_is_exactly_one_registry_key() -> None:
    """CFG-1: the fields of RuntimeSettings and the registry's keys are the same set, one key per field."""
    attrs = [k.attr for k in (*KEYS, ACTION_KEY)]
    assert len(attrs) == len(set(attrs))
    assert set(attrs) == {f.name for f in dataclasses.fields(RuntimeSettings)}
    assert len({k.name for k in KEYS}) == len(KEYS)


def test_an_empty_config_gives_the_documented_defaults() -> None:
    """CFG-1: an empty config gives each key's default (the CPU count for tool-call.parallelism), and the
    registry reads its defaults from RuntimeSettings, so the two cannot disagree."""
    import os

    settings = parse_settings({})
    assert {k.name: getattr(settings, k.attr) for k in KEYS} == {
        "num-async-threads": 32,  # RUN-17
        "tool-call.parallelism": None,
        "tool-call.batch.timeout.ms": -1,
        "tool-call.async": True,
        "tool-call.parallel": True,
        "chat.async": True,
        "durable-execution.reconcilers": True,
        "flink-agents.event-delivery": "typed",
        "short-term-memory.state-ttl.ms": 0,  # MEM-14: values never expire
        "short-term-memory.state-ttl.update-type": "ON_READ_AND_WRITE",
        "short-term-memory.state-ttl.visibility": "NEVER_RETURN_EXPIRED",
    }
    assert settings == RuntimeSettings()
    assert all(key.default == getattr(RuntimeSettings(), key.attr) for key in (*KEYS, ACTION_KEY))
    assert "default" not in {f.name for f in dataclasses.fields(ConfigKey)}, "a second table of defaults"
    assert settings.batch_parallelism == (os.cpu_count() or 1)
    assert parse_settings({"tool-call.parallelism": "3"}).batch_parallelism == 3


def test_every_key_cites_a_spec_clause_and_keeps_the_flink_agents_names() -> None:
    """CFG-1: each key serves a clause defined in docs/spec.md; Flink Agents' own key names are used as is."""
    spec = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    for key in (*KEYS, ACTION_KEY):
        assert f"**{key.clause}**" in spec, key
        assert key.description and "|" not in key.description
    names = {k.name for k in KEYS}
    assert {"tool-call.async", "chat.async", "tool-call.parallelism", "tool-call.batch.timeout.ms"} <= names
    assert "num-async-threads" in names


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    # f"action.{name}" would read the action family around the registry.
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            found.add(str(node.values[0].value))
    return found


def test_no_runtime_module_reads_a_key_around_the_registry() -> None:
    """CFG-1: no module but config.py names a registry key (or the ``action.`` family) in a string, so every
    key is read through RuntimeSettings."""
    names = {k.name for k in KEYS}
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "config.py" and path.parent == PACKAGE:
            continue
        hits = {s for s in _string_constants(path) if s in names or s == "action."}
        if hits:
            offenders[str(path.relative_to(ROOT))] = sorted(hits)
    assert offenders == {}


# -- CFG-2: parsed once ---------------------------------------------------------------------------------------


class _WatchedDict(dict[str, Any]):
    reads = 0

    def get(self, *args: Any) -> Any:  # type: ignore[override]
        type(self).reads += 1
        return super().get(*args)

    def __getitem__(self, key: str) -> Any:
        type(self).reads += 1
        return super().__getitem__(key)


def test_the_runner_parses_once_and_never_reads_the_map_while_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """CFG-2: after Runner(...) no key is parsed again and the config map is not read by the runtime while
    batches, durable calls, tool calls and recoveries run; ctx.config is the map as given."""
    parses: list[str] = []
    original = ConfigKey.parse

    def counting(self: ConfigKey, value: object) -> Any:
        parses.append(self.name)
        return original(self, value)

    monkeypatch.setattr(ConfigKey, "parse", counting)
    from reference_runtime import CrashAt, FaultInjector, Phase

    runner = Runner(
        Busy,
        InMemoryStore(),
        config={"durable-execution.reconcilers": "on", "chat.async": "no"},
        injector=FaultInjector([CrashAt(Phase.AFTER_EFFECT, seq=0)]),
    )
    assert sorted(parses) == ["chat.async", "durable-execution.reconcilers", "tool-call.parallelism"]
    runner.config = _WatchedDict(runner.config)
    _WatchedDict.reads = 0
    result = runner.run([("k", 1), ("k", 2)])
    assert result.outputs == {"k": [[0, 2, 4, 6], [0, 2, 4, 6]]}
    assert runner.failovers == 1
    assert sorted(parses) == ["chat.async", "durable-execution.reconcilers", "tool-call.parallelism"]
    assert _WatchedDict.reads == 0


def test_settings_are_frozen() -> None:
    """CFG-2: the parsed settings cannot be changed behind the runtime's back."""
    runner = Runner(Busy, InMemoryStore())
    with pytest.raises(dataclasses.FrozenInstanceError):
        runner.settings.tool_call_parallelism = 9  # type: ignore[misc]
    with pytest.raises(TypeError):
        runner.settings.action_configs["work"] = {}  # type: ignore[index]
    assert runner.settings.action_config("work") == {"n": 3}
    assert runner.settings.action_config("other") == {}


# -- CFG-3: one error for a bad value -------------------------------------------------------------------------

BAD = [
    ("num-async-threads", "lots", "an integer >= 1"),
    ("num-async-threads", 2.5, "an integer >= 1"),
    ("tool-call.parallelism", -1, "an integer >= 1"),
    ("tool-call.parallelism", True, "an integer >= 1"),
    ("tool-call.batch.timeout.ms", "1s", "an integer"),
    ("tool-call.async", "maybe", "a boolean (true/false, 1/0, yes/no, on/off)"),
    ("tool-call.parallel", 2, "a boolean (true/false, 1/0, yes/no, on/off)"),
    ("chat.async", "", "a boolean (true/false, 1/0, yes/no, on/off)"),
    ("durable-execution.reconcilers", [], "a boolean (true/false, 1/0, yes/no, on/off)"),
    ("flink-agents.event-delivery", "typd", "one of 'typed', 'base'"),
    ("action.work", ["n", 3], "a mapping"),
]


@pytest.mark.parametrize(("key", "value", "expected"), BAD, ids=[f"{k}={v!r}" for k, v, _ in BAD])
def test_a_bad_value_is_one_config_error_naming_key_value_range_and_fix(key: str, value: Any, expected: str) -> None:
    """CFG-3: the runner refuses a bad value when it is built, before anything is stored, with one
    ConfigError naming the key, the value, what is accepted and the fix."""
    store = InMemoryStore()
    with pytest.raises(ConfigError) as info:
        Runner(Busy, store, config={key: value})
    error = info.value
    assert (error.key, error.value, error.expected) == (key, value, expected)
    message = str(error)
    assert f"config {key!r} must be {expected}, got {value!r}" in message
    assert "set e.g. {" in message
    assert isinstance(error, TypeError) and isinstance(error, ValueError)
    assert not store._entries


@pytest.mark.parametrize(
    ("config", "attr", "value"),
    [
        ({"num-async-threads": " 4 "}, "num_async_threads", 4),
        ({"tool-call.batch.timeout.ms": "-5"}, "tool_call_batch_timeout_ms", -5),
        ({"tool-call.parallelism": None}, "tool_call_parallelism", None),
        ({"chat.async": "OFF"}, "chat_async", False),
        ({"flink-agents.event-delivery": " base "}, "event_delivery", "base"),
        ({"action.work": None}, "action_configs", {}),
    ],
)
def test_accepted_spellings_and_none_as_absent(config: dict[str, Any], attr: str, value: Any) -> None:
    """CFG-3: integer strings and the boolean spellings of DE-14 are accepted; None is the default."""
    assert getattr(parse_settings(config), attr) == value


# -- CFG-4: unknown keys --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("tool-call.paralelism", "did you mean 'tool-call.parallelism'?"),
        ("tool_call.parallelism", "did you mean 'tool-call.parallelism'?"),
        ("num-async-thread", "did you mean 'num-async-threads'?"),
        ("chat.asynk", "did you mean 'chat.async'?"),
        ("durable-execution.reconciler", "did you mean 'durable-execution.reconcilers'?"),
        (
            "tool-call.retries",
            "under 'tool-call.', a prefix the runtime owns; its keys: tool-call.async, "
            "tool-call.batch.timeout.ms, tool-call.parallel, tool-call.parallelism",
        ),
        ("flink-agents.delivery-mode", "its keys: flink-agents.event-delivery"),
        ("action.wrok", "names no action of the agent: did you mean 'action.work'?"),
        ("action.zzz", "names no action of the agent; its actions: "),
    ],
)
def test_a_key_meant_for_the_runtime_warns_with_the_closest_name(key: str, hint: str) -> None:
    """CFG-4: a near miss names the closest known key; an unknown key under an owned prefix lists the
    family; an action config of no action names the closest action. The warning points at the caller."""
    caught = _quiet({key: {} if key.startswith("action.") else 1})
    assert len(caught) == 1, [str(w.message) for w in caught]
    warning = caught[0]
    assert isinstance(warning.message, UnknownConfigKeyWarning) and warning.message.key == key
    assert issubclass(warning.category, UserWarning)
    assert repr(key) in str(warning.message) and hint in str(warning.message)
    assert warning.filename == __file__


@pytest.mark.parametrize(
    "key",
    [
        "shop.discount",
        "greeter.style",
        "triage.urgent-words",
        "chat.model",
        "parallelism.default",
        "pipeline.name",
        "state.backend.type",
        "execution.checkpointing.interval",
        "taskmanager.numberOfTaskSlots",
        "kafkaBootstrapServers",
        "error-handling-strategy",
        "max-retries",
    ],
)
def test_keys_of_the_agent_and_of_other_systems_stay_silent(key: str) -> None:
    """CFG-4: a key that is no near miss and under no owned prefix is none of the runtime's business."""
    assert _quiet({key: "x"}) == []


def test_the_warning_points_at_a_direct_caller_of_parse_settings() -> None:
    """CFG-4: called outside a runner, the warning names the caller's line, not the runtime's."""
    with pytest.warns(UnknownConfigKeyWarning, match="did you mean 'chat.async'") as caught:
        parse_settings({"chat.asnyc": True})
    assert [w.filename for w in caught] == [__file__]


def test_known_keys_and_real_action_configs_do_not_warn() -> None:
    """CFG-4: a config of only registry keys and action configs of real actions is silent."""
    config: dict[str, Any] = {k.name: None for k in KEYS} | {"action.work": {"n": 1}}
    assert _quiet(config) == []


# -- CFG-5: the docs table ------------------------------------------------------------------------------------

_TABLE = re.compile(r"<!-- config-table:start -->\n(?P<table>.*?)\n<!-- config-table:end -->", re.S)


def _docs_table() -> str:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    match = _TABLE.search(text)
    assert match, "docs/configuration.md lost its <!-- config-table:start/end --> markers"
    return match["table"]


def test_the_docs_table_lists_every_key_with_its_type_and_default() -> None:
    """CFG-5: each registry key is a row of docs/configuration.md with the registry's type and default."""
    rows = {}
    for line in _docs_table().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells
    assert list(rows) == [k.name for k in (*KEYS, ACTION_KEY)]
    for key in (*KEYS, ACTION_KEY):
        _, kind, default, *_rest, clause = rows[key.name]
        assert (kind, default, clause) == (key.kind, key.default_doc, key.clause), key.name


def test_the_docs_table_is_the_generated_one() -> None:
    """CFG-5: the table is exactly what the registry generates; to update it, paste the output of
    ``python -c "from reference_runtime.config import markdown_table; print(markdown_table())"``."""
    assert _docs_table() == markdown_table()


def test_the_error_and_the_warning_are_exported_by_the_package_root() -> None:
    """CFG-3, CFG-4: users catch the error and filter the warning by the package root's names."""
    import reference_runtime

    assert reference_runtime.ConfigError is ConfigError
    assert reference_runtime.UnknownConfigKeyWarning is UnknownConfigKeyWarning
    assert {"ConfigError", "UnknownConfigKeyWarning"} <= set(reference_runtime.__all__)
