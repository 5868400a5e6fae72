"""The pytest plugin (entry point ``durable``).

Loading it imports only pytest and the standard library: the runtime, Hypothesis and freezegun are
imported by the fixtures and markers that need them, so tests that use none of them pay nothing (PLG-4).
Plugin state lives in ``config.stash``; per-test counts travel as ``user_properties`` so the terminal
summary and JUnit XML are right under pytest-xdist too.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from reference_runtime.exploration.clock import FrozenClock
    from reference_runtime.exploration.harness import DurableHarness
    from reference_runtime.exploration.ledger import Ledger
    from reference_runtime.exploration.sweep import Shard
    from reference_runtime.faults import CrashAt
    from reference_runtime.stores import StoreUrl

_STORE = pytest.StashKey[str]()
#: The store URL parsed, once for the session (at configure, or at the first test of the default memory:).
_PARSED_STORE = pytest.StashKey["StoreUrl"]()
_SEED = pytest.StashKey[int]()
_MAX_EXAMPLES = pytest.StashKey[int]()
_TOTALS = pytest.StashKey[dict[str, int]]()
_UPDATE_JOURNALS = pytest.StashKey[bool]()
_RE_EXECUTE = pytest.StashKey[bool]()
_JOURNAL_ROOT = pytest.StashKey["Path | None"]()
_KEEP_STORES = pytest.StashKey[bool]()
#: (test id, the lines naming its kept stores), in the order the tests ended (PLG-27).
_KEPT = pytest.StashKey[list[tuple[str, str]]]()
#: The harness of a test using the ``durable`` fixture, and the factory of its directory of kept stores.
_HARNESS = pytest.StashKey["tuple[DurableHarness, pytest.TempPathFactory]"]()
#: The session uses the plugin: a durable option or ini value is set, or a collected test takes a durable
#: fixture or marker (under xdist, a worker said so). Only then is the store/seed line printed (PLG-4).
_USED = pytest.StashKey[bool]()
_LINE_SHOWN = pytest.StashKey[bool]()

#: Where ``durable_clock`` starts virtual time.
CLOCK_START = "2026-01-01T00:00:00+00:00"
#: Modules that keep real time under ``durable_clock`` (pytest's own timing of tests).
REAL_TIME_MODULES = ("_pytest.timing",)
#: The fixtures and markers that make a test a durable one.
DURABLE_FIXTURES = frozenset({"durable", "durable_harness", "durable_ledger", "durable_clock", "durable_point"})
DURABLE_MARKERS = ("durable_sweep", "durable_schedule")
#: Hypothesis' own pytest plugin (entry point ``hypothesispytest``), installed with Hypothesis.
HYPOTHESIS_PLUGIN = "hypothesispytest"
#: property -> (singular, plural) of the terminal summary line.
_SUMMARY = (
    ("durable_fault_points", ("fault point swept", "fault points swept")),
    ("durable_schedules", ("crash schedule run", "crash schedules run")),
    ("durable_crashes", ("crash injected", "crashes injected")),
    ("durable_ledger_anomalies", ("ledger anomaly", "ledger anomalies")),
    ("durable_journals_checked", ("golden journal checked", "golden journals checked")),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("durable", "durable execution testing (pytest-durable)")
    group.addoption(
        "--durable-store",
        metavar="URL",
        default=None,
        help="store for the durable fixtures: memory: (default), sqlite:[FILE], redis://HOST:PORT/DB, "
        "kafka://HOST:PORT/TOPIC, or a scheme a store plugin registers. ini: durable_store",
    )
    group.addoption(
        "--durable-seed",
        metavar="N",
        default=None,
        help="seed for crash-schedule exploration (default: random, shown in the header). ini: durable_seed",
    )
    group.addoption(
        "--durable-max-examples",
        metavar="N",
        default=None,
        help="crash schedules per durable.explore() call (default 100). ini: durable_max_examples",
    )
    group.addoption(
        "--durable-update-journals",
        action="store_true",
        default=None,
        help="write or update golden journals instead of comparing. ini: durable_update_journals",
    )
    group.addoption(
        "--durable-journal-dir",
        metavar="DIR",
        default=None,
        help="directory of golden journals (default: durable_journals/ beside each test file). "
        "ini: durable_journal_dir",
    )
    group.addoption(
        "--durable-re-execute",
        action="store_true",
        default=None,
        help="sweeps run the agent up to every crash point instead of starting from snapshots of the "
        "crash-free run (slower, same verdict; for debugging). ini: durable_re_execute",
    )
    group.addoption(
        "--durable-keep-stores",
        action="store_true",
        default=None,
        help="keep a SQLite copy of the stores of every durable test, passing ones too (failing tests always "
        "keep theirs), and print the durable inspect command of each. ini: durable_keep_stores",
    )
    parser.addini("durable_store", "store URL for the durable fixtures", default="memory:")
    _addini(parser, "durable_seed", "seed for crash-schedule exploration", int)
    _addini(parser, "durable_max_examples", "crash schedules per durable.explore() call (default 100)", int)
    _addini(parser, "durable_update_journals", "write golden journals instead of comparing (yes/no)", bool)
    parser.addini("durable_journal_dir", "directory of golden journals", default="")
    _addini(parser, "durable_re_execute", "sweeps re-execute instead of starting from snapshots (yes/no)", bool)
    _addini(parser, "durable_keep_stores", "keep the stores of passing durable tests too (yes/no)", bool)


def _addini(parser: pytest.Parser, name: str, help: str, native: type[bool] | type[int]) -> None:
    """An ini option read as its raw text (and, in a native TOML config, as its TOML value too), so that
    pytest_configure parses it with the runtime's own parser and a bad value is one usage error naming the
    option (PLG-7) instead of pytest's conversion error at every test's setup."""
    union: Any = str | native  # text in an ini file or -o, the TOML value in a native [tool.pytest] table
    try:
        parser.addini(name, help, type=union, default="")
    except (AssertionError, TypeError, ValueError):  # a pytest without union ini types (before 9)
        parser.addini(name, help, default="")


def _option(config: pytest.Config, name: str) -> Any:
    value = config.getoption(f"--durable-{name.replace('_', '-')}")
    return config.getini(f"durable_{name}") if value is None else value


def _names(name: str) -> str:
    return f"--durable-{name.replace('_', '-')} (ini durable_{name})"


def _positive_int(name: str, text: Any) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise pytest.UsageError(f"{_names(name)} = {text!r}: expected an integer") from None
    if value < 0 or (name == "max_examples" and value == 0):
        raise pytest.UsageError(f"{_names(name)} = {text!r}: expected a positive integer")
    return value


def _flag(config: pytest.Config, name: str) -> bool:
    """A yes/no option, parsed once by the runtime's one boolean parser so the plugin accepts the same
    spellings as runner config (PLG-7). Unset costs no import of the runtime (PLG-4)."""
    value = _option(config, name)
    if value is None or value is False or value is True:
        return bool(value)
    if not str(value).strip():
        return False
    from reference_runtime.config import parse_bool
    from reference_runtime.errors import ConfigError

    try:
        return parse_bool(value, f"durable_{name}")
    except ConfigError as exc:
        raise pytest.UsageError(
            f"{_names(name)} = {value!r}: expected {exc.expected}; the flag --durable-{name.replace('_', '-')} "
            "alone turns it on"
        ) from None


def _journal_root(config: pytest.Config) -> Path | None:
    configured = str(_option(config, "journal_dir") or "").strip()
    if not configured:
        return None
    base = Path(configured)
    base = base if base.is_absolute() else config.rootpath / base
    if base.exists() and not base.is_dir():
        raise pytest.UsageError(f"{_names('journal_dir')} = {configured!r}: {base} is not a directory")
    return base


def _checked_store(url: str, *, probe: bool) -> StoreUrl | None:
    """``url`` parsed and checked before any test runs (CLI-4): a malformed URL, a missing client package, a
    scheme without isolated stores or a server that does not answer is one usage error, not a failure per
    test. The default ``memory:`` is not parsed here (None), so the runtime stays unimported until a test uses
    the store (PLG-4)."""
    if url in ("memory:", "memory"):
        return None
    from reference_runtime.errors import StoreError
    from reference_runtime.stores import check_store, parse_store_url

    try:
        if probe:
            return check_store(url, timeout=5.0, needs=("isolated",))
        return parse_store_url(url, needs=("isolated", "client"))
    except StoreError as exc:
        raise pytest.UsageError(f"--durable-store (ini durable_store): {exc}") from None


def _parsed_store(config: pytest.Config) -> StoreUrl:
    """The session's store URL, parsed once (spec STORE-20)."""
    parsed = config.stash.get(_PARSED_STORE, None)
    if parsed is None:
        from reference_runtime.stores import parse_store_url

        parsed = config.stash[_PARSED_STORE] = parse_store_url(config.stash[_STORE])
    return parsed


