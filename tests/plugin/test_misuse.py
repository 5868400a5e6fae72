"""Misuse of markers and fixtures gets one clear message (PLG-9); a fresh fake world per run (PLG-8);
the REC-6 memory message shows the values and names the likely cause."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_durable.sweep import MarkerError, sweep_marker
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action
from reference_runtime.exploration.harness import DurableHarness, DurableInvariantError
from reference_runtime.stores.memory import InMemoryStore

from . import verdict_agents
from .projects import REFUND_AGENT
from .verdict_agents import Reconciled

pytest_plugins = ["pytester"]


def _collect(pytester: pytest.Pytester, test: str) -> pytest.RunResult:
    pytester.makepyfile(agent_mod=REFUND_AGENT, test_user="import pytest\nfrom agent_mod import Refund\n" + test)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider")


def test_a_dict_of_inputs_is_refused_at_collection(pytester: pytest.Pytester) -> None:
    """PLG-9: a dict instead of a list of (key, input) pairs: one line naming the fix, no traceback, and
    no test runs (exit status 2, an interrupted collection)."""
    result = _collect(
        pytester,
        """
@pytest.mark.durable_sweep(Refund, {"order-1": 30})
def test_sweep(durable):
    durable.run()
""",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*test_sweep: durable_sweep's inputs are a dict; pass a list of (key, input) "
            "pairs, e.g. list(inputs.items()) for {key: input}"
        ]
    )
    result.stdout.no_fnmatch_line("*too many values to unpack*")
    result.stdout.no_fnmatch_line("*Traceback*")


def test_store_in_the_marker_names_the_option_to_use(pytester: pytest.Pytester) -> None:
    """PLG-9: store= in the marker is refused at collection, naming --durable-store."""
    result = _collect(
        pytester,
        """
@pytest.mark.durable_sweep(Refund, [("k", 1)], store=object())
def test_sweep(durable):
    durable.run()
""",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*durable_sweep: store= is not supported here: the store comes from --durable-store URL (ini durable_store)*"]
    )
    result.stdout.no_fnmatch_line("*got multiple values*")


def test_a_sweep_test_without_the_durable_fixture_says_so(pytester: pytest.Pytester) -> None:
    """PLG-9: a durable_sweep test that only has a fixture built on `durable` is told to take `durable`,
    not that it "never called durable.run()"."""
    result = _collect(
        pytester,
        """
@pytest.mark.durable_sweep(Refund, [("k", 1)])
def test_sweep(durable_ledger):
    pass
""",
    )
    result.stdout.fnmatch_lines(["*marked durable_sweep but the test does not take the `durable` fixture*"])
    result.stdout.no_fnmatch_line("*never called durable.run()*")


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((Reconciled, {"k": 1}), {}, "inputs are a dict"),
        ((Reconciled, [("k", 1, 2)]), {}, "must be a non-empty list of (key, input) pairs"),
        ((Reconciled, []), {}, "must be a non-empty list"),
        ((Reconciled, "k"), {}, "must be a non-empty list"),
        (("Reconciled", [("k", 1)]), {}, "first argument must be an Agent subclass"),
        ((Reconciled,), {}, "takes 2 positional arguments, got 1"),
        ((Reconciled, [("k", 1)]), {"store": None}, "store= is not supported here"),
        ((Reconciled, [("k", 1)]), {"injector": None}, "injector= is not supported here"),
        ((Reconciled, [("k", 1)]), {"mismach": "strict"}, "unknown runner option(s) ['mismach']"),
    ],
)
def test_marker_arguments_are_checked(args: tuple[Any, ...], kwargs: dict[str, Any], message: str) -> None:
    """PLG-9: every bad marker argument is a MarkerError naming the test and the fix."""
    with pytest.raises(MarkerError) as info:
        sweep_marker(args, kwargs, "test_x.py::test_y")
    assert message in str(info.value) and str(info.value).startswith("test_x.py::test_y")


def test_store_passed_to_the_harness_names_the_alternative() -> None:
    """PLG-9: durable.run(..., store=...) says where the store comes from instead of a TypeError about
    multiple values."""
    with pytest.raises(MarkerError, match="store= is not supported here: the store comes from --durable-store"):
        DurableHarness(InMemoryStore, "memory:").run(Reconciled, [("k", 1)], store=InMemoryStore())


# -- PLG-8: a fresh world per run ---------------------------------------------------------------------------


def _reconciled_sweep(monkeypatch: pytest.MonkeyPatch, fresh: bool) -> DurableHarness:
    harness = DurableHarness(InMemoryStore, "memory:")
    fake: Any = harness.world(verdict_agents.Payments) if fresh else verdict_agents.Payments()
    monkeypatch.setattr(verdict_agents, "PAYMENTS", harness.ledger.client(fake, "payments", methods=["charge"]))
    harness.sweep(Reconciled, [("k", 5)])
    return harness


def test_a_shared_fake_misleads_the_reconciler(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLG-8: without a fresh world, the crash-free run's charge is still in the fake when the crash run's
    reconciler asks, so it wrongly answers "already charged": the ledger sees the charge lost."""
    with pytest.raises(DurableInvariantError, match=r"PLG-3: effect payments\.charge for k/0/handle/0 lost"):
        _reconciled_sweep(monkeypatch, fresh=False)


