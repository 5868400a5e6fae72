"""The list of the installed flink_agents package's tests that the CI lane deselects, with their reasons
(spec FA-12): read from ``upstream_deselected.toml`` beside this file, and rendered as the generated part of
docs/flink-agents-upstream.md. Imports nothing of flink_agents, so the main suite checks the two agree."""

from __future__ import annotations

import tomllib
from pathlib import Path

LIST = Path(__file__).with_name("upstream_deselected.toml")


def load_list() -> tuple[dict[str, str], dict[str, list[str]]]:
    """The reasons (name -> text) and, per reason name, the ids of the tests deselected for it."""
    data = tomllib.loads(LIST.read_text(encoding="utf-8"))
    reasons: dict[str, str] = data["reasons"]
    by_reason: dict[str, list[str]] = data["deselected"]
    unknown = set(by_reason) - set(reasons)
    if unknown:
        raise ValueError(f"{LIST}: tests listed under reasons that are not defined: {sorted(unknown)}")
    return reasons, by_reason


def deselected() -> dict[str, str]:
    """Test id -> reason name."""
    _, by_reason = load_list()
    return {test: reason for reason, tests in by_reason.items() for test in tests}


def markdown() -> str:
    """The generated list of docs/flink-agents-upstream.md: one section per reason, its tests by id."""
    reasons, by_reason = load_list()
    lines = [f"{sum(map(len, by_reason.values()))} tests in {len(reasons)} groups.", ""]
    for name, text in reasons.items():
        tests = by_reason.get(name, [])
        lines += [f"### `{name}` ({len(tests)})", "", text, ""]
        lines += [f"- `{test}`" for test in tests]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
