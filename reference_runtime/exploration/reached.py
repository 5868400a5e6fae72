"""What a session's crash tests reached, per agent (spec COV-2, COV-3, COV-4): the fault points its crash-free
runs reached and how often a crash fired at each; its actions' executions and re-entries after a crash; how often
each durable function's result was executed, replayed from its record and reconciled; the reconcilers its calls
were given and how often recovery invoked them; the memory paths its completed actions wrote and how often
recovery replayed those writes.

A :class:`Tally` is fed by the engine with fault points (:func:`crash_free` and :func:`crashed`, called where the
engine runs an agent: ``learn``, ``run_scenario``, the snapshot starts, the harness's plain runs) and by the runtime
through its observer hook (:mod:`reference_runtime.observe`, which a tally implements). Fault points are named
only through the engine's selectors (:func:`~reference_runtime.exploration.scenario.selector_for`,
:meth:`CrashAt.text <reference_runtime.CrashAt.text>`). A tally is plain data: it serializes to JSON and merges,
so that xdist workers' tallies combine on the controller (COV-6). Nothing is recorded unless one is active
(:func:`activate`), and nothing here imports coverage.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import sysconfig
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reference_runtime import observe
from reference_runtime.faults import FaultPoint

from .scenario import selector_for

if TYPE_CHECKING:
    from reference_runtime import Agent
    from reference_runtime.durable import JournalEntry
    from reference_runtime.records import ActionState, StateRef


__all__ = [
    "RECOVERY",
    "RUN",
    "Tally",
    "activate",
    "active",
    "agent_name",
    "crash_free",
    "crashed",
    "site_of",
    "untraced",
]

#: The coverage.py context label of lines an action ran in an execution that re-entered nothing.
RUN = "durable:run"
#: The coverage.py context label of lines an action ran re-entering after a crash (recovery).
RECOVERY = "durable:recovery"

_HOME = Path(__file__).resolve().parents[2]
#: The packages of this distribution: their code is the runtime's, never an agent's; except the example agents,
#: which may be packaged inside them (``pytest_durable/examples/``).
_OURS = tuple(str(_HOME / name) + os.sep for name in ("reference_runtime", "pytest_durable", "conformance"))
_EXAMPLES = str(_HOME / "pytest_durable" / "examples") + os.sep


def untraced() -> list[str]:
    """coverage.py ``omit`` patterns for this distribution's own code (not its example agents)."""
    plugin = _HOME / "pytest_durable"
    inside = [
        str(d / "*") for d in sorted(plugin.iterdir()) if d.is_dir() and d.name not in ("examples", "__pycache__")
    ]
    return [str(_HOME / "reference_runtime" / "*"), str(_HOME / "conformance" / "*"), str(plugin / "*.py"), *inside]


#: Where the standard library and installed third-party packages live (a durable function there is not the
#: agent's own code, e.g. ``time.time``).
_INSTALLED = tuple(
    {
        str(Path(p).resolve()) + os.sep
        for k in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_path(k))
    }
)

_tally: Tally | None = None


class Contexts(Protocol):
    """What measures lines by context while executions run (:class:`~reference_runtime.exploration.lines.Lines`)."""

    def enter(self, token: int, label: str) -> None: ...

    def leave(self, token: int) -> None: ...


def active() -> Tally | None:
    """The tally recording now, or None."""
    return _tally


def activate(tally: Tally | None) -> Tally | None:
    """Record into ``tally`` from now on (None: stop recording): the engine's fault points and, through the
    runtime's observer hook, every action execution of the process. Returns the previous tally."""
    global _tally
    previous, _tally = _tally, tally
    observe.watch(tally)
    return previous


def crash_free(agent: Any, trace: Sequence[FaultPoint]) -> None:
    """The engine ran ``agent`` without a crash and it reached ``trace`` (no-op unless a tally is active)."""
    if _tally is not None:
        _tally.reached(agent, trace)


def crashed(agent: Any, fired: Sequence[FaultPoint]) -> None:
    """The engine crashed ``agent`` at ``fired`` (no-op unless a tally is active)."""
    if _tally is not None and fired:
        _tally.fired(agent, fired)


def agent_name(agent: Any) -> str:
    """``module.QualName`` of the agent class the runner drives for ``agent`` (a flink_agents agent's adapted
    class, whose name is the agent's own)."""
    cls = agent if isinstance(agent, type) else type(agent)
    return f"{cls.__module__}.{cls.__qualname__}"


def site_of(point: FaultPoint) -> str:
    """The point's place in the agent's code, the same for every input: its selector without key and seq."""
    return dataclasses.replace(selector_for(point), key=None, seq=None).text()


def _source(obj: Any) -> tuple[str, int, int] | None:
    """The resolved source file of a function and its first and last line, or None."""
    try:
        func = inspect.unwrap(obj)
        lines, first = inspect.getsourcelines(func)
        path = inspect.getsourcefile(func)
    except (TypeError, OSError):
        return None
    if path is None:
        return None
    return str(Path(path).resolve()), first, first + len(lines) - 1


