"""``durable certify``: run the conformance kit against a store or runner and print the level table.

    durable certify [--store URL | --backend MODULE:FACTORY] [--report FILE] [-n N]
                    [--seed N] [--known-failures FILE] [--write-known-failures FILE]

With no store it certifies the embedded default, SQLite in a temporary directory. ``--backend`` names a
callable (``MODULE:NAME``, NAME may be dotted) returning a :class:`conformance.StoreFactory`, which runs the
store suite, or a :class:`conformance.RunnerFactory`, which runs the runner suite
(``--backend conformance:RunnerFactory.reference`` certifies the reference runtime).
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
    from conformance import RunnerConformance, RunnerFactory, StoreConformance, factory_from_url

    BACKEND = {backend!r}
    URL = {url!r}


    def _load():
        module, _, name = BACKEND.partition(":")
        target = importlib.import_module(module)
        for part in name.split("."):
            target = getattr(target, part)
        return target()


    FACTORY = _load() if BACKEND else None

    if isinstance(FACTORY, RunnerFactory):

        @pytest.fixture(scope="session")
        def durable_runner_factory():
            return FACTORY

        class TestCertify(RunnerConformance):
            pass

    else:

        @pytest.fixture(scope="session")
        def durable_store_factory(tmp_path_factory):
            if FACTORY is not None:
                return FACTORY
            return factory_from_url(URL or "sqlite:" + str(tmp_path_factory.mktemp("certify")))

        class TestCertify(StoreConformance):
            pass
    """
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="durable certify", description=(__doc__ or "").splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--store", metavar="URL", help="store URL (memory:, sqlite:DIR, redis://…, kafka://…)")
    which.add_argument("--backend", metavar="MODULE:FACTORY",
                       help="callable returning a StoreFactory or a RunnerFactory")
    parser.add_argument("--report", metavar="FILE", help="write the JSON report (and a .md twin) here")
    parser.add_argument("-n", dest="workers", metavar="N", help="run checks on N pytest-xdist workers")
    parser.add_argument("--seed", metavar="N", type=int, help="seed of the randomized checks (default: random)")
    parser.add_argument("--known-failures", metavar="FILE", help="run the checks listed in FILE as strict xfail")
    parser.add_argument("--write-known-failures", metavar="FILE",
                        help="write a known-failures file listing this run's failures")
    args = parser.parse_args(argv)
    if args.backend and ":" not in args.backend:
        parser.error("--backend takes MODULE:FACTORY")

    import pytest

    with tempfile.TemporaryDirectory(prefix="durable-certify-") as tmp:
        suite = Path(tmp) / "test_certify.py"
        suite.write_text(SUITE.format(backend=args.backend or "", url=args.store or ""))
        report = str(Path(args.report).resolve()) if args.report else str(Path(tmp) / "report.json")
        pytest_args = [str(suite), "-p", "conformance.plugin", "--durable-conformance-report", report,
                       "-q", "-p", "no:cacheprovider", "--rootdir", tmp, "--import-mode=importlib"]
        if args.workers:
            pytest_args += ["-n", args.workers]
        if args.seed is not None:
            pytest_args += ["--durable-conformance-seed", str(args.seed)]
        if args.known_failures:
            pytest_args += ["--durable-known-failures", str(Path(args.known_failures).resolve())]
        if args.write_known_failures:
            pytest_args += ["--durable-write-known-failures", str(Path(args.write_known_failures).resolve())]
        before = set(sys.modules)
        try:
            code = pytest.main(pytest_args)
        finally:
            # The generated suite is always ``test_certify``: forget it, so a second certification in this
            # process (e.g. from a test) imports its own.
            for name in set(sys.modules) - before:
                if name == "test_certify" or name.startswith("test_certify."):
                    del sys.modules[name]
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