def pytest_configure(config: pytest.Config) -> None:
    url = str(_option(config, "store") or "memory:")
    parsed = _checked_store(url, probe=not hasattr(config, "workerinput"))
    config.stash[_STORE] = url
    if parsed is not None:
        config.stash[_PARSED_STORE] = parsed
    worker_seed = getattr(config, "workerinput", {}).get("durable_seed")
    seed_text = _option(config, "seed")
    if worker_seed is not None:
        seed = int(worker_seed)
    elif seed_text not in (None, ""):
        seed = _positive_int("seed", seed_text)
    else:
        seed = random.Random().randrange(2**32)
    config.stash[_SEED] = seed
    max_examples = _option(config, "max_examples")
    config.stash[_MAX_EXAMPLES] = 100 if max_examples in (None, "") else _positive_int("max_examples", max_examples)
    # Every option is parsed here, once: a bad value stops pytest before any test runs (PLG-7).
    config.stash[_UPDATE_JOURNALS] = _flag(config, "update_journals")
    config.stash[_RE_EXECUTE] = _flag(config, "re_execute")
    config.stash[_KEEP_STORES] = _flag(config, "keep_stores")
    config.stash[_JOURNAL_ROOT] = _journal_root(config)
    config.stash[_TOTALS] = {}
    config.stash[_KEPT] = []
    config.stash[_USED] = _configured(config, url)
    config.stash[_LINE_SHOWN] = False
    config.pluginmanager.register(_Totals(config.stash[_TOTALS], config.stash[_KEPT]), "durable-totals")
    config.addinivalue_line(
        "markers",
        "durable_sweep(agent, inputs, **options): run the test once crash-free "
        "and once per fault point of agent on inputs (ids crash=<point>)",
    )
    config.addinivalue_line(
        "markers",
        "durable_schedule(*selectors, mismatch='lenient', reconcilers=True): a "
        "crash schedule durable.explore() runs before exploring",
    )


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: every worker explores with the controller's seed."""
    node.workerinput["durable_seed"] = node.config.stash[_SEED]


