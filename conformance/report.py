"""The conformance report (spec CONF-3, KIT-4, KIT-7): what a run of the kit found for one backend, its levels
per capability and overall, and its renderings as JSON, Markdown and JUnit XML.

:func:`levels` turns check results into levels (definitions in docs/conformance/reference.md);
:class:`Report` holds one backend's results, built by the kit's plugin at the end of a run and returned by
:func:`conformance.certify`; ``durable certify`` writes what it returns.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reference_runtime._version import __version__ as SUITE_VERSION

__all__ = [
    "BASELINE_CAPABILITIES",
    "INCOMPLETE",
    "LEVELS",
    "NOT_RUN",
    "REPORT_SCHEMA",
    "CapabilityResult",
    "CheckResult",
    "Report",
    "levels",
    "suite_totals",
    "write_reports",
]

LEVELS = ("FULL", "BASE", "PARTIAL", "NONE")
#: The overall level of a run that left out some of the suite's checks (KIT-7): not a certification level.
INCOMPLETE = "INCOMPLETE"
#: The level of a capability none of whose checks ran in a partial run.
NOT_RUN = "not run"
#: Capabilities that are a backend's baseline: a store's ``core``, a runner's ``runner``.
BASELINE_CAPABILITIES = ("core", "runner")
#: Version of the JSON report's layout (docs/conformance/reference.md).
REPORT_SCHEMA = 3


def suite_totals(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Checks per capability in the suites these results come from, whether they ran or not (KIT-7)."""
    per_suite: dict[str, str] = {}
    for r in results:
        if r.get("suite") is not None and r.get("suite_checks"):
            per_suite[str(r["suite"])] = str(r["suite_checks"])
    totals: Counter[str] = Counter()
    for text in per_suite.values():
        for part in text.split(","):
            cap, _, n = part.rpartition("=")
            totals[cap] += int(n)
    return dict(totals)


def levels(
    results: Sequence[Mapping[str, Any]], totals: Mapping[str, int] | None = None
) -> tuple[str, dict[str, dict[str, Any]]]:
    """Per-capability and overall level (definitions in docs/conformance/reference.md).

    A known failure (``xfailed``) counts against the level like a failure: the backend does not meet
    the clause, even though the run passes. Capabilities the backend does not declare whose checks were
    all skipped do not count in the overall level (KIT-4).

    ``totals`` are the suite's checks per capability (:func:`suite_totals`). When fewer ran — a
    selection, ``-x``, a lost worker — or a declared capability had no check run, the overall level is
    ``INCOMPLETE``, not a certification level (KIT-7); such capabilities are ``INCOMPLETE`` or ``not run``.
    """
    by_cap: dict[str, dict[str, Any]] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0})
    failed_clauses: dict[str, set[str]] = defaultdict(set)
    for r in results:
        # A listed known failure that passed (strict XPASS) fails the run, but the clause is met.
        by_cap[r["capability"]]["passed" if r["outcome"] == "xpassed" else r["outcome"]] += 1
        if r["outcome"] in ("failed", "xfailed"):
            failed_clauses[r["capability"]].update(r["clauses"])
    out: dict[str, dict[str, Any]] = {}
    for cap, c in sorted(by_cap.items()):
        bad = c["failed"] + c["xfailed"]
        if bad == 0 and c["passed"] > 0 and c["skipped"] == 0:
            level = "FULL"
        elif bad == 0 and c["passed"] > 0:
            level = "BASE"
        elif c["passed"] > 0:
            level = "PARTIAL"
        else:
            level = "NONE"  # nothing passed: unsupported (all skipped) or broken (all failed)
        out[cap] = {**c, "level": level, "failed_clauses": sorted(failed_clauses[cap])}
    baseline = [c for c in BASELINE_CAPABILITIES if c in out] or ["core"]
    base_levels = [out.get(c, {"level": "NONE"})["level"] for c in baseline]
    # A capability the backend does not claim, none of whose checks ran, is listed (NONE) but does not
    # lower the overall level: a backend is FULL for what it declares.
    declared = {c for r in results for c in r.get("declared_capabilities", ())}
    others = [
        v["level"]
        for k, v in out.items()
        if k not in baseline and (k in declared or v["passed"] + v["failed"] + v["xfailed"] > 0)
    ]
    any_bad = any(v["failed"] + v["xfailed"] for v in out.values())
    if all(lv == "FULL" for lv in base_levels) and all(lv == "FULL" for lv in others):
        overall = "FULL"
    elif all(lv == "FULL" for lv in base_levels) and not any_bad:
        overall = "BASE"
    elif all(lv in ("FULL", "BASE", "PARTIAL") for lv in base_levels):
        overall = "PARTIAL"
    else:
        overall = "NONE"
    incomplete = False
    for cap in sorted({*declared, *(k for k, n in (totals or {}).items() if n > 0)}):
        if cap not in out:
            incomplete = True
            out[cap] = {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0, "level": NOT_RUN, "failed_clauses": []}
    for cap, entry in out.items():
        if totals is None:
            continue
        entry["checks_total"] = totals.get(cap, 0)
        ran = entry["passed"] + entry["failed"] + entry["skipped"] + entry["xfailed"]
        if 0 < ran < entry["checks_total"]:
            incomplete = True
            entry["level"] = INCOMPLETE
    if incomplete:
        overall = INCOMPLETE
    return overall, dict(sorted(out.items()))