def test_each_run_gets_a_fresh_world(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLG-8: durable.world(factory) makes a new fake for the crash-free run and for each crash scenario,
    so the reconciler is tested against what happened in its own run."""
    harness = _reconciled_sweep(monkeypatch, fresh=True)
    points = len(harness.points(Reconciled, [("k", 5)]))
    world = verdict_agents.PAYMENTS._obj
    assert len(world.worlds) == 1 + points  # the crash-free run, then one crash run per fault point
    assert all(w.charges == {"k/0/handle/0": 5} for w in world.worlds)


def test_world_forwards_to_the_current_fake() -> None:
    """PLG-8: attribute access goes to the fake of the current run."""
    harness = DurableHarness(InMemoryStore, "memory:")
    world = harness.world(verdict_agents.Payments)
    world.charge("a", 1)
    first = world.current
    harness.ledger.new_run("next run")
    assert world.current is not first and world.receipt("a") is None
    with pytest.raises(TypeError, match="takes a callable"):
        harness.world(verdict_agents.Payments())  # type: ignore[arg-type]


# -- REC-6: the memory difference ---------------------------------------------------------------------------

ATTEMPTS: list[int] = []


class CountsAttempts(Agent):
    """Writes how many times its action ran into memory: a crash before completion changes it, while
    two crash-free runs (each on a fresh counter) agree and assert_deterministic passes."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        ATTEMPTS.append(1)
        ctx.short_term_memory.set("attempts", ATTEMPTS.count(1))
        ctx.send_event(OutputEvent(event.attributes["input"]))


def test_memory_difference_shows_path_expected_and_got(monkeypatch: pytest.MonkeyPatch) -> None:
    """REC-6: the message names the key and path and shows the crash-free and the recovered value; the
    hint names the likely cause, not assert_deterministic (which passes for this agent)."""
    harness = DurableHarness(InMemoryStore, "memory:")
    world = harness.world(list)
    monkeypatch.setattr(f"{__name__}.ATTEMPTS", world)
    harness.assert_deterministic(CountsAttempts, [("k", 1)])
    with pytest.raises(DurableInvariantError) as info:
        harness.crash(CountsAttempts, [("k", 1)], "handle:before-complete")
    text = str(info.value)
    assert "REC-6: memory differs after a crash at before-complete" in text
    assert "key 'k' path 'attempts': crash-free 1, after recovery 2" in text
    assert "two crash-free runs agree, so the crash caused the difference" in text
    assert "assert_deterministic" not in text


def test_memory_diff_marks_absent_paths() -> None:
    """REC-6: a path on one side only is shown as absent."""
    from pytest_durable.sweep import memory_diff

    text = memory_diff({"k": {"a": 1}}, {"k": {"b": 2}})
    assert "key 'k' path 'a': crash-free 1, after recovery absent" in text
    assert "key 'k' path 'b': crash-free absent, after recovery 2" in text


# -- the hint names the real cause of a difference between two crash-free runs -----------------------------


class CountingQuotes:
    """A fake quote service that numbers its answers: one kept at module level counts on across runs."""

    def __init__(self) -> None:
        self.calls = 0

    def quote(self, item: str) -> str:
        self.calls += 1
        return f"{item} #{self.calls}"


QUOTES = CountingQuotes()


def quote(item: str) -> str:
    return QUOTES.quote(item)


class QuotesThroughASharedFake(Agent):
    """Asks the quote service inside durable_execute, as it should; the fake behind it is shared."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(ctx.durable_execute(quote, event.attributes["input"])))


class StampsTimeOutsideDurableCalls(Agent):
    """Looks the item up durably but stamps the output with the time read outside any durable call."""

    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        import time

        found = ctx.durable_execute(str.upper, event.attributes["input"])
        ctx.send_event(OutputEvent(f"{found} at {time.time_ns()}"))


def test_a_module_level_counting_fake_is_named_as_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLG-26: results computed inside durable_execute that differ between two crash-free runs on the same
    arguments are blamed on state kept across runs, naming the function and call, with durable.world()."""
    monkeypatch.setattr(f"{__name__}.QUOTES", CountingQuotes())
    harness = DurableHarness(InMemoryStore, "memory:")
    with pytest.raises(DurableInvariantError) as info:
        harness.crash(QuotesThroughASharedFake, [("k", "tea")], "handle:before-complete")
    text = str(info.value)
    assert "REC-6: outputs differ after a crash at before-complete" in text
    assert text.endswith(
        "\nnote: two crash-free runs already differ although their durable calls take the same arguments: a "
        "durable function (or a fake or client it calls) returned different results for the same arguments, "
        f"first function {__name__}.quote at call index 0 (call k/0/handle/0), because it keeps state across "
        "runs (e.g. a module-level fake or counter). Build such fakes with durable.world(factory) so that each "
        "run gets a fresh one (PLG-8)"
    )
    assert "outside any durable call" not in text


def test_the_same_fake_made_by_durable_world_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLG-26: the fix the hint names works: a fresh fake per run, and the crash changes nothing."""
    harness = DurableHarness(InMemoryStore, "memory:")
    monkeypatch.setattr(f"{__name__}.QUOTES", harness.world(CountingQuotes))
    assert harness.crash(QuotesThroughASharedFake, [("k", "tea")], "handle:before-complete").ok


def test_time_read_outside_durable_calls_is_named_as_the_cause() -> None:
    """PLG-26: when the durable calls and their results are the same in two crash-free runs, the note
    blames a value computed outside any durable call."""
    harness = DurableHarness(InMemoryStore, "memory:")
    with pytest.raises(DurableInvariantError) as info:
        harness.crash(StampsTimeOutsideDurableCalls, [("k", "tea")], "handle:before-complete")
    assert str(info.value).endswith(
        "\nnote: two crash-free runs already differ although their durable calls are the same: the action "
        "computes outputs or memory from state outside its inputs and memory (time, randomness, globals) "
        "outside any durable call. Compute such values inside durable_execute so they are recorded and "
        "replayed (REC-2)"
    )
