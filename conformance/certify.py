"""``durable certify``: run the conformance kit against a store and print the level table.

    durable certify [--store URL | --backend MODULE:FACTORY] [--report FILE] [-n N]

With no store it certifies the embedded default, SQLite in a temporary directory. ``--backend`` names a
callable returning a :class:`conformance.StoreFactory`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
from pathlib import Path

SUITE = textwrap.dedent(
    """
    import importlib
    import pytest
    from conformance import StoreConformance, factory_from_url

    class TestCertify(StoreConformance):
        @pytest.fixture(scope="session")
        def durable_store_factory(self, tmp_path_factory):
            backend = {backend!r}
            if backend:
                module, _, name = backend.partition(":")
                return getattr(importlib.import_module(module), name)()
            url = {url!r} or "sqlite:" + str(tmp_path_factory.mktemp("certify"))
            return factory_from_url(url)
    """
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="durable certify", description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--store", metavar="URL", help="store URL (memory:, sqlite:DIR, redis://…, kafka://…)")
    which.add_argument("--backend", metavar="MODULE:FACTORY", help="callable returning a StoreFactory")
    parser.add_argument("--report", metavar="FILE", help="write the JSON report (and a .md twin) here")
    parser.add_argument("-n", dest="workers", metavar="N", help="run checks on N pytest-xdist workers")
    args = parser.parse_args(argv)
    if args.backend and ":" not in args.backend:
        parser.error("--backend takes MODULE:FACTORY")

    import pytest

    with tempfile.TemporaryDirectory(prefix="durable-certify-") as tmp:
        suite = Path(tmp) / "test_certify.py"
        suite.write_text(SUITE.format(backend=args.backend or "", url=args.store or ""))
        report = args.report or str(Path(tmp) / "report.json")
        pytest_args = [str(suite), "-p", "conformance.plugin", "--durable-conformance-report", report,
                       "-q", "-p", "no:cacheprovider", "--rootdir", tmp]
        if args.workers:
            pytest_args += ["-n", args.workers]
        code = pytest.main(pytest_args)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