def _own(path: str, installed_too: bool = False) -> bool:
    """Whether ``path`` is an agent's own code: not this distribution's, and (for code the agent merely calls)
    not the standard library's nor an installed package's."""
    ours = path.startswith(_OURS) and not path.startswith(_EXAMPLES)
    return not ours and not (installed_too and path.startswith(_INSTALLED))


def _module_file(function_id: str) -> str | None:
    """The file of the longest imported module that ``function_id`` (``module.qualname``) starts with."""
    parts = function_id.split(".")
    for n in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:n]))
        if module is not None:
            path = getattr(module, "__file__", None)
            return str(Path(path).resolve()) if path else None
    return None


@dataclasses.dataclass
class Site:
    """A fault point's place in one agent's code (:func:`site_of`) and what the session did there."""

    selector: str  # the first reached point's own selector, to paste into crash_at= or durable.crash()
    test: str  # the first test (by name) whose crash-free run reached it
    phase: str
    action: str | None
    call_index: int | None
    function: str | None
    reached: int = 0  # crash-free runs that reached it
    crashed: int = 0  # crashes that fired there


@dataclasses.dataclass
class AgentTally:
    """Everything recorded about one agent."""

    points: dict[str, Site] = dataclasses.field(default_factory=dict)
    #: action -> {"executions", "recoveries", "file", "first", "last"}
    actions: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: durable function id -> {"executed", "replayed", "reconciled", "file"}
    functions: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: "action/call index/function id" -> {"action", "call_index", "function", "reconciler", "file", "line", "invoked"}
    reconcilers: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: "action/memory/path" -> {"action", "memory", "path", "written", "replayed"}
    memory: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: The agent's own source files (its class's module, its actions', its durable functions', its reconcilers').
    files: set[str] = dataclasses.field(default_factory=set)


