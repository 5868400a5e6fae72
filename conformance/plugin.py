"""The conformance kit's pytest plugin: ``clause``/``capability`` markers, per-capability levels in the
terminal summary, the JSON and Markdown report files, the session seed and known-failures files. Load with
``-p conformance.plugin`` (``conformance.certify`` does) or ``pytest_plugins = ["conformance.plugin"]`` in a
conftest. It holds only pytest hooks: the report, its levels and renderings are :mod:`conformance.report`.

Results travel as ``user_properties`` (clause, capability, backend, declared capabilities), so they reach
the controller under pytest-xdist and appear in JUnit XML. Everything a run records lives on one
:class:`_Recorder` per pytest config, so nested runs (pytester, ``durable certify`` inside a test) keep
their results apart.
"""

from __future__ import annotations

import fnmatch
import importlib
import secrets
from collections import Counter, defaultdict
from collections.abc import Sequence, Sized
from pathlib import Path
from typing import Any

import pytest

from . import SUITE_VERSION
from . import known_failures as kf
from .attribution import explain
from .marks import CAPABILITY_ATTR, capability_of, clauses_of
from .paths import output_problem, read_known_failures
from .report import INCOMPLETE, Report, write_reports
from .session import CHECK_MODULES, RECORDER_NAME, register_assert_rewrite

_RECORDER = pytest.StashKey["_Recorder"]()


class KnownFailureWarning(pytest.PytestWarning):
    """An entry of the known-failures file matches no test selected for this run (spec CONF-5)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("durable-conformance")
    group.addoption(
        "--durable-conformance-report",
        metavar="FILE",
        default=None,
        help="write the conformance report as JSON to FILE (a .md twin is written next to it)",
    )
    group.addoption(
        "--durable-known-failures",
        metavar="FILE",
        default=None,
        help="run the checks listed in FILE as strict xfail (lines: '<node id or suffix>  # reason'); "
        "overrides the ini value durable_known_failures",
    )
    group.addoption(
        "--durable-write-known-failures",
        metavar="FILE",
        default=None,
        help="write a fresh known-failures file listing every test that failed in this run",
    )
    group.addoption(
        "--durable-conformance-seed",
        metavar="N",
        type=int,
        default=None,
        help="seed of the kit's randomized checks (default: a fresh random seed, printed)",
    )
    group.addoption(
        "--durable-clause",
        metavar="ID",
        action="append",
        default=None,
        help="run only the checks citing one of these clause ids (repeatable, or comma-separated)",
    )
    parser.addini("durable_known_failures", "known-failures file (relative to the ini file)", default="")


def pytest_configure(config: pytest.Config) -> None:
    # Import the check modules now, assertion-rewritten, once for the whole session: a nested in-process
    # run (pytester) that imported them first would drop them when it ends, leaving the package pointing at
    # modules of a runtime copy the next run no longer uses.
    register_assert_rewrite()
    for name in CHECK_MODULES:
        importlib.import_module(name)
    config.addinivalue_line("markers", "clause(id): the spec clause a conformance check proves")
    config.addinivalue_line("markers", "capability(name): the backend capability a check needs")
    config.stash[_RECORDER] = _Recorder(config)


@pytest.fixture
def durable_store_factory() -> Any:
    """Fallback: a store suite needs the backend's ``durable_store_factory`` fixture."""
    raise pytest.UsageError(
        "define a fixture `durable_store_factory` returning a conformance.StoreFactory: a "
        "session-scoped fixture in your test module or conftest.py, or a function-scoped "
        "one in your StoreConformance subclass (docs/conformance/howto.md)"
    )


@pytest.fixture
def durable_runner_factory() -> Any:
    """Fallback: a runner suite needs the backend's ``durable_runner_factory`` fixture."""
    raise pytest.UsageError(
        "define a fixture `durable_runner_factory` returning a conformance.RunnerFactory: a "
        "session-scoped fixture in your test module or conftest.py, or a function-scoped "
        "one in your RunnerConformance subclass (docs/conformance/howto.md)"
    )


