"""The ``durable`` command: ``durable certify …``, ``durable sweep MODULE:Agent --inputs FILE``,
``durable inspect URL`` and ``durable --version`` (spec CLI-1..CLI-5, INS-1..INS-6).

Bad input (an unknown command, an unimportable agent, a malformed inputs file or store URL) prints one
line on stderr naming the input and the fix, and exits with status 2 before anything runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from conformance.loading import CommandError, load

if TYPE_CHECKING:
    from .sweep import Verdict

USAGE = """usage: durable {certify,sweep,inspect} ... | durable --version
  certify  run the conformance kit against a store or runner and print its levels
  sweep    crash an agent at every fault point and print the matrix and the verdict
  inspect  print what a store holds (read-only)"""


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors as one line and status 2."""

    def error(self, message: str) -> NoReturn:
        raise CommandError(f"{self.prog}: {message} (see {self.prog} --help)")


def version() -> str:
    from reference_runtime._version import __version__

    return __version__


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


def _sweep(argv: list[str]) -> int:
    parser = _Parser(
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
        "-v",
        "--verbose",
        action="store_true",
        help="also print how many scenarios started from a snapshot and why the others re-executed (PLG-17)",
    )
    args = parser.parse_args(argv)
    from reference_runtime.flink_agents_compat import is_agent

    agent = load(args.agent, "durable sweep")
    if not is_agent(agent):
        raise CommandError(
            f"durable sweep {args.agent!r}: not an Agent subclass nor a flink_agents Agent (got {type(agent).__name__})"
        )
    inputs = read_inputs(args.inputs)
    from conformance.loading import checked_url
    from reference_runtime.stores.factory import store_factory

    from .effects import declared
    from .ledger import Ledger
    from .sweep import Verdict, start_summary, sweep

    url = checked_url(args.store, "--store")
    ledger = Ledger() if args.effect else None
    with declared(ledger or Ledger(), args.effect), _runtime_logs_silenced():
        stores = store_factory(url)
        try:
            outcomes = sweep(agent, inputs, stores, ledger, re_execute=args.re_execute)
        except Exception as exc:  # the agent itself failed: say so in one line, not a traceback wall
            reason = " ".join(str(exc).split())
            print(
                f"error: durable sweep {args.agent}: the agent raised {type(exc).__name__}: {reason} (run "
                "durable.sweep() in a test for the traceback)",
                file=sys.stderr,
            )
            return 1
        finally:
            stores.cleanup()
    verdict = Verdict(outcomes, effects_declared=ledger is not None)
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


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try: a closed pipe shows up here, not at interpreter exit
        return code
    except BrokenPipeError:
        # The reader went away (``durable inspect URL | head``): not an error of ours, and no traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # a usage error (CLI-3): stdout is kept for results
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "--version":
        print(f"durable (pytest-durable) {version()}")
        return 0
    command, rest = argv[0], argv[1:]
    try:
        if command == "certify":
            from conformance.certify import main as certify

            return certify(rest)
        if command == "sweep":
            return _sweep(rest)
        if command == "inspect":
            from .inspect import main as inspect

            return inspect(rest)
        raise CommandError(f"durable: unknown command {command!r} (certify, sweep, inspect, --version)")
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
