"""``durable certify``: run the conformance kit against a store or runner and print the level table.

    durable certify [--store URL | --backend MODULE:FACTORY] [--report FILE] [-n N] [-v | -q]
                    [--seed N] [--known-failures FILE] [--write-known-failures FILE]

With no store it certifies the embedded default, SQLite in a temporary directory. ``--backend`` names a
callable (``MODULE:NAME``, NAME may be dotted; the current directory is importable) returning a
:class:`conformance.StoreFactory`, which runs the store suite, or a :class:`conformance.RunnerFactory`,
which runs the runner suite (``--backend conformance:RunnerFactory.reference`` certifies the reference
runtime).

Bad input — a malformed store URL, a missing client package, a server that does not answer within
5 seconds, a backend that cannot be imported, a report or known-failures file that cannot be written or
read — is one line on stderr and exit status 2, before any check runs (spec CLI-3, CLI-4, KIT-6).
Everything the run creates is removed at the end: the temporary directory, the SQLite
tables, the Redis keys and Kafka topics of its stores (STORE-11).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .args import CommandError, Parser, checked_url, load

if TYPE_CHECKING:
    import pytest

SUITE = textwrap.dedent(
    """
    import importlib
    import sys

    import pytest
    from conformance import RunnerConformance, RunnerFactory, StoreConformance, factory_from_url

    BACKEND = {backend!r}
    URL = {url!r}
    if {cwd!r} not in sys.path:
        sys.path.insert(0, {cwd!r})


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
        def durable_store_factory():
            factory = FACTORY if FACTORY is not None else factory_from_url(URL)
            yield factory
            factory.cleanup()

        class TestCertify(StoreConformance):
            pass
    """
)


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
    parser.add_argument("-n", dest="workers", metavar="N", help="run checks on N pytest-xdist workers")
    parser.add_argument("--seed", metavar="N", type=int, help="seed of the randomized checks (default: random)")
    parser.add_argument("--known-failures", metavar="FILE", help="run the checks listed in FILE as strict xfail")
    parser.add_argument(
        "--write-known-failures", metavar="FILE", help="write a known-failures file listing this run's failures"
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="one line per check (passed to pytest)")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less output (passed to pytest)")
    return parser


def _check_backend(spec: str) -> None:
    """Import and call the backend once, so a backend that cannot be loaded is one line before any
    check runs; the suite calls it again for the factory it certifies."""
    from conformance import RunnerFactory, StoreFactory

    target = load(spec, "--backend")
    if not callable(target):
        raise CommandError(
            f"--backend {spec!r}: not callable; name a function or class returning a StoreFactory or a RunnerFactory"
        )
    try:
        made = target()
    except Exception as exc:  # the backend's own code failed
        raise CommandError(f"--backend {spec!r}: calling it raised {type(exc).__name__}: {exc}") from None
    if not isinstance(made, StoreFactory | RunnerFactory):
        raise CommandError(
            f"--backend {spec!r}: returned {type(made).__name__}; expected a "
            "conformance.StoreFactory or conformance.RunnerFactory"
        )
    if isinstance(made, StoreFactory):
        made.cleanup()


def _check_paths(args: argparse.Namespace) -> None:
    """KIT-6: the files the run writes or reads are checked before the backend is loaded or a check runs."""
    from conformance.paths import known_failures_problem, output_problem

    problems = [
        args.report and output_problem("--report", args.report, Path(args.report).resolve(), twin=".md"),
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


def _in_process(url: str) -> bool:
    """A built-in store without a server (``memory:``, ``sqlite:``). A third-party scheme may reach a
    remote service without declaring a server to probe, so it keeps the workers it asked for."""
    from reference_runtime.stores import parse_store_url
    from reference_runtime.stores.registry import BUILT_IN

    scheme = parse_store_url(url).store_scheme
    return scheme is not None and scheme.origin == BUILT_IN and not scheme.server


def _workers(requested: str | None, backend: str | None, url: str | None) -> str | None:
    """The ``-n`` to pass to pytest: ``requested``, except for an in-process built-in store, whose suite is
    too small to split (CONF-7; benchmark P6): its whole suite takes a few seconds, less than starting
    workers costs; a note says so."""
    if not requested or requested in ("0", "1"):
        return None
    if backend is None and (url is None or _in_process(url)):
        print(
            f"note: -n {requested} ignored: the in-process store's suite takes a few seconds, less than "
            "starting workers costs; it runs in this process (remote stores and --backend use the workers)"
        )
        return None
    return requested


class _ReadableNodeIds:
    """The generated suite lives in a temporary directory that is gone when the run ends; pytest would print
    its node ids relative to the current directory (``../../tmp/durable-certify-…/test_certify.py::…``).
    Print them relative to that directory instead, ``test_certify.py::TestCertify::test_…``, so a FAILED line
    reads as the check's name."""

    @staticmethod
    def pytest_configure(config: pytest.Config) -> None:
        config.cwd_relative_nodeid = lambda nodeid: nodeid  # type: ignore[method-assign]