def pytest_itemcollected(item: pytest.Item) -> None:
    """The kit's checks carry their clauses and capability as attributes (conformance.marks): give them
    the registered markers now, before ``-m`` selection and the report read them."""
    fn = getattr(item, "function", None)
    for cid in getattr(fn, "durable_conformance_clauses", ()):
        item.add_marker(pytest.mark.clause(cid))
    cap = getattr(fn, "durable_conformance_capability", None)
    if cap is not None and item.get_closest_marker("capability") is None:
        item.add_marker(pytest.mark.capability(cap))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """KIT-1: a failed check names the clauses it proves in its message (the values compared come from the
    assertion itself), whatever the backend raised."""
    clauses = clauses_of(item)
    try:
        return (yield)
    except AssertionError as exc:
        text = str(exc)
        first = text.split("\n", 1)[0]
        missing = [cid for cid in clauses if cid not in first]
        if missing:
            exc.args = (
                f"{', '.join(clauses)} violated: {text}"
                if len(missing) == len(clauses)
                else f"[{', '.join(clauses)}] {text}",
                *exc.args[1:],
            )
        raise
    except pytest.fail.Exception as exc:
        msg = exc.msg or ""
        if clauses and not any(cid in msg for cid in clauses):
            raise pytest.fail.Exception(f"{', '.join(clauses)} violated: {msg}", pytrace=exc.pytrace) from None
        raise
    except Exception as exc:
        if not clauses or capability_of(item) is None:
            raise
        raise AssertionError(f"{', '.join(clauses)} violated: {explain(exc)}") from exc