def _configured(config: pytest.Config, url: str) -> bool:
    """A durable option or ini value is set (the store counts when it is not the default)."""
    names = ("seed", "max_examples", "update_journals", "journal_dir", "re_execute", "keep_stores")
    return url not in ("memory:", "memory") or any(_option(config, n) not in (None, "", False) for n in names)


def _uses_durable(item: pytest.Item) -> bool:
    fixtures = getattr(item, "fixturenames", ())
    return bool(DURABLE_FIXTURES.intersection(fixtures)) or any(item.get_closest_marker(m) for m in DURABLE_MARKERS)


def _store_line(config: pytest.Config) -> str:
    config.stash[_LINE_SHOWN] = True
    return f"durable: store {config.stash[_STORE]}, seed {config.stash[_SEED]} (repeat with --durable-seed)"


def pytest_report_header(config: pytest.Config) -> str | None:
    """The store and seed, before the tests when durable options are set (otherwise after collection, and
    only if a collected test is a durable one: an unrelated project sees no line, PLG-4)."""
    return _store_line(config) if config.stash[_USED] else None


@pytest.hookimpl(tryfirst=True)  # before the terminal reporter's, which asks for the lines below
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if not config.stash[_USED] and any(_uses_durable(item) for item in session.items):
        config.stash[_USED] = True
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller prints the line
            workeroutput["durable_used"] = True


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    return _store_line(config) if config.stash[_USED] and not config.stash[_LINE_SHOWN] else None


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any) -> None:
    """xdist controller: a worker collected durable tests, so the summary names the store and seed."""
    if getattr(node, "workeroutput", {}).get("durable_used"):
        node.config.stash[_USED] = True


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    _skip_idle_hypothesis_summary(session.config)