class Tally:
    """The session's record (see the module docstring); also the runtime's
    :class:`~reference_runtime.observe.Observer`."""

    def __init__(self, lines: Contexts | None = None) -> None:
        self.agents: dict[str, AgentTally] = {}
        #: The test running now, named in the sites it reaches first.
        self.test = "collection"
        #: Measures lines by context while action executions run; None: fault points and durable state only.
        self.lines = lines
        self._running: dict[int, str] = {}  # id(StateRef) -> agent name, while its execution runs
        self._known: set[type] = set()

    # -- the engine's fault points ---------------------------------------------------------------------------

    def reached(self, agent: Any, trace: Iterable[FaultPoint]) -> None:
        tally = self._agent(agent)
        seen: set[str] = set()
        for point in trace:
            site, known = self._site(tally, point)
            if site not in seen:  # a run counts once per site, however often it passes it
                seen.add(site)
                known.reached += 1

    def fired(self, agent: Any, fired: Iterable[FaultPoint]) -> None:
        tally = self._agent(agent)
        for point in fired:  # a point may be new here: reached only after an earlier crash of a schedule
            self._site(tally, point)[1].crashed += 1

    def _site(self, tally: AgentTally, point: FaultPoint) -> tuple[str, Site]:
        """The point's place and what is known of it, naming the first test by name that reached it (so that a
        run under xdist names the same one) and that test's selector."""
        site = site_of(point)
        selector = selector_for(point).text()
        known = tally.points.get(site)
        if known is None:
            known = tally.points[site] = Site(
                selector, self.test, point.phase.value, point.action, point.call_index, point.function_id
            )
        elif (self.test, selector) < (known.test, known.selector):
            known.test, known.selector = self.test, selector
        return site, known

    # -- the runtime's observer hook (reference_runtime.observe) ------------------------------------------------

    def action_started(self, agent: type[Agent], ref: StateRef, recovery: bool, after: FaultPoint | None) -> None:
        name = agent_name(agent)
        action = ref.action.name
        tally = self._agent(agent)
        counts = tally.actions.setdefault(action, {"executions": 0, "recoveries": 0})
        counts["executions"] += 1
        counts["recoveries"] += recovery
        self._running[id(ref)] = name
        if self.lines is not None:
            label = f"{RECOVERY if recovery else RUN} {agent.__qualname__}.{action}"
            if recovery and after is not None:
                label += f" after {selector_for(after).text()}"
            self.lines.enter(id(ref), label)

    def action_ended(self, agent: type[Agent], ref: StateRef, journal: Sequence[JournalEntry]) -> None:
        if self.lines is not None:
            self.lines.leave(id(ref))
        self._running.pop(id(ref), None)
        tally = self._agent(agent)
        for entry in journal:
            fid = entry.function_id
            counts = tally.functions.get(fid)
            if counts is None:
                counts = tally.functions[fid] = {"executed": 0, "replayed": 0, "reconciled": 0}
                path = _module_file(fid)
                if path is not None and _own(path, installed_too=True):
                    tally.files.add(path)
            counts[entry.source] += 1
            if entry.source == "reconciled":
                key = f"{entry.call_id.action}/{entry.call_id.call_index}/{fid}"
                known = tally.reconcilers.get(key)
                if known is not None:
                    known["invoked"] += 1

    def action_completed(self, agent: type[Agent], ref: StateRef, state: ActionState) -> None:
        self._memory(agent, ref, state, "written")

    def action_replayed(self, agent: type[Agent], ref: StateRef, state: ActionState) -> None:
        self._memory(agent, ref, state, "replayed")

    def reconciler_given(self, ref: StateRef, index: int, function_id: str, reconciler: Callable[[], Any]) -> None:
        name = self._running.get(id(ref))
        if name is None:  # a call outside any execution this tally saw start
            return
        tally = self.agents[name]
        key = f"{ref.action.name}/{index}/{function_id}"
        if key not in tally.reconcilers:
            where = _source(reconciler)
            if where is not None and _own(where[0], installed_too=True):
                tally.files.add(where[0])
            tally.reconcilers[key] = {
                "action": ref.action.name,
                "call_index": index,
                "function": function_id,
                "reconciler": getattr(reconciler, "__qualname__", repr(reconciler)),
                "file": where[0] if where else None,
                "line": where[1] if where else None,
                "invoked": 0,
            }

    # -- helpers -------------------------------------------------------------------------------------------------

    def _agent(self, agent: Any) -> AgentTally:
        name = agent_name(agent)
        tally = self.agents.get(name)
        if tally is None:
            tally = self.agents[name] = AgentTally()
        cls = agent if isinstance(agent, type) else type(agent)
        if cls not in self._known and hasattr(cls, "actions"):
            self._known.add(cls)
            self._describe(cls, tally)
        return tally

    @staticmethod
    def _describe(cls: type[Any], tally: AgentTally) -> None:
        """The agent's actions with their source lines, and its own files."""
        module = sys.modules.get(cls.__module__)
        path = getattr(module, "__file__", None)
        if path and _own(str(Path(path).resolve())):
            tally.files.add(str(Path(path).resolve()))
        try:
            specs = cls.actions()
        except Exception:  # a flink_agents agent instance: the runner hands its adapted class later
            return
        for spec in specs:
            counts = tally.actions.setdefault(spec.name, {"executions": 0, "recoveries": 0})
            where = _source(spec.func)
            if where is not None and _own(where[0]):
                tally.files.add(where[0])
                counts.update(file=where[0], first=where[1], last=where[2])

    def _memory(self, agent: type[Agent], ref: StateRef, state: ActionState, what: str) -> None:
        tally = self._agent(agent)
        for kind, updates in (
            ("short_term", state.short_term_memory_updates),
            ("sensory", state.sensory_memory_updates),
        ):
            for update in updates:
                key = f"{ref.action.name}/{kind}/{update.path}"
                entry = tally.memory.get(key)
                if entry is None:
                    entry = tally.memory[key] = {
                        "action": ref.action.name,
                        "memory": kind,
                        "path": update.path,
                        "written": 0,
                        "replayed": 0,
                    }
                entry[what] += 1

    # -- JSON, for xdist (COV-6) ---------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            name: {
                "points": {site: dataclasses.asdict(s) for site, s in t.points.items()},
                "actions": t.actions,
                "functions": t.functions,
                "reconcilers": t.reconcilers,
                "memory": t.memory,
                "files": sorted(t.files),
            }
            for name, t in self.agents.items()
        }

    def merge(self, data: dict[str, Any]) -> None:
        """Add another tally's :meth:`to_json` (a worker's) to this one."""
        for name, agent in data.items():
            tally = self.agents.setdefault(name, AgentTally())
            for site, s in agent["points"].items():
                known = tally.points.get(site)
                if known is None:
                    tally.points[site] = Site(**s)
                else:
                    known.reached += s["reached"]
                    known.crashed += s["crashed"]
                    if (s["test"], s["selector"]) < (known.test, known.selector):  # the same choice on every run
                        known.test, known.selector = s["test"], s["selector"]
            for action, counts in agent["actions"].items():
                mine = tally.actions.setdefault(action, {"executions": 0, "recoveries": 0})
                mine["executions"] += counts["executions"]
                mine["recoveries"] += counts["recoveries"]
                mine.update({k: v for k, v in counts.items() if k in ("file", "first", "last")})
            for table, summed in (
                ("functions", ("executed", "replayed", "reconciled")),
                ("reconcilers", ("invoked",)),
                ("memory", ("written", "replayed")),
            ):
                mine_table: dict[str, dict[str, Any]] = getattr(tally, table)
                for key, entry in agent[table].items():
                    if key not in mine_table:
                        mine_table[key] = dict(entry)
                    else:
                        for field in summed:
                            mine_table[key][field] += entry[field]
            tally.files.update(agent["files"])