def _recorder(config: pytest.Config) -> _Recorder | None:
    return config.stash.get(_RECORDER, None)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class _Recorder:
    """Per-config state: seed, known failures, and the check results gathered on this process."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[dict[str, Any]] = []
        self.failures: dict[str, str] = {}
        #: One report per backend, built when the session finishes (on the controller under xdist).
        self.reports: list[Report] = []
        self.notes: list[str] = []
        self._warned = False
        #: Kit checks per capability of each suite (a test class, or a module for checks outside one),
        #: counted before any deselection (KIT-7).
        self.suite_checks: dict[str, Counter[str]] = {}
        workerinput: dict[str, Any] = getattr(config, "workerinput", {})
        seed = workerinput.get("durable_conformance_seed", config.getoption("--durable-conformance-seed", None))
        self.seed: int = int(seed) if seed is not None else secrets.randbelow(2**32)
        self.known_path, known_source = self._known_failures_path()
        self.known: list[kf.KnownFailure] = []
        if not _is_worker(config):
            self._check_output_paths()
        if self.known_path is not None:
            # Read once, here: the same read is the KIT-6 check, so a bad file stops the run before any test.
            option, _, value = known_source.partition(" ")
            try:
                self.known = read_known_failures(
                    option, value, self.known_path, write_option="--durable-write-known-failures"
                )
            except kf.KnownFailuresError as exc:
                raise pytest.UsageError(str(exc)) from exc
        config.pluginmanager.register(self, RECORDER_NAME)

    def _known_failures_path(self) -> tuple[Path | None, str]:
        """The known-failures file and how it was given (option or ini line), for error messages."""
        option = self.config.getoption("--durable-known-failures", None)
        if option:
            return (self.config.invocation_params.dir / str(option)).resolve(), f"--durable-known-failures {option}"
        ini = str(self.config.getini("durable_known_failures") or "").strip()
        if ini:
            base = self.config.inipath.parent if self.config.inipath else self.config.rootpath
            return (base / ini).resolve(), f"durable_known_failures = {ini} ({self.config.inipath or 'ini'})"
        return None, ""

    def _check_output_paths(self) -> None:
        """KIT-6: files the run will write are checked at configure time, before any test runs."""
        here = self.config.invocation_params.dir
        problems: list[str | None] = []
        for option, twin in (("--durable-conformance-report", ".md"), ("--durable-write-known-failures", None)):
            value = self.config.getoption(option, None)
            if value:
                problems.append(output_problem(option, str(value), (here / str(value)).resolve(), twin=twin))
        first = next((p for p in problems if p), None)
        if first:
            raise pytest.UsageError(first)

    # -- what the suite holds (KIT-7) ---------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Count every kit check of each suite before -k, -m, --durable-clause or another plugin deselects
        any; a suite named by a node id inside it (``test_x.py::TestMine::test_one``) is counted from its
        class. Runs on each xdist worker; the counts travel to the controller in user_properties."""
        dynamic: dict[str, Counter[str]] = defaultdict(Counter)
        classes: dict[str, pytest.Class] = {}
        for item in items:
            cap = capability_of(item)
            if cap is None:
                continue
            key = _suite_key(item)
            dynamic[key][cap] += 1
            cls = item.getparent(pytest.Class)
            if cls is not None:
                classes[key] = cls
        for key, counts in dynamic.items():
            static = _class_checks(classes[key]) if key in classes else Counter[str]()
            self.suite_checks[key] = Counter({c: max(counts[c], static[c]) for c in {*counts, *static}})

    # -- known failures -----------------------------------------------------------------------------------
    def mark_known_failures(self, items: Sequence[pytest.Item]) -> None:
        if not self.known:
            return
        for item in items:
            entry = kf.match(self.known, item.nodeid)
            if entry is not None:
                item.add_marker(pytest.mark.xfail(reason=entry.xfail_reason(), strict=True, run=True))
                item.user_properties.append(("known_failure", entry.entry))

    def warn_unmatched(self, nodeids: Sequence[str]) -> None:
        if self._warned or not self.known:
            return
        self._warned = True
        for entry in kf.unmatched(self.known, nodeids):
            self.config.issue_config_time_warning(
                KnownFailureWarning(
                    f"known-failures entry {entry.entry!r} ({entry.where()}) matches no "
                    f"collected test; remove it or fix its id"
                ),
                stacklevel=2,
            )

    # -- results -----------------------------------------------------------------------------------------
    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and not _is_xpass_strict(report):
            self.failures.setdefault(report.nodeid, _reason(report) or "failed")
        elif report.skipped and hasattr(report, "wasxfail") and report.when in ("setup", "call"):
            self.failures.setdefault(report.nodeid, _reason(report) or "known failure")
        props = dict(report.user_properties)
        if "capability" not in props:
            return
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            outcome: str = report.outcome
            if report.skipped and hasattr(report, "wasxfail"):
                outcome = "xfailed"
            elif _is_xpass_strict(report):
                outcome = "xpassed"
            self.results.append(
                {
                    "nodeid": report.nodeid,
                    "outcome": outcome,
                    "capability": props["capability"],
                    "clauses": sorted({v for k, v in report.user_properties if k == "clause"}),
                    "backend": props.get("backend"),
                    "declared_capabilities": sorted(
                        filter(None, str(props.get("declared_capabilities", "")).split(","))
                    ),
                    "known_failure": props.get("known_failure"),
                    "reason": _reason(report),
                    "suite": props.get("suite"),
                    "suite_checks": props.get("suite_checks"),
                }
            )

    def finish(self) -> None:
        results = sorted(self.results, key=lambda r: r["nodeid"])
        self.reports = []
        for backend in sorted({r["backend"] or "unknown backend" for r in results}):
            mine = [r for r in results if (r["backend"] or "unknown backend") == backend]
            self.reports.append(Report.from_results(backend, mine, self.seed))
        path = self.config.getoption("--durable-conformance-report", None)
        if path and self.reports:
            write_reports(self.reports, self.config.invocation_params.dir / path)
        write = self.config.getoption("--durable-write-known-failures", None)
        if write:
            target = self.config.invocation_params.dir / write
            target.write_text(
                kf.render(
                    self.failures.items(),
                    header=f"Known failures written by durable conformance {SUITE_VERSION} (seed {self.seed}).\n"
                    "Format: <node id or suffix>  # reason. Listed tests run as strict xfail.",
                )
            )
            self.notes.append(f"wrote {len(self.failures)} known failure(s) to {target}")


def _suite_key(item: pytest.Item) -> str:
    parent = item.getparent(pytest.Class) or item.getparent(pytest.Module)
    return parent.nodeid if parent is not None else ""


def _class_checks(cls: pytest.Class) -> Counter[str]:
    """The kit checks a test class holds, per capability, read from the class itself: what a full
    collection of it would give for the kit's checks (each parametrization counts)."""
    patterns = [str(p) for p in cls.config.getini("python_functions")]
    counts: Counter[str] = Counter()
    for name in dir(cls.obj):
        if not any(name.startswith(p) or fnmatch.fnmatch(name, p) for p in patterns):
            continue
        fn = getattr(cls.obj, name, None)
        cap = getattr(fn, CAPABILITY_ATTR, None)
        if cap is None or not callable(fn):
            continue
        n = 1
        for m in getattr(fn, "pytestmark", ()):
            if m.name == "parametrize" and len(m.args) > 1 and isinstance(m.args[1], Sized):
                n *= max(1, len(m.args[1]))
        counts[str(cap)] += n
    return counts


