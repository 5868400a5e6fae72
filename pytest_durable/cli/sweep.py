"""``durable sweep MODULE:Agent --inputs FILE``: crash an agent once at every fault point of its crash-free run,
recover, and print the matrix and the verdict (spec CLI-1, PLG-1, PLG-3, PLG-16, PLG-17)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import crash_coverage
from .args import CommandError, Parser, checked_url, load
from .progress import ProgressLine, wanted

if TYPE_CHECKING:
    from reference_runtime.exploration.verdict import Verdict


def read_inputs(path: str) -> list[tuple[str, Any]]:
    """JSON lines ``{"key": …, "input": …}``; every problem names the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"--inputs {path!r}: cannot read it ({exc})") from None
    inputs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CommandError(
                f'--inputs {path}:{n}: not JSON ({exc.msg}); expected one {{"key": ..., "input": ...}} per line'
            ) from None
        if not isinstance(item, dict) or "key" not in item or "input" not in item:
            raise CommandError(
                f'--inputs {path}:{n}: expected an object {{"key": ..., "input": ...}}, got {line.strip()[:60]}'
            )
        inputs.append((str(item["key"]), item["input"]))
    if not inputs:
        raise CommandError(f"--inputs {path!r}: no inputs (one JSON object per line)")
    return inputs


def read_shard(text: str | None) -> tuple[int, int] | None:
    """``--shard K/N`` as the engine's ``shard=(K - 1, N)``; None without the option."""
    if text is None:
        return None
    k, sep, n = text.partition("/")
    if sep and k.strip().isdigit() and n.strip().isdigit() and 1 <= int(k) <= int(n):
        return int(k) - 1, int(n)
    raise CommandError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. --shard 1/2 for the first of two parts")


