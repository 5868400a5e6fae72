"""Golden journals (spec PLG-2): the ordered durable calls of a crash-free run — call id, function id,
args digest, outcome kind — stored as JSON next to the tests and compared on every run.

A digest that changes means the call would no longer replay its record after an upgrade or a restart:
the agent became nondeterministic, or its arguments stopped pickling the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference_runtime import JournalEntry, RunResult

FIELDS = ("call", "function_id", "args_digest", "outcome")
FORMAT = 1


class JournalMismatch(AssertionError):
    """A journal differs from its golden file (or between two runs); the message shows the first
    divergence field by field."""


def entries(result: RunResult | Sequence[JournalEntry]) -> list[dict[str, str]]:
    """The journal as golden entries: one per durable call that ran or was reconciled in the last attempt
    that reached it, ordered by key, sequence number, action, the action's execution and call index (so
    thread timing does not reorder it)."""
    journal = result.journal if isinstance(result, RunResult) else result
    last: dict[tuple[str, int, str, int, int], JournalEntry] = {}
    for e in journal:
        c = e.call_id
        last[(c.key, c.seq, c.action, c.execution, c.call_index)] = e
    return [
        {"call": str(e.call_id), "function_id": e.function_id, "args_digest": e.args_digest, "outcome": e.outcome}
        for _, e in sorted(last.items(), key=lambda kv: kv[0])
    ]


def first_divergence(
    golden: list[dict[str, str]], actual: list[dict[str, str]], names: tuple[str, str] = ("golden", "now")
) -> str | None:
    """A field-level description of the first entry where the two journals differ, or None; ``names``
    label the two sides."""
    a, b = names
    for i, (want, got) in enumerate(zip(golden, actual, strict=False)):
        if want != got:
            lines = [f"journal diverges at entry {i} (call {want.get('call')}):"]
            for f in FIELDS:
                if want.get(f) != got.get(f):
                    lines.append(f"  {f}: {a} {want.get(f)!r} != {b} {got.get(f)!r}")
            if want.get("function_id") == got.get("function_id") and want.get("args_digest") != got.get("args_digest"):
                lines.append(
                    "  same function, different arguments: check for time, randomness, ids or set/dict "
                    "ordering leaking into the call's arguments"
                )
            return "\n".join(lines)
    if len(golden) != len(actual):
        i = min(len(golden), len(actual))
        if len(golden) > len(actual):
            return f"journal diverges at entry {i}: {a} has {len(golden) - i} more call(s), first {golden[i]}"
        return f"journal diverges at entry {i}: {b} has {len(actual) - i} more call(s), first {actual[i]}"
    return None


def path_for(directory: Path, test_name: str, agent: str, n: int) -> Path:
    """``DIR/<test name>.<Agent>[.n].json`` with characters unsafe in file names replaced."""
    stem = re.sub(r"[^A-Za-z0-9_.\-\[\]=]+", "_", f"{test_name}.{agent}")
    return directory / (f"{stem}.json" if n == 1 else f"{stem}.{n}.json")


def load(path: Path) -> list[dict[str, str]]:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise JournalMismatch(f"golden journal {path} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("calls"), list):
        raise JournalMismatch(f"golden journal {path} is not a format-{FORMAT} journal file")
    calls: list[dict[str, str]] = data["calls"]
    return calls


def save(path: Path, agent: str, calls: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"format": FORMAT, "agent": agent, "calls": calls}, indent=1, sort_keys=True)
    path.write_text(text + "\n", encoding="utf-8")


def compare(path: Path, agent: str, calls: list[dict[str, str]], *, update: bool) -> str:
    """Check ``calls`` against the golden file at ``path`` (or write it when ``update``).

    Returns ``"written"``, ``"updated"`` or ``"matched"``; raises :class:`JournalMismatch` otherwise.
    """
    if update:
        existed = path.exists()
        if not existed or load(path) != calls:
            save(path, agent, calls)
            return "updated" if existed else "written"
        return "matched"
    if not path.exists():
        raise JournalMismatch(f"no golden journal at {path}; run pytest with --durable-update-journals to write it")
    diff = first_divergence(load(path), calls)
    if diff is not None:
        raise JournalMismatch(
            f"{agent}: durable calls differ from the golden journal {path} (PLG-2)\n{diff}\n"
            "If the change is intended, rerun with --durable-update-journals."
        )
    return "matched"