def _skip_idle_hypothesis_summary(config: pytest.Config) -> None:
    """Hypothesis' pytest plugin, which comes with Hypothesis (a dependency of this package), imports all of
    Hypothesis in its terminal summary even when nothing in the session used it: about half a second added
    to every pytest run of any project in the environment. When Hypothesis was never imported in this
    process, its statistics were not asked for and no test report carries its statistics or failing
    examples (xdist workers ship those to the controller), that summary has nothing to print: the plugin is
    unregistered before it runs, so the session pays nothing (PLG-4)."""
    plugin = config.pluginmanager.get_plugin(HYPOTHESIS_PLUGIN)
    if plugin is None or "hypothesis" in sys.modules:
        return
    option = getattr(plugin, "PRINT_STATISTICS_OPTION", None)
    keys = {getattr(plugin, "STATS_KEY", None), getattr(plugin, "FAILING_EXAMPLES_KEY", None)} - {None}
    if option is None or len(keys) != 2 or config.getoption(option, default=False):
        return  # not the plugin this was written against, or its statistics are wanted
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    reports = [r for rs in getattr(reporter, "stats", {}).values() for r in rs]
    if any(keys & set(getattr(r, "__dict__", {})) for r in reports):
        return
    config.pluginmanager.unregister(plugin)


class _Totals:
    """Sums the per-test ``durable_*`` properties from the reports (which xdist ships to the controller)."""

    def __init__(self, totals: dict[str, int], kept: list[tuple[str, str]]) -> None:
        self.totals = totals
        #: Why sweep scenarios re-executed, with how many (shown with -v, PLG-17).
        self.reasons: dict[str, int] = {}
        #: (test id, the lines naming its kept stores), in the order the tests ended (PLG-27).
        self.kept = kept

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name.startswith("durable_") and isinstance(value, int):
                self.totals[name] = self.totals.get(name, 0) + value
            elif name == "durable_start_reason" and isinstance(value, str):
                count, _, reason = value.partition(":")
                self.reasons[reason] = self.reasons.get(reason, 0) + int(count)
            elif name == "durable_kept_stores" and isinstance(value, str):
                self.kept.append((report.nodeid, value))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    totals = config.stash.get(_TOTALS, {})
    parts = [f"{totals[name]} {text[totals[name] != 1]}" for name, text in _SUMMARY if totals.get(name)]
    late = config.stash.get(_USED, False) and not config.stash.get(_LINE_SHOWN, True)  # xdist controller
    if parts or late:
        terminalreporter.write_sep("=", "durable")
    if late:
        terminalreporter.write_line(_store_line(config))
    if parts:
        terminalreporter.write_line("durable: " + ", ".join(parts))
    unchecked = totals.get("durable_points_without_effects", 0)
    if unchecked:
        # A sweep that checked no effect never passes silently (PLG-24).
        terminalreporter.write_line(
            f"durable: {unchecked} of {totals.get('durable_fault_points', unchecked)} fault points swept checked no "
            "side effect: none was booked to the ledger, so an effect a recovery repeated went unseen (declare "
            "effects: durable_ledger.wrap, durable_ledger.book) (PLG-24)"
        )
    starts = totals.get("durable_snapshot_starts", 0), totals.get("durable_re_executed_starts", 0)
    if any(starts) and config.option.verbose > 0:
        terminalreporter.write_line(
            f"durable: {starts[0]} sweep scenarios started from a snapshot of the crash-free run, "
            f"{starts[1]} re-executed (PLG-16)"
        )
        plugin = config.pluginmanager.get_plugin("durable-totals")
        for reason, n in sorted(getattr(plugin, "reasons", {}).items()):
            terminalreporter.write_line(f"  {n} re-executed: {reason} (PLG-17)")
    kept: list[tuple[str, str]] = config.stash.get(_KEPT, [])
    keep_all: bool = config.stash.get(_KEEP_STORES, False)
    if kept and not (parts or late):
        terminalreporter.write_sep("=", "durable")
    if kept and keep_all:
        terminalreporter.write_line(f"durable: stores kept for inspection (PLG-28), of {_tests(len(kept))}:")
        for nodeid, lines in kept:
            terminalreporter.write_line(nodeid)
            terminalreporter.write_line(lines)
    elif kept:
        terminalreporter.write_line(
            f"durable: the stores of {_tests(len(kept))} that failed were kept for inspection: the section "
            "'durable: stores kept for inspection' of each failure names them (PLG-27)"
        )


