"""Lines of agents' code measured with coverage.py, by dynamic context (spec COV-3, COV-7): while an action
execution runs, the measurement's context names it, ``durable:run Agent.action`` or ``durable:recovery
Agent.action after <selector>`` when it re-enters the action after a crash; outside executions the context is
what it was.

If coverage.py is already measuring the process (``coverage run``, pytest-cov), that measurement is used: a second
tracer would take the first one's place. Its lines stay as they are; the contexts are added after its own
(``<its context>|durable:run …``), and only files it measures can be reported (the others are reported as not
measured, COV-7). Otherwise a measurement of our own starts, which writes no data file, leaves this distribution's
packages untraced and is stopped by :meth:`Lines.stop`.

This module imports coverage.py; nothing imports this module unless crash coverage is asked for (COV-8).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import coverage

from .reached import untraced

__all__ = ["Lines", "MissingCoverage", "require_coverage"]

#: The extra that installs coverage.py for crash coverage.
EXTRA = "pytest-durable[coverage]"


class MissingCoverage(RuntimeError):
    """Crash coverage was asked for but coverage.py is not installed; the message names the extra."""


def require_coverage(option: str) -> None:
    """Raise :class:`MissingCoverage` naming ``option`` and the extra if coverage.py cannot be imported."""
    import importlib.util

    if importlib.util.find_spec("coverage") is None:
        raise MissingCoverage(f"{option} needs coverage.py: pip install '{EXTRA}'")


def _ours(context: str) -> str:
    """The crash-coverage part of a measured context (``""`` for lines run outside any action execution)."""
    at = context.find("durable:")
    return context[at:] if at >= 0 else ""


class Lines:
    """A coverage.py measurement and the context switching around action executions."""

    def __init__(self, cov: coverage.Coverage, owned: bool) -> None:
        self.cov = cov
        #: Whether this measurement is ours (started and stopped here) or the process's own (COV-7).
        self.owned = owned
        static = cov.get_option("run:context")
        self._static = str(static) if static else ""
        self._open: dict[int, str] = {}  # execution token -> its context, in start order
        self._outer = ""  # the context before the first open execution
        self._current: str | None = None
        #: The files of modules imported before our own measurement started: their import-time lines were not
        #: measured. Unknown for a running measurement (it may have started before them): empty then.
        self.preimported = (
            {str(Path(f).resolve()) for m in list(sys.modules.values()) if (f := getattr(m, "__file__", None))}
            if owned
            else set()
        )

    @classmethod
    def start(cls) -> Lines:
        """Measure from now on: with the coverage.py measurement already running in this process if there is one,
        else with one of our own."""
        running = coverage.Coverage.current()
        if running is not None:
            return cls(running, owned=False)
        cov = coverage.Coverage(data_file=None, config_file=False, omit=untraced())
        cov.set_option("run:disable_warnings", ["no-data-collected", "module-not-measured", "module-not-imported"])
        lines = cls(cov, owned=True)
        cov.start()
        return lines

    def stop(self) -> None:
        """Stop our own measurement (a running one of the process's is left alone)."""
        if self.owned:
            self.cov.stop()

    # -- contexts ------------------------------------------------------------------------------------------------

    def _switch(self, label: str) -> str:
        """Switch to ``label``; returns the previous dynamic context (without the static one)."""
        previous = self.cov.switch_context(label) or ""
        self._current = label
        if self._static:
            previous = previous[len(self._static) + 1 :] if previous.startswith(self._static + "|") else ""
        return previous

    def enter(self, token: int, label: str) -> None:
        """An action execution (``token``) starts: its lines are measured under ``label``, after the process's
        own context if the measurement is the process's."""
        if not self._open:
            self._current = None
            self._outer = "" if self.owned else self._switch(label)
        full = f"{self._outer}|{label}" if self._outer else label
        self._open[token] = full
        if full != self._current:
            self._switch(full)

    def leave(self, token: int) -> None:
        """The execution ``token`` ended: back to the latest execution still open (an async agent's keys
        interleave), or to the context before them all."""
        self._open.pop(token, None)
        target = next(reversed(self._open.values())) if self._open else self._outer
        if target != self._current:
            self._switch(target)

    # -- harvest -------------------------------------------------------------------------------------------------

    def harvest(self, files: Iterable[str]) -> dict[str, Any]:
        """For each of ``files``: ``{line: [our contexts]}`` of its measured lines (``""``: run outside an action
        execution), or None if this measurement does not measure the file (COV-7)."""
        data = self.cov.get_data()
        data.set_query_contexts(None)
        measured = {os.path.realpath(f): f for f in data.measured_files()}
        out: dict[str, Any] = {}
        for path in files:
            name = measured.get(os.path.realpath(path))
            if name is None:
                out[path] = None
                continue
            by_line = data.contexts_by_lineno(name)
            out[path] = {str(line): sorted({_ours(c) for c in contexts}) for line, contexts in by_line.items()}
        return out