@dataclass(frozen=True)
class CheckResult:
    """One check of a run: its node id, outcome (``passed``, ``failed``, ``skipped``, ``xfailed``, ``xpassed``),
    capability, the clauses it proves, the known-failures entry that listed it and why it did not pass."""

    nodeid: str
    outcome: str
    capability: str
    clauses: tuple[str, ...]
    backend: str | None = None
    known_failure: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "outcome": self.outcome,
            "capability": self.capability,
            "clauses": list(self.clauses),
            "backend": self.backend,
            "known_failure": self.known_failure,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class CapabilityResult:
    """One capability's counts and level; ``checks_total`` is how many checks the suite holds for it."""

    level: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    xfailed: int = 0
    failed_clauses: tuple[str, ...] = ()
    checks_total: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "level": self.level,
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
            "xfailed": self.xfailed,
            "failed_clauses": list(self.failed_clauses),
        }
        if self.checks_total is not None:
            out["checks_total"] = self.checks_total
        return out


#: How a clause fares when checks citing it differ, worst first.
_CLAUSE_OUTCOMES = ("failed", "xfailed", "passed", "skipped")


@dataclass(frozen=True)
class Report:
    """What a conformance run found for one backend (CONF-3): its name and declared capabilities, the suite
    version and seed, the overall level (``INCOMPLETE`` when checks were left out, KIT-7), a
    :class:`CapabilityResult` per capability and a :class:`CheckResult` per check. ``exit_code`` is the
    pytest exit status of the run (0: every check passed or failed as a listed known failure)."""

    backend: str
    declared_capabilities: tuple[str, ...]
    seed: int
    level: str
    checks_run: int
    checks_total: int
    capabilities: Mapping[str, CapabilityResult] = field(default_factory=dict)
    checks: tuple[CheckResult, ...] = ()
    suite_version: str = SUITE_VERSION
    exit_code: int = 0

    @classmethod
    def from_results(cls, backend: str, results: Sequence[Mapping[str, Any]], seed: int) -> Report:
        """The report of one backend's check results (as the kit's plugin records them)."""
        totals = suite_totals(results)
        overall, caps = levels(results, totals)
        return cls(
            backend=backend,
            declared_capabilities=tuple(sorted({c for r in results for c in r.get("declared_capabilities", ())})),
            seed=seed,
            level=overall,
            checks_run=len(results),
            checks_total=max(len(results), sum(totals.values())),
            capabilities={
                cap: CapabilityResult(
                    level=c["level"],
                    passed=c["passed"],
                    failed=c["failed"],
                    skipped=c["skipped"],
                    xfailed=c["xfailed"],
                    failed_clauses=tuple(c["failed_clauses"]),
                    checks_total=c.get("checks_total"),
                )
                for cap, c in caps.items()
            },
            checks=tuple(
                CheckResult(
                    nodeid=r["nodeid"],
                    outcome=r["outcome"],
                    capability=r["capability"],
                    clauses=tuple(r["clauses"]),
                    backend=r.get("backend"),
                    known_failure=r.get("known_failure"),
                    reason=r.get("reason"),
                )
                for r in results
            ),
        )

    @property
    def partial(self) -> bool:
        """Checks of the suite were left out (KIT-7): the level is not a certification."""
        return self.level == INCOMPLETE

    def clauses(self) -> dict[str, str]:
        """Each clause the checks cite, with how it fared: ``failed`` if a check citing it failed, else
        ``xfailed`` (a listed known failure), ``passed`` or ``skipped``."""
        found: dict[str, str] = {}
        for check in self.checks:
            outcome = "passed" if check.outcome == "xpassed" else check.outcome
            for clause in check.clauses:
                now = found.get(clause)
                if now is None or _CLAUSE_OUTCOMES.index(outcome) < _CLAUSE_OUTCOMES.index(now):
                    found[clause] = outcome
        return dict(sorted(found.items()))

    def overall_text(self) -> str:
        """The overall level as printed: a partial run says how much of the suite ran (KIT-7)."""
        if self.partial:
            return f"{self.level} ({self.checks_run} of {self.checks_total} checks run; not a certification)"
        return self.level

    def to_json(self) -> dict[str, Any]:
        """The JSON report (layout ``REPORT_SCHEMA``, docs/conformance/reference.md)."""
        return {
            "schema": REPORT_SCHEMA,
            "suite_version": self.suite_version,
            "seed": self.seed,
            "backend": self.backend,
            "declared_capabilities": list(self.declared_capabilities),
            "level": self.level,
            "partial": self.partial,
            "checks_run": self.checks_run,
            "checks_total": self.checks_total,
            "capabilities": {cap: c.to_json() for cap, c in self.capabilities.items()},
            "checks": [c.to_json() for c in self.checks],
        }

    def markdown(self) -> str:
        """A Markdown summary, for a README badge section."""
        lines = [
            f"**durable conformance {self.suite_version}** — `{self.backend}`: **{self.overall_text()}** "
            f"(seed {self.seed})",
            "",
            "| capability | level | passed | failed | known failures | skipped |",
            "|---|---|---|---|---|---|",
        ]
        for cap, c in self.capabilities.items():
            lines.append(f"| {cap} | {c.level} | {c.passed} | {c.failed} | {c.xfailed} | {c.skipped} |")
        return "\n".join(lines) + "\n"

    def junit(self) -> str:
        """JUnit XML: one test suite, one test case per check with its clauses and capability as properties;
        a failed check is a failure, a known failure or a skipped check is skipped with its reason."""
        failures = sum(c.outcome == "failed" for c in self.checks)
        skipped = sum(c.outcome in ("skipped", "xfailed") for c in self.checks)
        suite = ET.Element(
            "testsuite",
            name=f"durable conformance: {self.backend}",
            tests=str(len(self.checks)),
            failures=str(failures),
            errors="0",
            skipped=str(skipped),
        )
        props = ET.SubElement(suite, "properties")
        for name, value in (
            ("backend", self.backend),
            ("level", self.level),
            ("seed", str(self.seed)),
            ("suite_version", self.suite_version),
            ("declared_capabilities", ",".join(self.declared_capabilities)),
        ):
            ET.SubElement(props, "property", name=name, value=value)
        for check in self.checks:
            path, _, name = check.nodeid.rpartition("::")
            case = ET.SubElement(suite, "testcase", classname=path.replace("::", ".").removesuffix(".py"), name=name)
            case_props = ET.SubElement(case, "properties")
            ET.SubElement(case_props, "property", name="capability", value=check.capability)
            for clause in check.clauses:
                ET.SubElement(case_props, "property", name="clause", value=clause)
            if check.outcome == "failed":
                ET.SubElement(case, "failure", message=check.reason or "failed")
            elif check.outcome in ("skipped", "xfailed"):
                why = check.reason or ("known failure" if check.outcome == "xfailed" else "skipped")
                ET.SubElement(case, "skipped", message=why)
        ET.indent(suite)
        return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def write_reports(reports: Sequence[Report], path: Path) -> None:
    """The JSON report at ``path`` (one backend's, or ``backends`` listing several) and its Markdown twin
    (``path`` with ``.md``)."""
    if len(reports) == 1:
        doc = reports[0].to_json()
    else:
        first = reports[0]
        doc = {
            "schema": REPORT_SCHEMA,
            "suite_version": first.suite_version,
            "seed": first.seed,
            "backends": [r.to_json() for r in reports],
        }
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    path.with_suffix(".md").write_text("\n".join(r.markdown() for r in reports))