def _tests(n: int) -> str:
    return f"{n} test{'s' if n != 1 else ''}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A durable test that failed (or any, with ``--durable-keep-stores``) keeps a SQLite copy of the stores
    of its runs and its report names the ``durable inspect`` command of each (PLG-27)."""
    outcome: Any = yield
    report: pytest.TestReport = outcome.get_result()
    kept = item.stash.get(_HARNESS, None)
    if report.when != "call" or kept is None or not (report.failed or item.config.stash[_KEEP_STORES]):
        return
    harness, tmp_path_factory = kept
    if not harness.kept_runs:
        return
    try:
        directory = tmp_path_factory.mktemp(f"durable-stores-{_file_name(item.name)}")
        lines = "\n".join(f"  {k.label}:\n    {k.command}" for k in harness.keep_stores(directory))
    except Exception as exc:  # the test's own outcome stands; say why there is nothing to inspect
        lines = f"  the stores could not be kept: {type(exc).__name__}: {exc}"
    report.sections.append(("durable: stores kept for inspection", lines))
    item.user_properties.append(("durable_kept_stores", lines))


def _file_name(name: str) -> str:
    """A test's name as a short directory name (the parameters of a sweep test included)."""
    import re

    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", name).strip("-")[:80]


# -- sweeps -----------------------------------------------------------------------------------------------


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("durable_sweep")
    if marker is None:
        return
    where = metafunc.definition.nodeid
    if "durable_point" not in metafunc.fixturenames:
        # A collection error without a traceback: one line naming the test and the fix (PLG-9).
        pytest.fail(
            f"{where}: @pytest.mark.durable_sweep needs the durable fixture: add a `durable` argument "
            "to the test and call durable.run()",
            pytrace=False,
        )
    from reference_runtime.exploration.sweep import MarkerError, sweep_params

    try:
        params, ids = sweep_params(marker.args, dict(marker.kwargs), where, _xdist_workers(metafunc.config))
    except MarkerError as exc:
        pytest.fail(str(exc), pytrace=False)
    metafunc.parametrize("durable_point", params, ids=ids, indirect=True)


def _xdist_workers(config: pytest.Config) -> int:
    """How many xdist workers this session runs on (1 without xdist): ``shards="auto"``. Every worker
    collects, and is told the same count, so all of them collect the same parts."""
    workerinput: Any = getattr(config, "workerinput", None)
    return int(workerinput.get("workercount", 1)) if isinstance(workerinput, dict) else 1


@pytest.fixture
def durable_point(request: pytest.FixtureRequest) -> CrashAt | Shard | None:
    """The crash point of the current ``durable_sweep`` parametrization, or with ``shards=`` the part of
    the sweep (None: the crash-free run or no sweep)."""
    point: Any = getattr(request, "param", None)
    if point is None:
        return None
    from reference_runtime.exploration.sweep import LearningFailed

    if isinstance(point, LearningFailed):
        pytest.fail(point.message, pytrace=False)
    crash: CrashAt | Shard = point
    return crash


