"""The conformance kit's pytest plugin: ``clause``/``capability`` markers, per-capability levels in the
terminal summary, JSON and Markdown reports. Load with ``-p conformance.plugin`` (``durable certify``
does) or ``pytest_plugins = ["conformance.plugin"]`` in a conftest.

Results travel as ``user_properties`` (clause, capability, backend), so they reach the controller under
pytest-xdist and appear in JUnit XML.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from . import SUITE_VERSION

_RESULTS = pytest.StashKey[list[dict[str, Any]]]()
LEVELS = ("FULL", "BASE", "PARTIAL", "NONE")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("durable-conformance")
    group.addoption("--durable-conformance-report", metavar="FILE", default=None,
                    help="write the conformance report as JSON to FILE (a .md twin is written next to it)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "clause(id): the spec clause a conformance check proves")
    config.addinivalue_line("markers", "capability(name): the backend capability a check needs")
    config.stash[_RESULTS] = []


def pytest_report_header(config: pytest.Config) -> str:
    seed = getattr(config.option, "randomly_seed", None)
    return f"durable conformance suite {SUITE_VERSION}" + (f", seed {seed}" if seed is not None else "")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for mark in item.iter_markers("clause"):
            item.user_properties.extend(("clause", str(a)) for a in mark.args)
        cap = item.get_closest_marker("capability")
        if cap is not None:
            item.user_properties.append(("capability", str(cap.args[0])))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    props = dict(report.user_properties)
    if "capability" not in props:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        config = _CONFIG.get("config")
        if config is None:
            return
        config.stash[_RESULTS].append({
            "nodeid": report.nodeid,
            "outcome": report.outcome,
            "capability": props["capability"],
            "clauses": sorted({v for k, v in report.user_properties if k == "clause"}),
            "backend": props.get("backend"),
            "reason": _reason(report),
        })


_CONFIG: dict[str, pytest.Config] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG["config"] = session.config


def _reason(report: pytest.TestReport) -> str | None:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    if report.failed:
        return str(getattr(report.longrepr, "reprcrash", None) and report.longrepr.reprcrash.message)  # type: ignore[union-attr]
    return None


def levels(results: list[dict[str, Any]]) -> tuple[str, dict[str, dict[str, Any]]]:
    """Per-capability and overall level (definitions in docs/conformance/reference.md)."""
    by_cap: dict[str, dict[str, Any]] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0})
    failed_clauses: dict[str, set[str]] = defaultdict(set)
    for r in results:
        by_cap[r["capability"]][r["outcome"]] += 1
        if r["outcome"] == "failed":
            failed_clauses[r["capability"]].update(r["clauses"])
    out: dict[str, dict[str, Any]] = {}
    for cap, c in sorted(by_cap.items()):
        if c["failed"] == 0 and c["passed"] > 0 and c["skipped"] == 0:
            level = "FULL"
        elif c["failed"] == 0 and c["passed"] > 0:
            level = "BASE"
        elif c["passed"] > 0:
            level = "PARTIAL"
        elif c["failed"] == 0:
            level = "NONE"  # nothing ran: not supported
        else:
            level = "NONE"
        out[cap] = {**c, "level": level, "failed_clauses": sorted(failed_clauses[cap])}
    core = out.get("core", {"level": "NONE"})["level"]
    others = [v["level"] for k, v in out.items() if k != "core"]
    if core == "FULL" and all(lv == "FULL" for lv in others):
        overall = "FULL"
    elif core == "FULL" and not any(v["failed"] for v in out.values()):
        overall = "BASE"
    elif core in ("FULL", "BASE", "PARTIAL"):
        overall = "PARTIAL"
    else:
        overall = "NONE"
    return overall, out


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    stored: list[dict[str, Any]] = config.stash.get(_RESULTS, [])
    results = sorted(stored, key=lambda r: r["nodeid"])
    if not results:
        return
    tr = terminalreporter
    tr.section("durable conformance")
    reports = []
    for backend in sorted({r["backend"] or "unknown backend" for r in results}):
        mine = [r for r in results if (r["backend"] or "unknown backend") == backend]
        overall, caps = levels(mine)
        reports.append({"schema": 1, "suite_version": SUITE_VERSION, "backend": backend, "level": overall,
                        "capabilities": caps, "checks": mine})
        tr.write_line(f"backend: {backend}   suite: {SUITE_VERSION}   overall level: {overall}")
        tr.write_line(f"  {'capability':<20}{'level':<9}{'passed':>7}{'failed':>7}{'skipped':>8}  failed clauses")
        for cap, c in caps.items():
            tr.write_line(f"  {cap:<20}{c['level']:<9}{c['passed']:>7}{c['failed']:>7}{c['skipped']:>8}  "
                          f"{', '.join(c['failed_clauses'])}")
    path = config.getoption("--durable-conformance-report")
    if path:
        doc = reports[0] if len(reports) == 1 else {"schema": 1, "suite_version": SUITE_VERSION,
                                                    "backends": reports}
        Path(path).write_text(json.dumps(doc, indent=2, sort_keys=True))
        Path(path).with_suffix(".md").write_text("\n".join(markdown(r) for r in reports))


def markdown(report: dict[str, Any]) -> str:
    lines = [f"**durable conformance {report['suite_version']}** — `{report['backend']}`: "
             f"**{report['level']}**", "", "| capability | level | passed | failed | skipped |",
             "|---|---|---|---|---|"]
    for cap, c in report["capabilities"].items():
        lines.append(f"| {cap} | {c['level']} | {c['passed']} | {c['failed']} | {c['skipped']} |")
    return "\n".join(lines) + "\n"
