"""Crash scenarios: a schedule of crash selectors plus the runtime switches a scenario runs under.

A selector is written as text so that a failing schedule can be pasted back into a test; the grammar is
:meth:`CrashAt.parse <reference_runtime.CrashAt.parse>` (its one home, beside the selector type), written back
by :meth:`CrashAt.text <reference_runtime.CrashAt.text>`::

    call3:after-effect                       # the first call-3 after-effect point of any key
    call3:after-effect?key=order-1&seq=0     # narrowed to one input
    handle:before-complete?nth=2             # the second time action ``handle`` is about to complete
    call0:after-record?key=k&seq=0&action=chat&execution=2   # in the second execution of ``chat``

``nth`` counts matches from the moment the selector is armed, so in a schedule the second selector can
fire during the recovery that the first one caused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reference_runtime.config import KEYS
from reference_runtime.durable import MismatchMode
from reference_runtime.faults import CrashAt, FaultPoint, ScheduleSyntaxError

__all__ = [
    "MismatchMode",
    "Scenario",
    "ScheduleSyntaxError",
    "scenario_from_marker",
    "selector_for",
]


#: The runtime config key of the reconciler switch (DE-14), as the key registry names it.
RECONCILERS_KEY = next(k.name for k in KEYS if k.attr == "reconcilers")


def selector_for(point: FaultPoint, nth: int = 1) -> CrashAt:
    """The narrowest selector for ``point``: of its action's execution too, when that is not the first
    (FLT-6)."""
    execution = None if point.execution == 1 else point.execution
    return CrashAt(point.phase, point.key, point.seq, point.action, point.call_index, nth, execution)


@dataclass(frozen=True)
class Scenario:
    """One crash-test scenario: crash at each selector of ``schedule`` in turn (recovering after each),
    under ``mismatch`` mode, with reconcilers honoured or ignored."""

    schedule: tuple[CrashAt, ...] = ()
    mismatch: MismatchMode = "lenient"
    reconcilers: bool = True

    @classmethod
    def of(cls, *selectors: str | CrashAt, mismatch: MismatchMode = "lenient", reconcilers: bool = True) -> Scenario:
        crashes = tuple(CrashAt.parse(s) if isinstance(s, str) else s for s in selectors)
        return cls(crashes, mismatch, reconcilers)

    def texts(self) -> list[str]:
        return [c.text() for c in self.schedule]

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
            options["config"] = {RECONCILERS_KEY: False}
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
