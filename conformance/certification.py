"""``conformance.certify(backend)``: run the kit's fixed suite against a store or runner and return its
:class:`~conformance.report.Report` (spec CONF-3, CONF-6, CONF-7, KIT-1, STORE-11). ``durable certify`` is its
command line.

The suite is a module of this package (``conformance/suites/store`` or ``conformance/suites/runner``); the
backend reaches it through a plugin object handed to ``pytest.main(plugins=[...])``, whose fixtures give the
checks their factory. Nothing is written as source and nothing is imported twice in this process: a callable
backend is called once. An xdist worker is a process of its own: it rebuilds the backend from what the plugin
sends it (the store URL, or the callable's ``module:qualname``).

Everything the run creates is removed at the end: its temporary directory (the SQLite file of ``sqlite:``,
Hypothesis' files), the SQLite tables, Redis keys and Kafka topics of its stores (STORE-11).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import pkgutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from reference_runtime.stores import StoreUrl, check_store, parse_store_url
from reference_runtime.stores.factory import StoreFactory
from reference_runtime.stores.registry import BUILT_IN

from .factory import factory_from_url
from .report import Report
from .runner_factory import RunnerFactory
from .session import RECORDER_NAME

__all__ = ["Backend", "CertifyError", "CertifyPlugin", "backend_of", "certify"]

#: What ``certify`` takes as a backend: a store URL, a factory, or a callable returning one.
BackendSpec = str | StoreFactory | RunnerFactory | Callable[[], StoreFactory | RunnerFactory]
#: Where the certify plugin keeps the backend for the suite, in the certifying process and on every worker.
_BACKEND = pytest.StashKey["Backend"]()
#: The ``workerinput`` key that carries the backend to xdist workers.
_WORKER_KEY = "durable_certify_backend"
#: Seconds a store server gets to answer before the run is refused.
PROBE_TIMEOUT = 5.0
_SUITES = Path(__file__).parent / "suites"


class CertifyError(Exception):
    """``certify`` cannot start: a backend that is neither a store URL nor a factory, a factory callable that
    fails, or workers that cannot be had. ``about`` names the argument (``backend`` or ``workers``),
    ``reason`` what is wrong and what to change; nothing ran."""

    def __init__(self, about: Literal["backend", "workers"], reason: str) -> None:
        super().__init__(f"{about}: {reason}")
        self.about = about
        self.reason = reason


@dataclass(frozen=True)
class Backend:
    """A backend ready to certify: its factory, whether it is a store or a runner, and how an xdist worker
    rebuilds it (``worker``: ``url:URL`` or ``call:MODULE:QUALNAME``; None when a worker cannot)."""

    kind: Literal["store", "runner"]
    factory: StoreFactory | RunnerFactory
    worker: str | None
    #: A built-in store without a server (``memory:``, ``sqlite:``): its suite runs in this process (CONF-7).
    in_process: bool = False

    @classmethod
    def of(cls, spec: BackendSpec, workdir: Path) -> Backend:
        """``spec`` made into a backend: a store URL is parsed and checked once (a server must answer within
        :data:`PROBE_TIMEOUT`; ``sqlite:`` without a path is a file in ``workdir``), a callable is called
        once. Bad input raises ``StoreError`` (a URL) or :class:`CertifyError`."""
        if isinstance(spec, str):
            url = f"sqlite:{workdir / 'stores.db'}" if spec in ("sqlite:", "sqlite") else spec
            return cls._of_url(check_store(url, timeout=PROBE_TIMEOUT, needs=("isolated",)), workdir)
        worker = None
        made: object = spec
        if not isinstance(spec, StoreFactory | RunnerFactory):
            if not callable(spec):
                raise CertifyError(
                    "backend",
                    f"{spec!r}: expected a store URL, a StoreFactory or RunnerFactory, or a callable returning one",
                )
            name = f"{getattr(spec, '__module__', '')}:{getattr(spec, '__qualname__', '')}"
            worker = f"call:{name}" if "<" not in name and not name.startswith(("__main__:", ":")) else None
            try:
                made = spec()
            except Exception as exc:  # the backend's own code failed
                raise CertifyError("backend", f"calling it raised {type(exc).__name__}: {exc}") from None
        if isinstance(made, StoreFactory):
            return cls("store", made, worker)
        if isinstance(made, RunnerFactory):
            return cls("runner", made, worker)
        raise CertifyError(
            "backend",
            f"returned {type(made).__name__}; expected a conformance.StoreFactory or conformance.RunnerFactory",
        )

    @classmethod
    def _of_url(cls, parsed: StoreUrl, workdir: Path) -> Backend:
        scheme = parsed.store_scheme
        in_process = scheme is not None and scheme.origin == BUILT_IN and not scheme.server
        factory = factory_from_url(parsed.text, workdir)
        return cls("store", factory, f"url:{parsed.text}", in_process)

    @classmethod
    def rebuild(cls, worker: str, workdir: Path) -> Backend:
        """The backend an xdist worker gets from ``worker`` (see :attr:`worker`)."""
        how, _, what = worker.partition(":")
        if how == "url":
            return cls._of_url(parse_store_url(what), workdir)
        return cls.of(pkgutil.resolve_name(what), workdir)

    @property
    def suite(self) -> Path:
        """The fixed suite module this backend runs."""
        return _SUITES / self.kind / "test_certify.py"


class CertifyPlugin:
    """Holds the backend for the suite (whose fixtures read it: :func:`backend_of`), sends it to xdist workers,
    keeps node ids as the suite names them, and takes the report when the run ends."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.reports: list[Report] = []
        self.seed: int | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[_BACKEND] = self.backend
        # pytest prints node ids relative to the current directory, which would make them a path into the
        # installed package; the suite's own ids (test_certify.py::TestCertify::NAME) name the check (KIT-1).
        config.cwd_relative_nodeid = lambda nodeid: nodeid  # type: ignore[method-assign]

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist: the worker rebuilds the backend from this."""
        node.workerinput[_WORKER_KEY] = self.backend.worker

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        recorder = session.config.pluginmanager.get_plugin(RECORDER_NAME)
        if recorder is not None:
            self.reports, self.seed = list(recorder.reports), int(recorder.seed)


def backend_of(config: pytest.Config) -> Backend:
    """The backend a certification hands its suite (the suite's fixtures read it)."""
    backend = config.stash.get(_BACKEND, None)
    if backend is None:
        raise pytest.UsageError(
            "this suite runs under conformance.certify() or durable certify, which hand it the backend; to "
            "certify from your own tests, subclass StoreConformance or RunnerConformance (docs/conformance/howto.md)"
        )
    return backend


def pytest_configure(config: pytest.Config) -> None:
    """On an xdist worker of a certification (this module is loaded there as a plugin): register the certify
    plugin over the backend the controller sent."""
    worker = getattr(config, "workerinput", {}).get(_WORKER_KEY)
    if worker is not None and _BACKEND not in config.stash:
        config.pluginmanager.register(CertifyPlugin(Backend.rebuild(worker, Path(tempfile.gettempdir()))))


def certify(
    backend: BackendSpec = "sqlite:",
    *,
    seed: int | None = None,
    workers: int | str | None = None,
    known_failures: str | os.PathLike[str] | None = None,
    write_known_failures: str | os.PathLike[str] | None = None,
    verbosity: int = -1,
) -> Report:
    """Certify ``backend`` and return the :class:`~conformance.report.Report` (its ``exit_code`` is pytest's).

    ``backend``: a store URL (default ``sqlite:``, SQLite in a temporary directory), a
    :class:`~conformance.StoreFactory` or :class:`~conformance.RunnerFactory`, or a callable returning one
    (called once). ``seed`` fixes the randomized checks; ``workers`` runs the checks on that many
    pytest-xdist workers (``"auto"``: one per CPU), except for an in-process built-in store, whose suite is
    faster in this process (CONF-7; a note says so); ``known_failures`` runs the checks a file lists as
    strict xfail and ``write_known_failures`` writes one from this run's failures (CONF-5); ``verbosity`` is
    pytest's (``-1``: ``-q``, ``1``: ``-v``). The run prints pytest's output and the level table."""
    with tempfile.TemporaryDirectory(prefix="durable-certify-") as tmp:
        chosen = Backend.of(backend, Path(tmp))
        try:
            args = _pytest_args(chosen, workers, seed, known_failures, write_known_failures, verbosity)
            plugin = CertifyPlugin(chosen)
            with _hypothesis_home(Path(tmp) / "hypothesis"):
                code = pytest.main(args, plugins=[plugin])
        finally:
            if isinstance(chosen.factory, StoreFactory):
                chosen.factory.cleanup()
    name = chosen.factory.name
    found = next((r for r in plugin.reports if r.backend == name), None)
    if found is None:  # nothing ran: a usage error, a collection error
        ran = plugin.seed if plugin.seed is not None else seed
        found = Report(name, (), ran or 0, "NONE", checks_run=0, checks_total=0)
    return dataclasses.replace(found, exit_code=int(code))


def _pytest_args(
    backend: Backend,
    workers: int | str | None,
    seed: int | None,
    known_failures: str | os.PathLike[str] | None,
    write_known_failures: str | os.PathLike[str] | None,
    verbosity: int,
) -> list[str]:
    suite = backend.suite
    args = [
        str(suite),
        "-c",
        str(suite.parent / "pytest.ini"),
        "-p",
        "conformance.plugin",
        "-p",
        "conformance.certification",
        *(["-v"] * verbosity if verbosity > 0 else ["-q"] * max(1, -verbosity)),
        "-p",
        "no:cacheprovider",
        # Benchmarks never run here; the plugin would only warn above the level table under -n.
        "-p",
        "no:benchmark",
        # This process imported this distribution's packages before pytest started (the CLI lives in them);
        # pytest >= 9.2 warns that it cannot rewrite them. The kit's own check modules are imported later,
        # rewritten (CONF-5).
        "-W",
        "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning",
    ]
    count = _workers(workers, backend)
    if count is not None:
        args += ["-n", count]
    if seed is not None:
        args += ["--durable-conformance-seed", str(seed)]
    if known_failures is not None:
        args += ["--durable-known-failures", str(Path(known_failures).resolve())]
    if write_known_failures is not None:
        args += ["--durable-write-known-failures", str(Path(write_known_failures).resolve())]
    return args


def _workers(requested: int | str | None, backend: Backend) -> str | None:
    """The ``-n`` to pass to pytest: ``requested``, except for an in-process built-in store, whose suite is
    too small to split (CONF-7; benchmark P6): its whole suite takes a few seconds, less than starting
    workers costs; a note says so. Workers need pytest-xdist and a backend a worker can rebuild."""
    text = None if requested is None else str(requested)
    if not text or text in ("0", "1"):
        return None
    if not (text.isdigit() or text == "auto"):
        raise CertifyError("workers", f"{text!r}: expected a number of workers or auto")
    if backend.in_process:
        print(
            f"note: -n {text} ignored: the in-process store's suite takes a few seconds, less than "
            "starting workers costs; it runs in this process (remote stores and --backend use the workers)"
        )
        return None
    if importlib.util.find_spec("xdist") is None:
        raise CertifyError(
            "workers", "pytest-xdist is not installed: pip install 'pytest-durable[xdist]' (or run without workers)"
        )
    if backend.worker is None:
        raise CertifyError(
            "workers",
            "a worker process cannot rebuild this backend; pass a store URL or a factory callable importable "
            "by module and name",
        )
    return text


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
