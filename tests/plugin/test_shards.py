"""One sweep split into parts that together are the whole sweep (PLG-29): the engine's ``shard=(k, n)``,
``durable.sweep(shard=...)`` and ``durable_sweep(..., shards=n)`` over xdist workers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_durable.sweep import PointOutcome, Shard, shard_points, sweep
from reference_runtime.exploration import snapshot_start as snap
from reference_runtime.stores.memory import InMemoryStore

from . import test_snapshot_start as differential
from .test_snapshot_start import CASES, ROOT, Many, _observed, _setup, _wall_clock_masked

pytest_plugins = ["pytester"]


def _parts(name: str, n: int, re_execute: bool) -> list[PointOutcome]:
    case = CASES[name]
    outcomes: list[PointOutcome] = []
    for k in range(n):
        with _setup(case) as (ledger, options):
            part = sweep(case.agent, case.inputs, case.store, ledger, re_execute=re_execute, shard=(k, n), **options)
        outcomes += part
    return outcomes


def _whole(name: str, re_execute: bool) -> tuple[list[PointOutcome], str]:
    case = CASES[name]
    with _setup(case) as (ledger, options):
        outcomes = sweep(case.agent, case.inputs, case.store, ledger, re_execute=re_execute, **options)
    return outcomes, _wall_clock_masked(repr(_observed(outcomes, ledger)))


# Agents that raise out of the sweep have no outcomes to split (the strict random one raises or not by the
# random draw it gets, which a part draws at another place in the sequence); every other case is split.
SPLIT = [name for name in CASES if name not in ("fails-always", "strict-nondeterministic-fails-after-crash")]
#: Agents whose runs depend on the runs before them in the process (a seeded random sequence, a counter, a
#: clock that moves on with every run, PLG-13): a part runs fewer scenarios before a point than the whole
#: sweep, so what these read differs, as between any two sweeps; the parts still cover every point once.
HISTORY = {
    "tutorial-buggy",
    "chat-and-tools-serial",
    "chat-and-tools-parallel",
    "random-result",
    "counts-mod-four",
    "random-argument",
    "counts-across-runs",
}


@pytest.mark.parametrize("re_execute", [False, True], ids=["snapshots", "re-executed"])
@pytest.mark.parametrize("name", SPLIT)
def test_the_parts_of_a_sweep_are_the_whole_sweep(name: str, re_execute: bool) -> None:
    """PLG-29: for every agent of the snapshot differential test, the parts of n = 1, 2 and 3 shards, in
    order, hold the whole sweep's points once each with the same starts; for every agent whose runs do not
    depend on earlier runs in the process, the same outcomes too: violations (messages included),
    outputs, memory, journals and the verdict."""
    assert set(CASES) >= HISTORY  # no stale name hides a case from the full comparison
    whole, seen = _whole(name, re_execute)
    case = CASES[name]
    for n in (1, 2, 3):
        parts = _parts(name, n, re_execute)
        assert [o.point for o in parts] == [o.point for o in whole]
        assert [(o.start, o.start_reason) for o in parts] == [(o.start, o.start_reason) for o in whole]
        if name in HISTORY:
            continue
        ledger = differential.Ledger() if case.effects is not None else None
        assert _wall_clock_masked(repr(_observed(parts, ledger))) == seen


def test_the_parts_cost_about_the_same_and_never_split_a_shared_recovery() -> None:
    """PLG-29: a long single action's points are cut where the estimated costs balance — the calls each
    recovery replays (paid once by the points sharing it) and a fixed cost per point — not in halves of the
    points (the late points replay more), and every cut falls where a new recovery starts (COST-4)."""
    from pytest_durable.sweep import points_to_crash
    from reference_runtime.exploration.sweep import _POINT_COST

    ref = snap.record(Many, [("k", 2000)], InMemoryStore, None, {})
    snap.prepare(ref, None)
    points = points_to_crash(ref.trace)
    first, second = (shard_points(ref, points, (k, 2)) for k in range(2))
    assert first + second == points
    assert len(first) > len(second)  # replays grow with the call index: more, cheaper points first

    def cost(part: list[Any]) -> int:
        keys = [snap.recovery_key(ref, p) for p in part]
        replays = sum(p.call_index or 0 for i, p in enumerate(part) if i == 0 or keys[i] != keys[i - 1])
        return replays + _POINT_COST * len(part)

    costs = [cost(first), cost(second)]
    assert abs(costs[0] - costs[1]) < 0.02 * sum(costs), costs
    assert snap.recovery_key(ref, second[0]) != snap.recovery_key(ref, first[-1])
    assert shard_points(ref, points, (0, 1)) == points
    many = [shard_points(ref, points, (k, 50)) for k in range(50)]
    assert [p for part in many for p in part] == points
    assert all(many)


@pytest.mark.parametrize("bad", [(2, 2), (-1, 2), (0, 0), (0,), [0, 2], (0.0, 2), "0/2"])
def test_a_bad_shard_is_one_value_error_naming_the_form(bad: object) -> None:
    with pytest.raises(ValueError, match=r"shard must be a pair \(k, n\) of ints with 0 <= k < n"):
        sweep(Many, [("k", 2)], InMemoryStore, shard=bad)  # type: ignore[arg-type]


LONG = """
import pytest
from hypothesis import given
from hypothesis import strategies as st
from benchmarks.p9_sweep import Many
from pytest_durable import Shard

