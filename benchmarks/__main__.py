"""Run every benchmark in one process and print their tables: ``python -m benchmarks``.

Names on the command line pick a subset, e.g. ``python -m benchmarks p1 p3``.
"""

from __future__ import annotations

import importlib
import sys

ALL = ["p1_overhead", "p2_replay", "p3_bytes", "p4_scenarios", "p5_batch", "p6_certify", "p7_keys", "p8_memory",
       "p9_sweep", "p10_redis"]


def main(argv: list[str]) -> int:
    wanted = [n for n in ALL if not argv or any(n == a or n.startswith(a + "_") for a in argv)]
    for name in wanted:
        try:
            module = importlib.import_module(f"benchmarks.{name}")
        except ImportError as exc:
            print(f"== {name}: skipped ({exc})\n")
            continue
        print(f"== {name}")
        module.main()
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