def _shard_joined(argv: list[str]) -> list[str]:
    """``--shard -1/2`` as ``--shard=-1/2``: argparse takes a value starting with ``-`` for an option and never
    hands it to :func:`read_shard`, whose error says what a part is."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] == "--shard" and arg.startswith("-") and arg[1:2].isdigit():
            out[-1] = f"--shard={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str]) -> int:
    parser = Parser(
        prog="durable sweep",
        description="crash an agent once at every fault point of its "
        "crash-free run, recover, and check every invariant",
    )
    parser.add_argument("agent", metavar="MODULE:AgentClass")
    parser.add_argument("--inputs", required=True, metavar="FILE", help='JSON lines {"key": …, "input": …}')
    parser.add_argument(
        "--effect",
        action="append",
        default=[],
        metavar="MODULE:NAME[@PARAM]",
        help="a function or method with an external side effect (NAME may be dotted, e.g. "
        "services:MAILER.send); every call is counted per idempotency id and a "
        "duplicated or lost effect fails the sweep (PLG-3). @PARAM: the external system "
        "deduplicates on that argument (e.g. services:PAYMENTS.refund@request_id). Repeatable",
    )
    parser.add_argument("--store", metavar="URL", default="memory:", help="store to crash against (default memory:)")
    parser.add_argument(
        "--re-execute",
        action="store_true",
        help="run the agent up to every crash point instead of starting from snapshots of the crash-free "
        "run (slower, same verdict; for debugging) (PLG-16)",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="run the K-th of N parts of the sweep (K from 1), cut where their costs balance; N processes, one "
        "per part, together crash every point once and each decides as the whole sweep would (PLG-29, CLI-8)",
    )
    parser.add_argument(
        "--virtual-clock",
        action="store_true",
        help="run the agent on a virtual clock: retry backoffs and batch deadlines take no real time (CLI-8)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print how many scenarios started from a snapshot and why the others re-executed (PLG-17)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="draw a progress line on standard error (points done, crashes fired, time left); default: only "
        "when standard error is a terminal (CLI-7)",
    )
    crash_coverage.add_arguments(parser)
    args = parser.parse_args(_shard_joined(argv))
    with crash_coverage.measuring(args):  # from before the agent's module is imported (COV-1)
        return _sweep(args)


def _sweep(args: argparse.Namespace) -> int:
    from reference_runtime.flink_agents_compat import is_agent

    agent = load(args.agent, "durable sweep")
    if not is_agent(agent):
        raise CommandError(
            f"durable sweep {args.agent!r}: not an Agent subclass nor a flink_agents Agent (got {type(agent).__name__})"
        )
    inputs = read_inputs(args.inputs)
    shard = read_shard(args.shard)
    from reference_runtime.exploration.ledger import Ledger
    from reference_runtime.exploration.sweep import start_summary, sweep
    from reference_runtime.exploration.verdict import Verdict
    from reference_runtime.stores.factory import store_factory

    from .effects import declared

    url = checked_url(args.store, "--store", needs=("isolated",))
    ledger = Ledger() if args.effect else None
    drawn = ProgressLine(sys.stderr) if wanted(sys.stderr, args.progress) else None
    options: dict[str, Any] = {}
    if args.virtual_clock:
        from reference_runtime.clock import VirtualClock

        options["clock"] = VirtualClock()
    with declared(ledger or Ledger(), args.effect), _runtime_logs_silenced():
        stores = store_factory(url)
        try:
            outcomes = sweep(
                agent, inputs, stores, ledger, re_execute=args.re_execute, progress=drawn, shard=shard, **options
            )
        except Exception as exc:  # the agent itself failed: say so in one line, not a traceback wall
            reason = " ".join(str(exc).split())
            print(
                f"error: durable sweep {args.agent}: the agent raised {type(exc).__name__}: {reason} (run "
                "durable.sweep() in a test for the traceback)",
                file=sys.stderr,
            )
            return 1
        finally:
            if drawn is not None:
                drawn.close()
            stores.cleanup()
    verdict = Verdict(outcomes, effects_declared=ledger is not None)
    if shard is not None:
        part = f"{shard[0] + 1}/{shard[1]}"
        print(f"part {shard[0] + 1} of {shard[1]}: {len(outcomes)} fault points (--shard {part})")
    _print_matrix(verdict)
    if args.verbose:
        for line in start_summary(outcomes):
            print(line)
    return 0 if verdict.ok else 1


@contextlib.contextmanager
def _runtime_logs_silenced() -> Iterator[None]:
    """The runtime logs what it recovers from (a non-deterministic call it truncates and re-executes, DE-7) as it
    would in production. In a sweep every such recovery is provoked on purpose and the matrix reports what
    came of it (the REC-3/REC-6 lines of its fault point), so its records stay out of the terminal,
    where logging's last-resort handler would print them unformatted above the matrix."""
    runtime = logging.getLogger("reference_runtime")
    quiet = logging.NullHandler()
    propagate = runtime.propagate
    runtime.addHandler(quiet)
    runtime.propagate = False
    try:
        yield
    finally:
        runtime.removeHandler(quiet)
        runtime.propagate = propagate


RECORDED_RERUN = "recorded re-run (REC-3)"
UNRECORDED_RERUN = "unrecorded re-run (DE-6)"
DUPLICATE_OUTPUTS = "duplicate outputs (REC-4)"


def _print_matrix(verdict: Verdict) -> None:
    """One line per fault point with its violations, then what was not checked, then the summary.

    Each count means one thing: ``recorded re-run (REC-3)`` counts calls with a persisted record that
    executed again (``PointOutcome.re_executed``, each a violation), ``unrecorded re-run (DE-6)`` calls that
    ran again with no record and no reconciler (``PointOutcome.repeated``: allowed, a duplicate only for a
    declared effect), ``duplicate outputs (REC-4)`` actions that emitted their outputs again
    (``PointOutcome.duplicates``). A duplicated declared effect (PLG-3) is one of the violation lines."""
    outcomes = verdict.outcomes
    width = max((len(o.point.describe()) for o in outcomes), default=10)
    print(f"{'fault point':<{width}}  outcome  {RECORDED_RERUN}  {UNRECORDED_RERUN}  {DUPLICATE_OUTPUTS}")
    recorded, unrecorded, outputs = len(RECORDED_RERUN), len(UNRECORDED_RERUN), len(DUPLICATE_OUTPUTS)
    for o in outcomes:
        print(
            f"{o.point.describe():<{width}}  {'ok' if o.ok else 'FAIL':<7}  "
            f"{len(o.re_executed):>{recorded}}  {len(o.repeated):>{unrecorded}}  {len(o.duplicates):>{outputs}}"
        )
        for v in o.violations:
            print(f"    {v}")
    for note in verdict.caveats():
        print(f"note: {note}")
    print(verdict.summary())
