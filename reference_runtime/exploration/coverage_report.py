"""The crash-coverage report (spec COV-2..COV-6): what one process recorded (:func:`collect`), several processes'
records combined (:func:`combine`, for xdist workers), and the report built from them (:func:`build`) with its
three renderings: a few terminal lines, JSON for CI (schema ``pytest-durable/crash-coverage/1``, documented in
docs/plugin/coverage.md) and an HTML report (coverage.py's pages with the contexts shown, under ``lines/``, and an
``index.html`` of fault points and findings).

A line is classified by the contexts it ran in (:mod:`~reference_runtime.exploration.lines`): run by an action
execution without a crash (``crash_free``), run by one re-entering after a crash (``recovery``), only the latter
(``recovery_only``: neither a crash-free execution nor anything outside executions ran it), or not at all
(``never_run``, of coverage.py's statements). A file the measurement did not trace is reported as not measured,
never as never run (COV-7). Imports coverage.py.
"""

from __future__ import annotations

import html
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .reached import RECOVERY, RUN, Site, Tally

if TYPE_CHECKING:
    from .lines import Lines

__all__ = ["SCHEMA", "Report", "build", "collect", "combine", "ranges"]

#: The ``schema`` value of the JSON report; the number changes when a field changes meaning or goes away.
SCHEMA = "pytest-durable/crash-coverage/1"
#: Never-crashed points listed per agent in the terminal (all of them are in the JSON and HTML reports).
TERMINAL_POINTS = 10


def collect(tally: Tally, lines: Lines | None) -> dict[str, Any]:
    """What this process recorded, as JSON-able data (an xdist worker sends it to the controller)."""
    files = sorted({f for agent in tally.agents.values() for f in agent.files})
    return {
        "tally": tally.to_json(),
        "lines": lines.harvest(files) if lines is not None else {},
        "preimported": sorted(set(files) & lines.preimported) if lines is not None else [],
        "measurement": "none" if lines is None else "own" if lines.owned else "shared",
    }


