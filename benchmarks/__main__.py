"""Run every benchmark in one process and print their tables: ``python -m benchmarks``.

Names on the command line pick a subset, e.g. ``python -m benchmarks p1 p3``. ``--plot`` also writes one
PNG per scaling benchmark (cost against K, keys, fields, calls; ours beside the anchors) into
``--plot-dir`` (default ``benchmark-plots``); it needs matplotlib (the ``bench`` extra).

The run ends with one table of every target's verdict: met, forbidden by its floor, NOT met, or not measured.
P12 needs the real flink_agents package: without it here, the run hands P12 to the python of the venv
``scripts/flink-agents-venv.sh`` makes (``.venv-flink-agents``, or ``$DURABLE_FLINK_AGENTS_VENV``) when there
is one, so one command still judges every target.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ._util import VERDICTS, VERDICTS_FILE, load_verdicts, save_verdicts, summary

ALL = [
    "p1_overhead",
    "p2_replay",
    "p3_bytes",
    "p4_scenarios",
    "p5_batch",
    "p6_certify",
    "p7_keys",
    "p8_memory",
    "p9_sweep",
    "p9b_long",
    "p10_redis",
    "p11_stores",
    "p12_examples",
    "p13_unrelated",
    "p14_coverage",
]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="run the benchmarks side by side")
    parser.add_argument("names", nargs="*", metavar="NAME", help="a subset, e.g. p1 p7 (default: all)")
    parser.add_argument("--plot", action="store_true", help="write one PNG per scaling benchmark")
    parser.add_argument("--plot-dir", default="benchmark-plots", metavar="DIR", help="where --plot writes")
    args = parser.parse_args(argv)
    unknown = [a for a in args.names if not any(n == a or n.startswith(a + "_") for n in ALL)]
    if unknown:
        parser.error(
            f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(n.split('_')[0] for n in ALL)}"
        )
    wanted = [n for n in ALL if not args.names or any(n == a or n.startswith(a + "_") for a in args.names)]
    child = bool(os.environ.get(VERDICTS_FILE))  # a run started by _elsewhere(): its parent prints headers
    for name in wanted:
        if not child:
            print(f"== {name}", flush=True)
        if name == "p12_examples" and _elsewhere():
            continue
        importlib.import_module(f"benchmarks.{name}").main()
        print()
    save_verdicts()
    if VERDICTS and not child:
        print("== targets")
        print(summary(VERDICTS))
        print()
    if args.plot:
        from ._util import plot

        for path in plot(args.plot_dir):
            print(f"wrote {path}")
    return 0


def _has_flink_agents() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("flink_agents", "pyflink"))


def _elsewhere() -> bool:
    """P12 run by the flink_agents venv's python when this one lacks the package, its verdicts brought back;
    False when this python has the package (or no such venv exists: P12 then says what is missing)."""
    if _has_flink_agents():
        return False
    root = Path(__file__).resolve().parent.parent
    venv = Path(os.environ.get("DURABLE_FLINK_AGENTS_VENV", root / ".venv-flink-agents"))
    python = venv / "bin" / "python"
    if not python.is_file():
        return False
    print(f"(run by {python}: this python has no flink_agents)", flush=True)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "verdicts.json")
        env = {**os.environ, VERDICTS_FILE: out}
        subprocess.run([str(python), "-m", "benchmarks", "p12"], cwd=root, env=env, check=False)
        VERDICTS.extend(load_verdicts(out))
    return True


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
