"""``durable sweep --coverage``: the crash coverage of one sweep (spec COV-1..COV-5), measured from before the
agent's module is imported and printed after the matrix; ``--coverage-html DIR`` and ``--coverage-json FILE`` also
write those reports (and turn it on)."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .args import CommandError

if TYPE_CHECKING:
    from reference_runtime.exploration.coverage_report import Measuring

#: The extra that installs coverage.py for crash coverage.
EXTRA = "pytest-durable[coverage]"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="after the matrix, report what the sweep never reached: lines run only during recovery or never, "
        f"durable results never replayed, reconcilers never invoked (needs coverage.py: {EXTRA}) (COV-1)",
    )
    parser.add_argument(
        "--coverage-html", metavar="DIR", type=Path, help="also write the crash-coverage HTML report into DIR"
    )
    parser.add_argument(
        "--coverage-json", metavar="FILE", type=Path, help="also write the crash-coverage JSON report to FILE"
    )


@contextlib.contextmanager
def measuring(args: argparse.Namespace) -> Iterator[None]:
    """Measure what runs inside the block if ``args`` ask for crash coverage, then print and write the report
    (also when the sweep found violations; not when the block raised)."""
    html: Path | None = args.coverage_html
    report_json: Path | None = args.coverage_json
    if not (args.coverage or html is not None or report_json is not None):
        yield
        return
    if importlib.util.find_spec("coverage") is None:
        raise CommandError(f"durable sweep --coverage needs coverage.py: pip install '{EXTRA}'")
    if html is not None and html.exists() and not html.is_dir():
        raise CommandError(f"--coverage-html {str(html)!r}: not a directory")
    if report_json is not None and report_json.is_dir():
        raise CommandError(f"--coverage-json {str(report_json)!r}: a directory, not a file")
    from reference_runtime.exploration.coverage_report import Measuring

    measured: Measuring = Measuring.start(test="durable sweep")
    try:
        yield
    except BaseException:
        measured.finish()
        raise
    from reference_runtime.exploration.coverage_report import build, write

    report = build(measured.finish(), Path.cwd(), html)
    print("durable coverage:")
    for line in report.terminal() + write(report, html, report_json):
        print(line)