@contextlib.contextmanager
def _hypothesis_home(home: Path) -> Iterator[None]:
    """STORE-11: Hypothesis keeps files (its constants cache, any example database) under a home directory,
    by default ``.hypothesis`` in the current directory; point it into the run's temporary directory, in
    this process and in xdist workers (they read the environment), and put the previous home back."""
    from hypothesis import configuration

    previous_home = vars(configuration).get("__hypothesis_home_directory")
    previous_env = os.environ.get(_HOME_ENV)
    configuration.set_hypothesis_home_dir(home)
    os.environ[_HOME_ENV] = str(home)
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous_home)
        if previous_env is None:
            os.environ.pop(_HOME_ENV, None)
        else:
            os.environ[_HOME_ENV] = previous_env


_HOME_ENV = "HYPOTHESIS_STORAGE_DIRECTORY"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _check_paths(args)
    if args.backend:
        _check_backend(args.backend)
    url = args.store
    if url is not None:
        checked_url(url, "--store", needs=("isolated",))
    if args.workers is not None and not str(args.workers).isdigit() and args.workers != "auto":
        raise CommandError(f"-n {args.workers!r}: expected a number of workers or auto")

    import pytest

    with tempfile.TemporaryDirectory(prefix="durable-certify-") as tmp:
        suite = Path(tmp) / "test_certify.py"
        if not args.backend and url in (None, "sqlite:"):
            url = f"sqlite:{Path(tmp) / 'stores.db'}"  # inside the directory removed below
        suite.write_text(SUITE.format(backend=args.backend or "", url=url or "", cwd=str(Path.cwd())))
        report = str(Path(args.report).resolve()) if args.report else str(Path(tmp) / "report.json")
        verbosity = ["-v"] * args.verbose if args.verbose else ["-q"] * max(1, args.quiet)
        pytest_args = [
            str(suite),
            "-p",
            "conformance.plugin",
            "--durable-conformance-report",
            report,
            *verbosity,
            "-p",
            "no:cacheprovider",
            "--rootdir",
            tmp,
            "--import-mode=importlib",
            # Benchmarks never run here; the plugin would only warn above the level table under -n.
            "-p",
            "no:benchmark",
            # This process imported this distribution's packages before pytest started (the CLI
            # lives in them); pytest >= 9.2 warns that it cannot rewrite them. The kit's own check
            # modules are imported later, rewritten (CONF-5).
            "-W",
            "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning",
        ]
        workers = _workers(args.workers, args.backend, url)
        if workers:
            pytest_args += ["-n", workers]
        if args.seed is not None:
            pytest_args += ["--durable-conformance-seed", str(args.seed)]
        if args.known_failures:
            pytest_args += ["--durable-known-failures", str(Path(args.known_failures).resolve())]
        if args.write_known_failures:
            pytest_args += ["--durable-write-known-failures", str(Path(args.write_known_failures).resolve())]
        before = set(sys.modules)
        try:
            with _hypothesis_home(Path(tmp) / "hypothesis"):
                code = pytest.main(pytest_args, plugins=[_ReadableNodeIds()])
        finally:
            # The generated suite is always ``test_certify``: forget it, so a second certification in this
            # process (e.g. from a test) imports its own.
            for name in set(sys.modules) - before:
                if name == "test_certify" or name.startswith("test_certify."):
                    del sys.modules[name]
    return int(code)
