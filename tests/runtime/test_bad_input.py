"""Bad keys, inputs, values and options at the API: one typed error naming the input and the fix, never a
raw UnicodeEncodeError, RecursionError or an unrelated AttributeError (spec PAY-7, PAY-8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference_runtime import Agent, Event, InputEvent, OutputEvent, Runner, RunnerContext, action
from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.errors import ConfigError, InvalidValueError
from reference_runtime.stores.memory import InMemoryStore
from reference_runtime.stores.sqlite import SqliteStore


class Echo(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(event.attributes["input"]))


def _self_referencing() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


class SelfRefMemory(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("x", _self_referencing())


class SelfRefEvent(Agent):
    @action(InputEvent)
    @staticmethod
    def work(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(Event("custom", {"v": _self_referencing()}))


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("\ud800", 1, "the key of input #0 holds a lone surrogate"),
        ("k", "\udc80", r"input #0 \(key='k'\) holds a lone surrogate"),
        ("k", {"\udc80": 1}, "lone surrogate"),
        ("k", {1, 2}, r"input #0 \(key='k'\) is a set.*sorted list"),
        ("k", _self_referencing(), "refers to itself"),
        ("k", 10**5000, "integer of .* bits"),
    ],
    ids=["surrogate-key", "surrogate-input", "surrogate-dict-key", "set", "self-reference", "huge-int"],
)
@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_bad_inputs_are_refused_before_anything_is_stored(
    key: str, value: Any, match: str, store_kind: str, tmp_path: Path
) -> None:
    """PAY-7: lone surrogates, sets, self-references and oversized ints in keys and inputs."""
    store = InMemoryStore() if store_kind == "memory" else SqliteStore(tmp_path / "s.db")
    with pytest.raises(InvalidValueError, match=match):
        Runner(Echo, store).run([(key, value)])
    assert Runner(Echo, store).run([("k", [1, "ok"])]).outputs == {"k": [[1, "ok"]]}


def test_the_first_offending_item_of_an_input_is_the_one_named() -> None:
    """PAY-7: of several bad items the first is named, as for memory values (inputs and event attributes
    named the last one, since their walk popped items from the end)."""
    with pytest.raises(InvalidValueError, match=r"input #0 \(key='k'\)\[0\] is a set"):
        Runner(Echo).run([("k", [{1}, object()])])
    with pytest.raises(InvalidValueError, match=r"input #0 \(key='k'\)\['a'\] is a set"):
        Runner(Echo).run([("k", {"a": {1}, "b": object()})])


@pytest.mark.parametrize("agent", [SelfRefMemory, SelfRefEvent])
def test_self_referencing_memory_values_and_event_attributes_are_typed(agent: type[Agent]) -> None:
    """PAY-7: a self-referencing memory value or event attribute used to raise a raw RecursionError."""
    with pytest.raises(Exception) as info:
        Runner(agent).run([("k", 1)])
    chain = [info.value, info.value.__cause__]
    assert any(isinstance(e, InvalidValueError) for e in chain), chain
    assert "refers to itself" in str(info.value)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"mismatch": "bogus"}, "mismatch='bogus' is not a mismatch mode; use 'lenient' or 'strict'"),
        ({"config": {"num-async-threads": "abc"}}, "'num-async-threads' must be an integer >= 1, got 'abc'"),
        ({"config": {"num-async-threads": 0}}, "'num-async-threads' must be an integer >= 1, got 0"),
        # The alias is parsed as the key: 0 threads was taken for "not given" before it was one setting.
        ({"async_threads": 0}, "async_threads=0: async_threads is another name for config 'num-async-threads', "),
        ({"async_threads": -2}, "which must be an integer >= 1; pass such a value, or leave async_threads out"),
        ({"async_threads": "many"}, "async_threads='many'"),
        ({"codec": object()}, "codec must implement PayloadCodec"),
        ({"store": "sqlite:/tmp/x.db"}, r"store='sqlite:/tmp/x.db' is a string.*open_store\('sqlite:/tmp/x.db'\)"),
        ({"store": object()}, "store must implement ActionStateStore"),
    ],
)
def test_bad_options_name_the_option_and_the_fix(options: dict[str, Any], match: str) -> None:
    """PAY-8: options of the wrong kind fail at construction, naming the option."""
    with pytest.raises(ConfigError, match=match):
        Runner(Echo, **options)


def test_valid_options_still_accepted() -> None:
    """PAY-8: a numeric string for num-async-threads (as from a config file) is accepted."""
    runner = Runner(Echo, codec=CloudpickleCodec(), mismatch="strict", config={"num-async-threads": "4"})
    assert runner.settings.num_async_threads == 4
    assert Runner(Echo, async_threads="3").settings.num_async_threads == 3
