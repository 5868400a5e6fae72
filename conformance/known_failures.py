"""Known-failures files: checks a backend is known to fail, run as strict xfail (spec CONF-5).

The file is plain text, one entry a line::

    # comments and blank lines are ignored
    TestMyStore::test_prune_boundaries        # prune keeps seq == n, fixed in 2.1
    test_store.py::TestMyStore::test_rebuild_after_restart   # no restart support yet

An entry is a pytest node id or a suffix of one that starts at a ``::`` or ``/`` boundary, then at least
one space, ``#`` and the reason (the reason may be empty). An entry without ``[…]`` also matches every
parametrization of the test it names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(r"^(?P<entry>\S(?:.*?\S)?)(?:\s+#\s?(?P<reason>.*))?$")


class KnownFailuresError(ValueError):
    """A known-failures file that cannot be read."""


@dataclass(frozen=True)
class KnownFailure:
    """One entry of a known-failures file: what it matches, why it is listed, and where."""

    entry: str
    reason: str
    source: str
    line: int

    def matches(self, nodeid: str) -> bool:
        """Whether this entry names ``nodeid`` (see the module docstring for the rule)."""
        if _suffix_match(nodeid, self.entry):
            return True
        if "[" not in self.entry and nodeid.endswith("]") and "[" in nodeid:
            return _suffix_match(nodeid[: nodeid.index("[")], self.entry)
        return False

    def where(self) -> str:
        return f"{self.source}:{self.line}"

    def xfail_reason(self) -> str:
        """The reason given to pytest's strict xfail: names the entry, so an XPASS(strict) says what to remove."""
        why = f": {self.reason}" if self.reason else ""
        return f"known failure {self.entry!r} ({self.where()}){why}"


def _suffix_match(nodeid: str, entry: str) -> bool:
    if nodeid == entry:
        return True
    if not nodeid.endswith(entry):
        return False
    before = nodeid[: len(nodeid) - len(entry)]
    return before.endswith("::") or before.endswith("/")


def parse(text: str, source: str = "<known failures>") -> list[KnownFailure]:
    """Entries of a known-failures file in file order; raises :class:`KnownFailuresError` on a bad line."""
    entries: list[KnownFailure] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:  # pragma: no cover - the pattern accepts every stripped non-empty line
            raise KnownFailuresError(f"{source}:{number}: cannot parse {raw!r}")
        entry = m["entry"]
        if "#" in entry.split("[", 1)[0]:
            raise KnownFailuresError(
                f"{source}:{number}: put at least one space before the '#' that starts the reason: {raw!r}"
            )
        entries.append(KnownFailure(entry, (m["reason"] or "").strip(), source, number))
    return entries


def load(path: Path) -> list[KnownFailure]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KnownFailuresError(f"cannot read the known-failures file {path}: {exc}") from exc
    return parse(text, str(path))


def match(entries: Sequence[KnownFailure], nodeid: str) -> KnownFailure | None:
    """The first entry naming ``nodeid``, or None."""
    for e in entries:
        if e.matches(nodeid):
            return e
    return None


def unmatched(entries: Sequence[KnownFailure], nodeids: Iterable[str]) -> list[KnownFailure]:
    """Entries that name none of ``nodeids``, in file order."""
    ids = list(nodeids)
    return [e for e in entries if not any(e.matches(n) for n in ids)]


def render(failures: Iterable[tuple[str, str]], *, header: str | None = None) -> str:
    """A known-failures file listing ``(nodeid, reason)`` pairs, sorted by node id; reasons are cut to
    one line."""
    lines = [f"# {h}" for h in (header or "").splitlines()]
    width = 0
    rows = sorted({nodeid: _one_line(reason) for nodeid, reason in failures}.items())
    if rows:
        width = max(len(n) for n, _ in rows)
    lines += [f"{nodeid.ljust(width)}  # {reason}".rstrip() for nodeid, reason in rows]
    return "\n".join(lines) + "\n"


def _one_line(reason: str) -> str:
    first = next((ln.strip() for ln in reason.splitlines() if ln.strip()), "")
    return first if len(first) <= 160 else first[:157] + "..."
