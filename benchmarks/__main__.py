"""Run every benchmark in one process and print their tables: ``python -m benchmarks``.

Names on the command line pick a subset, e.g. ``python -m benchmarks p1 p3``. ``--plot`` also writes one
PNG per scaling benchmark (cost against K, keys, fields, calls; ours beside the anchors) into
``--plot-dir`` (default ``benchmark-plots``); it needs matplotlib (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import importlib
import sys

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
    for name in wanted:
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"== {name}")
        module.main()
        print()
    if args.plot:
        from ._util import plot

        for path in plot(args.plot_dir):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
