"""``durable certify``: run the conformance kit against a store or runner (:func:`conformance.certify`) and
write the report it returns.

    durable certify [--store URL | --backend MODULE:FACTORY] [--report FILE] [--junit FILE] [-n N] [-v | -q]
                    [--seed N] [--known-failures FILE] [--write-known-failures FILE]

With no store it certifies the embedded default, SQLite in a temporary directory. ``--backend`` names a
callable (``MODULE:NAME``, NAME may be dotted; the current directory is importable) returning a
:class:`conformance.StoreFactory`, which runs the store suite, or a :class:`conformance.RunnerFactory`,
which runs the runner suite (``--backend conformance:RunnerFactory.reference`` certifies the reference
runtime). The run prints pytest's output and the level table; ``--report`` writes the JSON report and its
Markdown twin, ``--junit`` the JUnit XML.

Bad input — a malformed store URL, a missing client package, a server that does not answer within
5 seconds, a backend that cannot be imported, a report or known-failures file that cannot be written or
read, ``-n`` without pytest-xdist — is one line on stderr and exit status 2, before any check runs (spec
CLI-3, CLI-4, KIT-6).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .args import CommandError, Parser, load


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="durable certify",
        description="run the conformance kit against a store or runner and print the level table",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--store", metavar="URL", help="store URL (memory:, sqlite:FILE, redis://…, kafka://…)")
    which.add_argument(
        "--backend", metavar="MODULE:FACTORY", help="callable returning a StoreFactory or a RunnerFactory"
    )
    parser.add_argument("--report", metavar="FILE", help="write the JSON report (and a .md twin) here")
    parser.add_argument("--junit", metavar="FILE", help="write the report as JUnit XML here")
    parser.add_argument(
        "-n", dest="workers", metavar="N", help="run checks on N pytest-xdist workers (needs pytest-xdist)"
    )
    parser.add_argument("--seed", metavar="N", type=int, help="seed of the randomized checks (default: random)")
    parser.add_argument("--known-failures", metavar="FILE", help="run the checks listed in FILE as strict xfail")
    parser.add_argument(
        "--write-known-failures", metavar="FILE", help="write a known-failures file listing this run's failures"
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="one line per check (passed to pytest)")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less output (passed to pytest)")
    return parser


def _check_paths(args: argparse.Namespace) -> None:
    """KIT-6: the files the run writes or reads are checked before the backend is loaded or a check runs."""
    from conformance.paths import known_failures_problem, output_problem

    problems = [
        args.report and output_problem("--report", args.report, Path(args.report).resolve(), twin=".md"),
        args.junit and output_problem("--junit", args.junit, Path(args.junit).resolve()),
        args.write_known_failures
        and output_problem(
            "--write-known-failures", args.write_known_failures, Path(args.write_known_failures).resolve()
        ),
        args.known_failures
        and known_failures_problem(
            "--known-failures",
            args.known_failures,
            Path(args.known_failures).resolve(),
            write_option="--write-known-failures",
        ),
    ]
    first = next((p for p in problems if p), None)
    if first:
        raise CommandError(first)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    _check_paths(args)
    from conformance import CertifyError, certify
    from conformance.report import write_reports
    from reference_runtime.errors import StoreError

    if args.backend:
        backend = load(args.backend, "--backend")
        option = f"--backend {args.backend!r}"
        if not callable(backend):
            raise CommandError(
                f"{option}: not callable; name a function or class returning a StoreFactory or a RunnerFactory"
            )
    else:
        backend, option = ("sqlite:" if args.store is None else args.store), "--store"
    verbosity = args.verbose or -max(1, args.quiet)
    try:
        report = certify(
            backend,
            seed=args.seed,
            workers=args.workers,
            known_failures=args.known_failures,
            write_known_failures=args.write_known_failures,
            verbosity=verbosity,
        )
    except StoreError as exc:
        raise CommandError(f"{option}: {exc}") from None
    except CertifyError as exc:
        raise CommandError(f"{option if exc.about == 'backend' else f'-n {args.workers}'}: {exc.reason}") from None
    if report.checks:
        if args.report:
            write_reports([report], Path(args.report).resolve())
        if args.junit:
            Path(args.junit).resolve().write_text(report.junit())
    return report.exit_code
