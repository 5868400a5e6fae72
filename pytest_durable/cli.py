"""The ``durable`` command: ``durable certify …`` and ``durable sweep MODULE:Agent --inputs FILE``."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path


def _sweep(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="durable sweep", description="crash at every fault point")
    parser.add_argument("agent", metavar="MODULE:AgentClass")
    parser.add_argument("--inputs", required=True, metavar="FILE", help='JSON lines {"key": …, "input": …}')
    args = parser.parse_args(argv)
    module, _, name = args.agent.partition(":")
    if not name:
        parser.error("agent must be MODULE:AgentClass")
    sys.path.insert(0, str(Path.cwd()))
    agent = getattr(importlib.import_module(module), name)
    lines = Path(args.inputs).read_text().split("\n")
    inputs = [(str(d["key"]), d["input"]) for d in (json.loads(line) for line in lines if line.strip())]
    from reference_runtime.stores.memory import InMemoryStore

    from .sweep import sweep

    outcomes = sweep(agent, inputs, InMemoryStore)
    width = max((len(o.point.describe()) for o in outcomes), default=10)
    print(f"{'fault point':<{width}}  outcome  re-executed  duplicates")
    for o in outcomes:
        print(f"{o.point.describe():<{width}}  {'ok' if o.ok else 'FAIL':<7}  {len(o.re_executed):>11}  "
              f"{len(o.duplicates):>10}")
        for v in o.violations:
            print(f"    {v}")
    bad = sum(not o.ok for o in outcomes)
    print(f"{len(outcomes)} fault points, {bad} with violations")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: durable {certify,sweep,inspect} ...\n  certify  run the conformance kit and print levels\n"
              "  sweep    crash an agent at every fault point and print the matrix\n"
              "  inspect  print what a store holds (read-only)")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "certify":
        from conformance.certify import main as certify

        return certify(rest)
    if command == "sweep":
        return _sweep(rest)
    if command == "inspect":
        from .inspect import main as inspect

        return inspect(rest)
    print(f"durable: unknown command {command!r} (certify, sweep, inspect)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
