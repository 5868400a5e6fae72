"""The ``durable`` command: ``durable certify …``, ``durable sweep MODULE:Agent --inputs FILE``,
``durable inspect URL`` and ``durable --version`` (spec CLI-1..CLI-5, INS-1..INS-6), one module per command
(``certify``, ``sweep``, ``inspect``) over the shared parser and input readers (``args``).

Bad input (an unknown command or option, an unimportable agent, a malformed inputs file or store URL) prints
one line on stderr naming the input and the fix, and exits with status 2 before anything runs.
"""

from __future__ import annotations

import os
import sys

from .args import CommandError

USAGE = """usage: durable {certify,sweep,inspect} ... | durable --version
  certify  run the conformance kit against a store or runner and print its levels
  sweep    crash an agent at every fault point and print the matrix and the verdict
  inspect  print what a store holds (read-only)"""


def version() -> str:
    from reference_runtime._version import __version__

    return __version__


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
            from .certify import main as certify

            return certify(rest)
        if command == "sweep":
            from .sweep import main as sweep

            return sweep(rest)
        if command == "inspect":
            from .inspect import main as inspect

            return inspect(rest)
        raise CommandError(f"durable: unknown command {command!r} (certify, sweep, inspect, --version)")
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
