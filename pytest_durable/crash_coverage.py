"""Crash coverage in pytest (spec COV-1..COV-8): ``--durable-coverage`` reports what the session's crash tests
never reached (fault points no crash fired at, lines only recovery ran or nothing ran, durable results never
replayed, reconcilers never invoked, memory writes never replayed after a crash). ``--durable-coverage-html DIR``
and ``--durable-coverage-json FILE`` also write those reports (and turn it on). See docs/plugin/coverage.md.

Loaded with the plugin (its ``pytest_plugins``); imports only pytest and the standard library. Off, it registers
nothing but its options: coverage.py is not imported, nothing is traced, the runtime's observer hook stays unset
(COV-8). On, every process that runs tests measures from session start (in the measurement coverage.py already
runs in the process, if any: COV-7), and xdist workers send what they recorded to the controller, which
combines it and reports (COV-6).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .plugin import _addini, _flag

if TYPE_CHECKING:
    from reference_runtime.exploration.coverage_report import Measuring

#: The extra that installs coverage.py for crash coverage (COV-1).
EXTRA = "pytest-durable[coverage]"
#: The key of a worker's record in xdist's ``workeroutput``.
WORKER_OUTPUT = "durable_coverage"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("durable")
    group.addoption(
        "--durable-coverage",
        action="store_true",
        default=None,
        help="report what the crash tests never reached: fault points never crashed, lines run only during "
        f"recovery or never, durable state recovery never used (needs coverage.py: {EXTRA}). "
        "ini: durable_coverage",
    )
    group.addoption(
        "--durable-coverage-html",
        metavar="DIR",
        default=None,
        help="also write the crash-coverage HTML report into DIR (implies --durable-coverage). "
        "ini: durable_coverage_html",
    )
    group.addoption(
        "--durable-coverage-json",
        metavar="FILE",
        default=None,
        help="also write the crash-coverage JSON report to FILE (implies --durable-coverage). "
        "ini: durable_coverage_json",
    )
    _addini(parser, "durable_coverage", "report what the crash tests never reached (yes/no)", bool)
    parser.addini("durable_coverage_html", "directory of the crash-coverage HTML report", default="")
    parser.addini("durable_coverage_json", "file of the crash-coverage JSON report", default="")


def _path(config: pytest.Config, name: str) -> Path | None:
    """An output path option: relative to the invocation directory on the command line, to the rootdir in
    an ini file (as ``durable_journal_dir``)."""
    given = config.getoption(f"--durable-{name.replace('_', '-')}")
    base = config.invocation_params.dir
    if given is None:
        given = str(config.getini(f"durable_{name}") or "").strip() or None
        base = config.rootpath
    if given is None:
        return None
    path = Path(given)
    return path if path.is_absolute() else base / path


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    html, report_json = _path(config, "coverage_html"), _path(config, "coverage_json")
    if not (_flag(config, "coverage") or html is not None or report_json is not None):
        return
    if importlib.util.find_spec("coverage") is None:  # one line naming the extra (COV-1)
        raise pytest.UsageError(f"--durable-coverage needs coverage.py: pip install '{EXTRA}'")
    if html is not None and html.exists() and not html.is_dir():
        raise pytest.UsageError(f"--durable-coverage-html (ini durable_coverage_html): {html} is not a directory")
    if report_json is not None and report_json.is_dir():
        raise pytest.UsageError(f"--durable-coverage-json (ini durable_coverage_json): {report_json} is a directory")
    config.pluginmanager.register(CrashCoverage(config, html, report_json), "durable-coverage")


class CrashCoverage:
    """The hooks of one session with crash coverage on."""

    def __init__(self, config: pytest.Config, html: Path | None, report_json: Path | None) -> None:
        self.config = config
        self.html = html
        self.json = report_json
        self.measuring: Measuring | None = None
        #: What each process that ran tests recorded (this one's, or each xdist worker's).
        self.parts: list[dict[str, Any]] = []
        #: An xdist controller runs no tests: it only combines what the workers send.
        self.controller = config.getoption("dist", "no") != "no" and not hasattr(config, "workerinput")

    @pytest.hookimpl(trylast=True)  # after pytest-cov started its measurement on a worker, so it is used (COV-7)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not self.controller:
            from reference_runtime.exploration.coverage_report import Measuring

            self.measuring = Measuring.start()

    @pytest.hookimpl(wrapper=True)
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> Generator[None, object, object]:
        """A ``durable_sweep`` marker learns its agent's fault points at collection: they are the marked test's."""
        measuring = self.measuring
        if measuring is None:
            return (yield)
        before, measuring.tally.test = measuring.tally.test, metafunc.definition.nodeid
        try:
            return (yield)
        finally:
            measuring.tally.test = before

    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        if self.measuring is not None:
            self.measuring.tally.test = nodeid

    # Innermost: the tests are over, and pytest-cov, which wraps this too, has not yet stopped and saved its
    # measurement (whose data this reads when it is the one in use, COV-7).
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        try:
            return (yield)
        finally:
            if self.measuring is not None:
                recorded = self.measuring.finish()
                self.measuring = None
                workeroutput = getattr(self.config, "workeroutput", None)
                if workeroutput is not None:
                    workeroutput[WORKER_OUTPUT] = json.dumps(recorded)
                else:
                    self.parts.append(recorded)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """xdist: a worker is done; keep what it recorded (COV-6)."""
        recorded = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT)
        if recorded is not None:
            self.parts.append(json.loads(recorded))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        from reference_runtime.exploration.coverage_report import build, combine, write

        terminalreporter.write_sep("=", "durable coverage")
        if not self.parts:
            terminalreporter.write_line("durable coverage: no test process recorded anything")
            return
        report = build(combine(self.parts), self.config.rootpath, self.html)
        lines = report.terminal() or ["durable coverage: no agent ran"]
        for line in lines + write(report, self.html, self.json):
            terminalreporter.write_line(line)
