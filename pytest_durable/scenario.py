"""Crash scenarios: a schedule of crash selectors plus the runtime switches a scenario runs under.

A selector is written as text so that a failing schedule can be pasted back into a test::

    call3:after-effect                       # the first call-3 after-effect point of any key
    call3:after-effect?key=order-1&seq=0     # narrowed to one input
    handle:before-complete?nth=2             # the second time action ``handle`` is about to complete

``nth`` counts matches from the moment the selector is armed, so in a schedule the second selector can
fire during the recovery that the first one caused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, quote, urlencode

from reference_runtime.faults import CrashAt, FaultPoint, Phase

MismatchMode = Literal["lenient", "strict"]


class ScheduleSyntaxError(ValueError):
    """A crash selector string that cannot be parsed; the message names the text and what is wrong."""


def format_crash(c: CrashAt) -> str:
    """The text form of a selector (inverse of :func:`parse_crash`)."""
    if c.phase is None:
        raise ScheduleSyntaxError(f"{c!r}: a selector in a schedule needs a phase")
    if c.call_index is not None:
        head = f"call{c.call_index}:{c.phase.value}"
    elif c.action is not None and c.key is None and c.seq is None:
        head = f"{c.action}:{c.phase.value}"
    else:
        head = c.phase.value
    query: list[tuple[str, str]] = []
    if c.key is not None:
        query.append(("key", c.key))
    if c.seq is not None:
        query.append(("seq", str(c.seq)))
    if c.action is not None and not head.startswith(f"{c.action}:"):
        query.append(("action", c.action))
    if c.nth != 1:
        query.append(("nth", str(c.nth)))
    return head + ("?" + urlencode(query, quote_via=quote) if query else "")


def parse_crash(text: str) -> CrashAt:
    """Parse ``callN:phase``, ``action:phase`` or ``phase``, optionally followed by
    ``?key=…&seq=…&action=…&nth=…``."""
    head, _, query = text.strip().partition("?")
    try:
        base = CrashAt.parse(head)
    except ValueError:
        phases = ", ".join(p.value for p in Phase)
        raise ScheduleSyntaxError(f"crash selector {text!r}: unknown phase (one of {phases})") from None
    fields: dict[str, str] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise ScheduleSyntaxError(
            f"crash selector {text!r}: the part after '?' must be name=value pairs joined by '&' ({exc})"
        ) from None
    for name, value in pairs:
        if name not in ("key", "seq", "action", "nth") or name in fields:
            raise ScheduleSyntaxError(f"crash selector {text!r}: unknown or repeated field {name!r}")
        fields[name] = value
    for name in ("seq", "nth"):
        # isascii: str.isdigit admits digits such as '²' that int() refuses; 18 digits keep int() cheap.
        if name in fields and not (fields[name].isascii() and fields[name].isdigit() and len(fields[name]) <= 18):
            raise ScheduleSyntaxError(f"crash selector {text!r}: {name} must be a non-negative integer")
    nth = int(fields.get("nth", "1"))
    if nth < 1:
        raise ScheduleSyntaxError(f"crash selector {text!r}: nth counts from 1")
    return CrashAt(
        base.phase,
        fields.get("key", base.key),
        int(fields["seq"]) if "seq" in fields else base.seq,
        fields.get("action", base.action),
        base.call_index,
        nth,
    )


def selector_for(point: FaultPoint, nth: int = 1) -> CrashAt:
    """The narrowest selector for ``point``."""
    return CrashAt(point.phase, point.key, point.seq, point.action, point.call_index, nth)


@dataclass(frozen=True)
class Scenario:
    """One crash-test scenario: crash at each selector of ``schedule`` in turn (recovering after each),
    under ``mismatch`` mode, with reconcilers honoured or ignored."""

    schedule: tuple[CrashAt, ...] = ()
    mismatch: MismatchMode = "lenient"
    reconcilers: bool = True

    @classmethod
    def of(cls, *selectors: str | CrashAt, mismatch: MismatchMode = "lenient", reconcilers: bool = True) -> Scenario:
        crashes = tuple(parse_crash(s) if isinstance(s, str) else s for s in selectors)
        return cls(crashes, mismatch, reconcilers)

    def texts(self) -> list[str]:
        return [format_crash(c) for c in self.schedule]

    def describe(self) -> str:
        crashes = " then ".join(self.texts()) or "no crash"
        return f"{crashes} [mismatch={self.mismatch}, reconcilers={'on' if self.reconcilers else 'off'}]"

    def decorator(self) -> str:
        """The marker that pins this scenario in a test (``durable.explore`` runs it first)."""
        args = [repr(t).replace("'", '"') for t in self.texts()]
        if self.mismatch != "lenient":
            args.append(f'mismatch="{self.mismatch}"')
        if not self.reconcilers:
            args.append("reconcilers=False")
        return f"@pytest.mark.durable_schedule({', '.join(args)})"

    def runner_options(self) -> dict[str, object]:
        options: dict[str, object] = {"mismatch": self.mismatch}
        if not self.reconcilers:
            options["config"] = {"durable-execution.reconcilers": False}
        return options


def scenario_from_marker(args: Sequence[object], kwargs: dict[str, object]) -> Scenario:
    """The :class:`Scenario` a ``durable_schedule`` marker describes."""
    bad = [a for a in args if not isinstance(a, str)]
    if bad:
        raise ScheduleSyntaxError(f"durable_schedule takes selector strings, got {bad!r}")
    unknown = set(kwargs) - {"mismatch", "reconcilers"}
    if unknown:
        raise ScheduleSyntaxError(f"durable_schedule: unknown keyword(s) {sorted(unknown)}")
    mismatch = kwargs.get("mismatch", "lenient")
    if mismatch not in ("lenient", "strict"):
        raise ScheduleSyntaxError(f"durable_schedule: mismatch must be 'lenient' or 'strict', not {mismatch!r}")
    return Scenario.of(*[str(a) for a in args], mismatch=mismatch, reconcilers=bool(kwargs.get("reconcilers", True)))