@pytest.mark.durable_sweep(Many, [("k", 40)], shards="auto")
def test_long(durable, durable_point):
    result = durable.run()
    assert result.outputs == {"k": [sum(2 * i for i in range(40))]}
    assert durable_point is None or isinstance(durable_point, Shard)
"""

BROKEN = """
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action

SENT = []

def charge(n):
    return n

class Charges(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event: Event, ctx: RunnerContext) -> None:
        total = 0
        for i in range(event.attributes["input"]):
            total += ctx.durable_execute(charge, i)
        SENT.append(total)  # an effect outside any durable call, counted into the output
        ctx.send_event(OutputEvent(len(SENT)))

@pytest.mark.durable_sweep(Charges, [("k", 6)], shards=2)
def test_charges(durable):
    durable.run()
"""


def test_shards_marker_runs_one_test_per_part_under_xdist(pytester: pytest.Pytester) -> None:
    """PLG-29: ``shards="auto"`` under ``-n 2`` collects ``crash=none`` and two parts, which pass; run
    without xdist it is one part."""
    pytester.makepyfile(test_long=LONG)
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-n", "2", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*PASSED*test_long?shard=1/2?*"])
    result.stdout.fnmatch_lines(["*PASSED*test_long?shard=2/2?*"])
    alone = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist", "-v")
    alone.assert_outcomes(passed=2)
    alone.stdout.fnmatch_lines(["*test_long?shard=1/1?*PASSED*"])


def test_a_part_fails_listing_its_violations(pytester: pytest.Pytester) -> None:
    """PLG-29: a part reports the violations at its points, naming the part; the crash-free test passes."""
    pytester.makepyfile(test_broken=BROKEN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-v")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*durable invariants violated at * fault points (part 1 of 2)*", "*REC-6*"])


@pytest.mark.parametrize("shards", ["0", "-1", "2.0", "'two'", "True"])
def test_a_bad_shards_value_is_a_one_line_collection_error(pytester: pytest.Pytester, shards: str) -> None:
    pytester.makepyfile(test_bad=LONG.replace('shards="auto"', f"shards={shards}"))
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(['*durable_sweep\'s shards= must be an int >= 1 or "auto"*'])
    assert "Traceback" not in result.stdout.str()


def test_a_part_whose_crash_free_run_changed_says_so() -> None:
    """PLG-29: a part whose crash-free run reaches another number of points than at collection fails
    saying why, instead of sweeping a set of points other parts may also hold."""
    from reference_runtime.exploration.harness import DurableHarness

    harness = DurableHarness(InMemoryStore, "memory:", sweep=((Many, [("k", 3)]), {}, Shard(0, 2, 99)))
    with pytest.raises(AssertionError, match="reached 12 fault points here but 99 at collection"):
        harness.run()


def test_a_long_sweep_shares_the_crash_free_journal_instead_of_copying_it() -> None:
    """P9b: what a sweep keeps per point does not copy the calls every recovery replays — two scenarios'
    journals hold the very same entry for a call both replayed, and a converged scenario's journal is made of
    parts of the lists it shares — so a sweep's memory does not grow with the square of the agent's length
    (652 MB for 2 000 calls before, 88 MB after: docs/benchmarks.md). Their contents are checked against
    re-execution by the differential test."""
    from reference_runtime.exploration.snapshot_start import Joined

    outcomes = sweep(Many, [("k", 40)], InMemoryStore)
    # Calls 30-37: their recoveries converge at a later call (the last calls' run to the end).
    late = [o for o in outcomes if o.start == "snapshot" and 30 <= (o.point.call_index or 0) <= 37]
    assert late and all(isinstance(o.result.journal, Joined) for o in late)
    replayed = [[e for e in o.result.journal if e.source == "replayed"] for o in late[:2]]
    assert len(replayed[0]) >= 30 and replayed[0][:30] == replayed[1][:30]
    assert all(a is b for a, b in zip(replayed[0][:30], replayed[1][:30], strict=True))

    # Nor is any list of them copied per point: every part holding more than a few entries (the prefix
    # before the crash, the replays before the crashed call, the crash-free rest) is a list all the late
    # scenarios share, and no scenario keeps a list of its own longer than the calls it ran itself.
    def lists(journal: Any) -> list[tuple[Any, int, int]]:
        """The lists a journal view is made of (a shared recovery's journal is a view itself)."""
        if not isinstance(journal, Joined):
            return [(journal, 0, len(journal))]
        return [leaf for seq, _, _ in journal._parts for leaf in lists(seq)] if journal._parts else []

    long = [{id(seq) for seq, start, stop in lists(o.result.journal) if stop - start > 8} for o in late]
    assert len(set().union(*long)) == 3  # the crash-free journal, the replays' template, the rest restamped
    assert all(len(seq) <= 12 for o in late for seq, _, _ in lists(o.result.journal) if id(seq) not in long[0])


def test_a_sweep_collects_its_oldest_generation_less_often_and_restores_the_thresholds() -> None:
    """P9b: during a sweep the collector's oldest generation runs 100 times less often (its full collections
    walked everything the sweep keeps); the thresholds are back as they were after it, even when it raised."""
    import gc

    from reference_runtime import Agent, Event, InputEvent, OutputEvent, RunnerContext, action

    seen: list[tuple[int, int, int]] = []

    fail = []

    def look() -> int:
        seen.append(gc.get_threshold())
        if fail:
            raise RuntimeError("down")
        return 1

    class Looks(Agent):
        @action(InputEvent)
        @staticmethod
        def handle(event: Event, ctx: RunnerContext) -> None:
            ctx.send_event(OutputEvent(ctx.durable_execute(look)))  # raises out of the action when it fails

    before = gc.get_threshold()
    sweep(Looks, [("k", 1)], InMemoryStore)
    assert gc.get_threshold() == before
    assert seen and all(t == (before[0], before[1], before[2] * 100) for t in seen)
    fail.append(True)
    with pytest.raises(Exception, match="down"):
        sweep(Looks, [("k", 1)], InMemoryStore)
    assert gc.get_threshold() == before


_PARTS = st.lists(
    st.lists(st.integers(0, 9), max_size=6).flatmap(
        lambda xs: st.tuples(st.just(xs), st.integers(0, len(xs))).flatmap(
            lambda t: st.tuples(st.just(t[0]), st.just(t[1]), st.integers(t[1], len(t[0])))
        )
    ),
    max_size=4,
)


@given(parts=_PARTS, nest=st.booleans(), start=st.integers(-8, 8), stop=st.integers(-8, 8), n=st.integers(0, 9))
def test_a_joined_journal_reads_as_the_list_of_its_parts(
    parts: list[tuple[list[int], int, int]], nest: bool, start: int, stop: int, n: int
) -> None:
    """The read-only journal a converged or shared scenario keeps (P9b) is, to every reader, the list its
    parts make: length, iteration, indexing, slicing, equality, ``after``, ``index``; nested too (a shared recovery's
    journal joined again)."""
    from reference_runtime.exploration.snapshot_start import Joined

    joined = Joined(*parts)
    want = [x for seq, a, b in parts for x in seq[a:b]]
    if nest:
        joined = Joined((joined, 0, len(joined)), ([7, 8], 0, 2))
        want += [7, 8]
    assert len(joined) == len(want) and list(joined) == want and joined == want and want == joined
    assert joined[start:stop] == want[start:stop]
    assert list(joined.after(n)) == want[n:]
    for i in range(-len(want), len(want)):
        assert joined[i] == want[i]
    with pytest.raises(IndexError):
        joined[len(want)]
    assert repr(joined) == repr(want)
    for value in range(10):  # a check finds a crash in a trace kept as a view (COST-7)
        try:
            expected: int | None = want.index(value, start, stop)
        except ValueError:
            expected = None
        if expected is None:
            with pytest.raises(ValueError):
                joined.index(value, start, stop)
        else:
            assert joined.index(value, start, stop) == expected
        assert (value in joined) == (value in want)