# -- fixtures ---------------------------------------------------------------------------------------------


def _journal_dir(config: pytest.Config, node_path: Path) -> Path:
    base = config.stash[_JOURNAL_ROOT]
    if base is not None:
        return base / node_path.stem
    return node_path.parent / "durable_journals" / node_path.stem


@pytest.fixture
def durable(
    request: pytest.FixtureRequest, durable_point: CrashAt | Shard | None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DurableHarness]:
    """Run an agent on the configured store: ``run``, ``crash``, ``sweep``, ``explore``,
    ``check_journal``, ``assert_deterministic``. See docs/plugin/reference.md."""
    from reference_runtime.exploration.harness import DurableHarness
    from reference_runtime.exploration.scenario import scenario_from_marker
    from reference_runtime.exploration.stats import Stats
    from reference_runtime.stores.factory import store_factory

    config = request.config
    url = config.stash[_STORE]
    stats = Stats()
    pinned = [scenario_from_marker(m.args, dict(m.kwargs)) for m in request.node.iter_markers("durable_schedule")]
    sweep = request.node.get_closest_marker("durable_sweep")
    stores = store_factory(_parsed_store(config), lambda: tmp_path_factory.mktemp("durable"))
    harness = DurableHarness(
        stores,
        url,
        stats=stats,
        journal_dir=_journal_dir(config, request.node.path),
        test_name=request.node.name,
        update_journals=config.stash[_UPDATE_JOURNALS],
        pinned=pinned,
        seed=config.stash[_SEED],
        max_examples=config.stash[_MAX_EXAMPLES],
        sweep=(sweep.args, dict(sweep.kwargs), durable_point) if sweep is not None else None,
        re_execute=config.stash[_RE_EXECUTE],
    )
    request.node.stash[_HARNESS] = (harness, tmp_path_factory)  # its stores are kept if the test fails (PLG-27)
    try:
        yield harness
    finally:
        del request.node.stash[_HARNESS]  # an item lives for the whole session; its harness need not
        stores.cleanup()  # STORE-11: nothing of the test's stores is left behind
    if harness.sweep_ran is False:  # only a durable_sweep test has False here
        info = getattr(request.node, "_fixtureinfo", None)
        if info is not None and not {"durable", "durable_harness"} & set(info.argnames):
            raise AssertionError(
                f"{request.node.nodeid}: marked durable_sweep but the test does not take the "
                "`durable` fixture (only a fixture built on it): add a `durable` argument and "
                "call durable.run() in the test"
            )
        raise AssertionError(
            f"{request.node.nodeid}: marked durable_sweep but never called durable.run() "
            "(the crash at this point was not exercised)"
        )
    for name, value in stats.properties():
        request.node.user_properties.append((name, value))


@pytest.fixture
def durable_harness(durable: DurableHarness) -> DurableHarness:
    """The ``durable`` fixture under its earlier name."""
    return durable


@pytest.fixture
def durable_ledger(durable: DurableHarness) -> Ledger:
    """The side-effect ledger the ``durable`` harness checks during crash runs."""
    return durable.ledger


@pytest.fixture
def durable_clock(durable: DurableHarness) -> Iterator[FrozenClock]:
    """Virtual time: freezes time (freezegun) for the test; the runtime's retries and timeouts and the agent
    all see it, and sleeping on it moves it instead of waiting."""
    from freezegun import freeze_time

    from reference_runtime.exploration.clock import FrozenClock

    # pytest times tests through _pytest.timing: left on real time, --durations and JUnit show real
    # durations rather than the frozen instant or the virtual seconds slept (PLG-10).
    with freeze_time(CLOCK_START, ignore=list(REAL_TIME_MODULES)) as frozen:
        clock = FrozenClock(frozen)
        durable.clock = clock
        yield clock
    durable.clock = None


# -- crash coverage (spec COV-1..COV-8) -------------------------------------------------------------------
# Its options and hooks are a plugin module of their own, loaded with this one; it imports only pytest (PLG-4).
pytest_plugins = ["pytest_durable.crash_coverage"]