def combine(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several processes' :func:`collect` data as one (COV-6): counts add up, a line's contexts are the union of
    its contexts everywhere, a file is measured if any process measured it."""
    tally = Tally()
    lines: dict[str, dict[str, set[str]] | None] = {}
    preimported: set[str] = set()
    kinds: set[str] = set()
    for part in parts:
        tally.merge(part["tally"])
        preimported.update(part["preimported"])
        kinds.add(part["measurement"])
        for path, by_line in part["lines"].items():
            if by_line is None:
                lines.setdefault(path, None)
                continue
            mine = lines.get(path) or {}
            for line, contexts in by_line.items():
                mine.setdefault(line, set()).update(contexts)
            lines[path] = mine
    return {
        "tally": tally.to_json(),
        "lines": {p: None if v is None else {k: sorted(c) for k, c in v.items()} for p, v in lines.items()},
        "preimported": sorted(preimported),
        "measurement": "shared" if "shared" in kinds else "own" if "own" in kinds else "none",
    }


def ranges(lines: Iterable[int]) -> str:
    """``23-24, 31``: line numbers as coverage.py's term-missing writes them."""
    out: list[str] = []
    run: list[int] = []
    for n in sorted(lines):
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [n]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


@dataclass
class FileLines:
    """One agent file's lines by status (COV-3)."""

    path: str  # as shown: relative to the report's root when inside it
    absolute: str
    measured: bool
    statements: int = 0
    crash_free: list[int] = field(default_factory=list)
    recovery: list[int] = field(default_factory=list)
    recovery_only: list[int] = field(default_factory=list)
    never_run: list[int] = field(default_factory=list)
    imported_before_measurement: bool = False
    page: str | None = None  # its coverage.py HTML page, relative to the report directory

    def json(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "measured": self.measured,
            "statements": self.statements,
            "crash_free": self.crash_free,
            "recovery": self.recovery,
            "recovery_only": self.recovery_only,
            "never_run": self.never_run,
            "imported_before_measurement": self.imported_before_measurement,
        }


@dataclass
class Report:
    """The built report: per agent its findings, per file its lines."""

    root: Path
    measurement: str
    agents: dict[str, dict[str, Any]]
    files: dict[str, FileLines]
    sources: dict[str, list[str]] = field(default_factory=dict)

    # -- JSON (the schema is documented in docs/plugin/coverage.md) ----------------------------------------------

    def to_json(self) -> dict[str, Any]:
        agents = []
        for name, agent in self.agents.items():
            agents.append(
                {
                    "agent": name,
                    "files": [self._shown(f) for f in agent["files"]],
                    "fault_points": agent["fault_points"],
                    "actions": agent["actions"],
                    "durable_functions": agent["durable_functions"],
                    "reconcilers": agent["reconcilers"],
                    "memory": agent["memory"],
                }
            )
        points = [p for a in self.agents.values() for p in a["fault_points"]]
        return {
            "schema": SCHEMA,
            "measurement": self.measurement,
            "summary": {
                "agents": len(self.agents),
                "fault_points": len(points),
                "never_crashed": sum(p["crashed"] == 0 for p in points),
                "actions_never_reentered": sum(
                    a["recoveries"] == 0 for g in self.agents.values() for a in g["actions"] if a["executions"]
                ),
                "results_never_replayed": sum(
                    f["replayed"] == 0 for g in self.agents.values() for f in g["durable_functions"]
                ),
                "reconcilers_never_invoked": sum(
                    r["invoked"] == 0 for g in self.agents.values() for r in g["reconcilers"]
                ),
                "memory_never_replayed": sum(m["replayed"] == 0 for g in self.agents.values() for m in g["memory"]),
                "recovery_only_lines": sum(len(f.recovery_only) for f in self.files.values()),
                "never_run_lines": sum(len(f.never_run) for f in self.files.values()),
                "files_not_measured": sum(not f.measured for f in self.files.values()),
            },
            "agents": agents,
            "files": [f.json() for f in self.files.values()],
        }

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")

    # -- terminal -----------------------------------------------------------------------------------------------

    def terminal(self) -> list[str]:
        """A few lines per agent, then one per file, like coverage.py's ``term-missing``."""
        out: list[str] = []
        for name, agent in self.agents.items():
            points = agent["fault_points"]
            never = [p for p in points if p["crashed"] == 0]
            out.append(f"{name}: {len(never)} of {len(points)} fault points never crashed")
            test = None
            for p in never[:TERMINAL_POINTS]:  # grouped by the test whose crash-free run reached them
                if p["reached_by"] != test:
                    test = p["reached_by"]
                    out.append(f"  never crashed, reached by {test}:")
                out.append(f"    {p['selector']}")
            if len(never) > TERMINAL_POINTS:
                out.append(f"  ... and {len(never) - TERMINAL_POINTS} more (JSON and HTML reports list them all)")
            for a in agent["actions"]:
                if a["executions"] and not a["recoveries"]:
                    where = f" ({self._shown(a['file'])}:{a['first']}-{a['last']})" if a.get("file") else ""
                    out.append(f"  action no crash re-entered: {a['action']}{where}")
            for r in agent["reconcilers"]:
                if not r["invoked"]:
                    where = f" ({self._shown(r['file'])}:{r['line']})" if r.get("file") else ""
                    out.append(
                        f"  reconciler never invoked: {r['reconciler']}{where} of {r['action']} call {r['call_index']}"
                    )
            for f in agent["durable_functions"]:
                if not f["replayed"]:
                    out.append(f"  result never replayed: {f['function']}")
            for m in agent["memory"]:
                if not m["replayed"]:
                    out.append(f"  memory never replayed after a crash: {m['memory']} {m['path']} ({m['action']})")
        shown = [f for f in self.files.values()]
        if shown:
            width = max(len(f.path) for f in shown)
            out.append(f"{'file':<{width}}  stmts  crash-free  recovery  recovery-only  never run")
            for f in shown:
                if not f.measured:
                    out.append(f"{f.path:<{width}}  not measured: {self._unmeasured()}")
                    continue
                out.append(
                    f"{f.path:<{width}}  {f.statements:>5}  {len(f.crash_free):>10}  {len(f.recovery):>8}  "
                    f"{_listed(f.recovery_only):<13}  {_listed(f.never_run)}"
                )
                if f.imported_before_measurement:
                    out.append("  note: imported before measuring started: its import-time lines show as never run")
        return out

    def _unmeasured(self) -> str:
        if self.measurement == "shared":
            return "the coverage.py run already measuring this process leaves it out (add it to that run's source)"
        return "coverage.py does not trace it (an installed package, or one of pytest-durable's)"

    def _shown(self, path: str | None) -> str:
        """``path`` relative to the root if inside it, else to the import path entry it was imported from."""
        if path is None:
            return ""
        for base in [self.root, *sorted((Path(p) for p in sys.path if p), key=lambda p: -len(str(p)))]:
            try:
                return Path(path).relative_to(base.resolve()).as_posix()
            except (ValueError, OSError):
                continue
        return path

    # -- HTML ---------------------------------------------------------------------------------------------------

    def index_html(self) -> str:
        """The report's ``index.html``: per agent its fault points (never crashed first) and findings, then the
        files with their recovery-only lines, each linked to its coverage.py page under ``lines/``."""
        e = html.escape
        parts = [
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Crash coverage</title>",
            f"<style>{_CSS}</style></head><body>",
            "<h1>Crash coverage</h1>",
            "<p>What the crash tests never reached: fault points no crash fired at, code only recovery ran, durable "
            "state recovery never used. Lines, with the context each ran in: "
            "<a href='lines/index.html'>coverage.py report</a>.</p>",
        ]
        for name, agent in self.agents.items():
            points = agent["fault_points"]
            never = sum(p["crashed"] == 0 for p in points)
            parts.append(f"<h2>{e(name)}</h2><p>{never} of {len(points)} fault points never crashed.</p>")
            parts.append(
                "<table><tr><th>fault point</th><th>crashed</th><th>crash-free runs</th>"
                "<th>selector to crash there</th><th>reached by</th></tr>"
            )
            for p in points:
                cls = "miss" if not p["crashed"] else "hit"
                parts.append(
                    f"<tr class='{cls}'><td>{e(p['point'])}</td><td>{p['crashed']}</td><td>{p['reached']}</td>"
                    f"<td><code>{e(p['selector'])}</code></td><td>{e(p['reached_by'])}</td></tr>"
                )
            parts.append("</table>")
            findings = [
                f"action <b>{e(a['action'])}</b>: no crash re-entered it"
                + (f" ({e(self._shown(a['file']))}:{a['first']}-{a['last']})" if a.get("file") else "")
                for a in agent["actions"]
                if a["executions"] and not a["recoveries"]
            ]
            findings += [
                f"reconciler <b>{e(r['reconciler'])}</b> of {e(r['action'])} call {r['call_index']}: never invoked"
                for r in agent["reconcilers"]
                if not r["invoked"]
            ]
            findings += [
                f"durable function <b>{e(f['function'])}</b>: its recorded result was never replayed"
                for f in agent["durable_functions"]
                if not f["replayed"]
            ]
            findings += [
                f"memory <b>{e(m['memory'])} {e(m['path'])}</b> written by {e(m['action'])}: "
                "never replayed after a crash"
                for m in agent["memory"]
                if not m["replayed"]
            ]
            if findings:
                parts.append("<ul class='findings'>" + "".join(f"<li>{f}</li>" for f in findings) + "</ul>")
        parts.append(
            "<h2>Lines</h2><table><tr><th>file</th><th>statements</th><th>crash-free</th><th>recovery</th>"
            "<th>recovery only</th><th>never run</th></tr>"
        )
        for f in self.files.values():
            name = f"<a href='{e(f.page)}'>{e(f.path)}</a>" if f.page else e(f.path)
            if not f.measured:
                parts.append(f"<tr><td>{name}</td><td colspan='5'>not measured: {e(self._unmeasured())}</td></tr>")
                continue
            parts.append(
                f"<tr><td>{name}</td><td>{f.statements}</td><td>{len(f.crash_free)}</td><td>{len(f.recovery)}</td>"
                f"<td>{e(ranges(f.recovery_only))}</td><td>{e(ranges(f.never_run))}</td></tr>"
            )
        parts.append("</table>")
        for f in self.files.values():
            source = self.sources.get(f.absolute)
            if not source or not (f.recovery_only or f.never_run):
                continue
            parts.append(f"<h3>{e(f.path)}</h3><pre class='source'>")
            marked = {n: "recovery-only" for n in f.recovery_only} | {n: "never-run" for n in f.never_run}
            for n in sorted(marked):
                text = source[n - 1] if n <= len(source) else ""
                parts.append(f"<span class='{marked[n]}'>{n:>4}  {e(text)}</span>")
            parts.append("</pre>")
        parts.append(
            "<p class='legend'><span class='recovery-only'>run only during recovery</span> "
            "<span class='never-run'>never run</span></p></body></html>"
        )
        return "".join(parts)


_CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; font-size: 14px; }
td:first-child, td code { white-space: nowrap; }
tr.miss td { background: #fde2e1; }
tr.hit td { background: #e3f5e1; }
code, pre { font-family: monospace; }
.recovery-only { background: #fff1b8; }
.never-run { background: #fde2e1; }
pre.source span { display: block; }
.legend span { padding: 2px 6px; margin-right: 1em; }
"""


def _listed(lines: Sequence[int]) -> str:
    return f"{len(lines)}: {ranges(lines)}" if lines else "0"


def _points(tally_points: dict[str, Site]) -> list[dict[str, Any]]:
    """Never-crashed points first, each group in the order the session first reached them."""
    listed = [
        {
            "point": site,
            "selector": s.selector,
            "phase": s.phase,
            "action": s.action,
            "call_index": s.call_index,
            "function": s.function,
            "reached": s.reached,
            "crashed": s.crashed,
            "reached_by": s.test,
        }
        for site, s in tally_points.items()
    ]
    return [p for p in listed if not p["crashed"]] + [p for p in listed if p["crashed"]]


def build(collected: dict[str, Any], root: Path, html_dir: Path | None = None) -> Report:
    """The report of ``collected`` (:func:`collect` or :func:`combine` data), file names shown relative to
    ``root``; with ``html_dir``, the HTML report is written there too."""
    from coverage import Coverage, CoverageData

    tally = Tally()
    tally.merge(collected["tally"])
    measured: dict[str, dict[str, list[str]]] = {p: v for p, v in collected["lines"].items() if v is not None}
    agents: dict[str, dict[str, Any]] = {}
    all_files: list[str] = []
    for name in sorted(tally.agents):
        agent = tally.agents[name]
        all_files += [f for f in sorted(agent.files) if f not in all_files]
        agents[name] = {
            "files": sorted(agent.files),
            "fault_points": _points(agent.points),
            "actions": [
                {
                    "action": action,
                    "executions": counts["executions"],
                    "recoveries": counts["recoveries"],
                    "file": counts.get("file"),
                    "first": counts.get("first"),
                    "last": counts.get("last"),
                }
                for action, counts in agent.actions.items()
            ],
            "durable_functions": [{"function": fid, **counts} for fid, counts in agent.functions.items()],
            "reconcilers": list(agent.reconcilers.values()),
            "memory": list(agent.memory.values()),
        }
    report = Report(root, collected["measurement"], agents, {})
    for agent_data in agents.values():
        for a in agent_data["actions"]:
            a["file"] = report._shown(a["file"]) if a["file"] else None
        for r in agent_data["reconcilers"]:
            r["file"] = report._shown(r["file"]) if r["file"] else None
    with tempfile.TemporaryDirectory() as tmp:
        data = CoverageData(basename=os.path.join(tmp, ".coverage"))
        by_context: dict[str, dict[str, set[int]]] = {}
        for path, by_line in measured.items():
            for line, contexts in by_line.items():
                for context in contexts:
                    by_context.setdefault(context, {}).setdefault(path, set()).add(int(line))
        for context, files in sorted(by_context.items()):
            data.set_context(context)
            data.add_lines({p: sorted(ls) for p, ls in files.items()})
        data.write()
        cov = Coverage(data_file=os.path.join(tmp, ".coverage"), config_file=False)
        cov.load()
        for path in all_files:
            lines = FileLines(report._shown(path), path, path in measured)
            lines.imported_before_measurement = path in collected["preimported"]
            report.files[path] = lines
            if not lines.measured:
                continue
            try:
                _, statements, _, missing, _ = cov.analysis2(path)
                report.sources[path] = Path(path).read_text(encoding="utf-8").splitlines()
            except Exception:  # the source is gone: say so rather than guess
                lines.measured = False
                continue
            contexts_of = {int(n): c for n, c in measured[path].items()}
            run = {n for n, c in contexts_of.items() if any(x.startswith(RUN) for x in c)}
            recovery = {n for n, c in contexts_of.items() if any(x.startswith(RECOVERY) for x in c)}
            outside = {n for n, c in contexts_of.items() if "" in c}
            stmts = set(statements)
            lines.statements = len(stmts)
            lines.crash_free = sorted(run & stmts)
            lines.recovery = sorted(recovery & stmts)
            lines.recovery_only = sorted((recovery - run - outside) & stmts)
            lines.never_run = sorted(set(missing))
        if html_dir is not None:
            html_dir.mkdir(parents=True, exist_ok=True)
            pages = [p for p in all_files if report.files[p].measured]
            if pages:
                cov.html_report(
                    morfs=pages,
                    directory=str(html_dir / "lines"),
                    show_contexts=True,
                    title="Crash coverage: lines by context",
                    ignore_errors=True,
                )
                _link_pages(report, html_dir / "lines")
            (html_dir / "index.html").write_text(report.index_html(), encoding="utf-8")
    return report


def _link_pages(report: Report, lines_dir: Path) -> None:
    """Each file's coverage.py page, from the ``status.json`` coverage.py writes beside them."""
    try:
        status = json.loads((lines_dir / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    by_path = {os.path.realpath(f.absolute): f for f in report.files.values()}
    for page, entry in status.get("files", {}).items():
        name = entry.get("index", {}).get("file")
        if not name:
            continue
        target = by_path.get(os.path.realpath(name)) or next(
            (f for f in report.files.values() if f.absolute.endswith(name) or f.path == name), None
        )
        if target is not None:
            target.page = f"lines/{page}.html"


class Measuring:
    """One process's crash coverage, from :meth:`start` to :meth:`finish`: a :class:`Tally` recording the engine's
    fault points and the runtime's executions, and the lines measured by context (COV-2, COV-3)."""

    def __init__(self, lines: Lines, tally: Tally) -> None:
        self.lines = lines
        self.tally = tally

    @classmethod
    def start(cls, test: str = "collection") -> Measuring:
        """Start measuring now (coverage.py must be installed:
        :func:`~reference_runtime.exploration.lines.require_coverage`)."""
        from .lines import Lines
        from .reached import activate

        lines = Lines.start()
        tally = Tally(lines)
        tally.test = test
        activate(tally)
        return cls(lines, tally)

    def finish(self) -> dict[str, Any]:
        """Stop recording and measuring; what was recorded, as :func:`collect` data."""
        from .reached import activate, active

        if active() is self.tally:
            activate(None)
        try:
            return collect(self.tally, self.lines)
        finally:
            self.lines.stop()


def write(report: Report, html_dir: Path | None, json_path: Path | None) -> list[str]:
    """Write the JSON report (the HTML one is written by :func:`build`); the lines saying where both are."""
    said = []
    if html_dir is not None:
        said.append(f"HTML report: {_near(html_dir / 'index.html')}")
    if json_path is not None:
        report.write_json(json_path)
        said.append(f"JSON report: {_near(json_path)}")
    return said


def _near(path: Path) -> str:
    """``path`` relative to the current directory if inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)