def _format_counts(counts: Counter[str]) -> str:
    return ",".join(f"{cap}={n}" for cap, n in sorted(counts.items()))


def _is_xpass_strict(report: pytest.TestReport) -> bool:
    return isinstance(report.longrepr, str) and report.longrepr.startswith("[XPASS(strict)]")


def _reason(report: pytest.TestReport) -> str | None:
    if hasattr(report, "wasxfail") and report.skipped:
        crash = getattr(report.longrepr, "reprcrash", None)
        return str(crash.message) if crash is not None else str(report.wasxfail)
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    if report.failed:
        if isinstance(report.longrepr, str):
            return report.longrepr
        crash = getattr(report.longrepr, "reprcrash", None)
        return str(crash.message) if crash is not None else str(report.longrepr)
    return None


def pytest_report_header(config: pytest.Config) -> str:
    rec = _recorder(config)
    line = f"durable conformance suite {SUITE_VERSION}"
    if rec is not None:
        line += f", seed {rec.seed} (--durable-conformance-seed={rec.seed} repeats it)"
        if rec.known_path is not None:
            line += f", known failures: {rec.known_path} ({len(rec.known)} entries)"
    return line


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker uses the controller's seed."""
    rec = _recorder(node.config)
    if rec is not None:
        node.workerinput["durable_conformance_seed"] = rec.seed


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    """pytest-xdist: the controller collects nothing itself; it checks entries against a worker's ids."""
    rec = _recorder(node.config)
    if rec is not None:
        rec.warn_unmatched(ids)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # trylast: after -k/-m deselection, so known-failure entries are checked against the selected tests
    # here as they are under xdist, where the controller sees the workers' (selected) ids.
    wanted = {c.strip() for opt in (config.getoption("--durable-clause", None) or []) for c in opt.split(",")}
    wanted.discard("")
    if wanted:
        keep = [i for i in items if wanted & set(clauses_of(i))]
        config.hook.pytest_deselected(items=[i for i in items if not wanted & set(clauses_of(i))])
        items[:] = keep
    for item in items:
        item.user_properties.extend(("clause", cid) for cid in clauses_of(item))
        cap = capability_of(item)
        if cap is not None:
            item.user_properties.append(("capability", cap))
    rec = _recorder(config)
    if rec is not None:
        for item in items:
            key = _suite_key(item)
            if capability_of(item) is not None and key in rec.suite_checks:
                item.user_properties += [("suite", key), ("suite_checks", _format_counts(rec.suite_checks[key]))]
    if rec is not None:
        rec.mark_known_failures(items)
        if not _is_worker(config):
            rec.warn_unmatched([i.nodeid for i in items])


def pytest_sessionfinish(session: pytest.Session) -> None:
    rec = _recorder(session.config)
    if rec is not None and not _is_worker(session.config):
        rec.finish()


_LEVEL_COLOUR: dict[str, dict[str, bool]] = {
    "FULL": {"green": True},
    "BASE": {"cyan": True},
    "PARTIAL": {"yellow": True},
    "NONE": {"red": True},
    INCOMPLETE: {"purple": True},
}


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    rec = _recorder(config)
    if rec is None or (not rec.reports and not rec.notes):
        return
    tr = terminalreporter
    tr.section("durable conformance")
    for report in rec.reports:
        declared = ", ".join(report.declared_capabilities) or "-"
        tr.write(
            f"backend: {report.backend}   capabilities: {declared}   suite: {SUITE_VERSION}   "
            f"seed: {report.seed}   overall level: "
        )
        # write, not write_line: write_line may start a new line first, splitting this one.
        tr.write(report.overall_text(), bold=True, **_LEVEL_COLOUR.get(report.level, {}))
        tr.write("\n")
        tr.write_line(
            f"  {'capability':<20}{'level':<12}{'passed':>7}{'failed':>7}{'known':>7}{'skipped':>8}  failed clauses"
        )
        for cap, c in report.capabilities.items():
            # Only the level is coloured; pytest's writer drops colour off a terminal and under NO_COLOR.
            tr.write(f"  {cap:<20}")
            tr.write(f"{c.level:<12}", **_LEVEL_COLOUR.get(c.level, {}))
            tr.write(
                f"{c.passed:>7}{c.failed:>7}{c.xfailed:>7}{c.skipped:>8}  {', '.join(c.failed_clauses)}".rstrip() + "\n"
            )
    for note in rec.notes:
        tr.write_line(note)
