"""The one factory of fresh stores for test runs (spec STORE-11, STORE-20): the pytest plugin's ``durable``
fixture, ``durable sweep``, the conformance kit and ``durable certify`` all make their stores here.

:class:`StoreFactory` is what a backend author hands the conformance kit; :func:`store_factory` builds one
for any store URL through the scheme registry: every store it makes is isolated (a table prefix of its own
in the one SQLite file, a Redis namespace, a Kafka topic, or whatever the scheme's ``isolated`` makes) and
:meth:`StoreFactory.cleanup` deletes all of them. Only their handles are kept, not the stores: a test
exploring hundreds of schedules must not hold hundreds of open connections.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from .base import ActionStateStore, Capability
from .scheme import StoreScheme, StoreUrl
from .urls import parse_store_url

#: Every store capability name, in the order reports list them.
CAPABILITIES: tuple[Capability, ...] = tuple(Capability)
#: Seconds a server gets to answer when a factory opens or cleans up a store.
DEFAULT_TIMEOUT = 5.0


class StoreFactory:
    """Makes empty, isolated stores: ``new()`` (or calling the factory) returns one. ``reopen`` returns a
    new store object over the same data (a process restart) or is None when the backend cannot do that;
    ``capabilities`` is what the backend claims (``core`` is always added; strings or :class:`Capability`);
    ``name`` is the backend's name in reports; ``cleanup`` deletes what the stores wrote."""

    def __init__(
        self,
        new: Callable[[], ActionStateStore],
        *,
        reopen: Callable[[ActionStateStore], ActionStateStore] | None = None,
        capabilities: Iterable[Capability | str] = frozenset({Capability.CORE}),
        name: str = "store",
        cleanup: Callable[[], None] | None = None,
        scheme: StoreScheme | None = None,
    ) -> None:
        given = set(capabilities)
        unknown = sorted(str(c) for c in given if c not in CAPABILITIES)
        if unknown:
            raise ValueError(f"unknown capabilities {unknown}; known: {tuple(c.value for c in CAPABILITIES)}")
        self.new = new
        self.reopen = reopen
        self.capabilities: frozenset[Capability] = frozenset(Capability(c) for c in given) | {Capability.CORE}
        self.name = name
        self._cleanup = cleanup
        #: The registered scheme whose isolated stores this factory makes (given by :func:`store_factory`);
        #: None for a factory built by hand, whose ``new`` may do anything.
        self.scheme = scheme

    def __call__(self) -> ActionStateStore:
        return self.new()

    def cleanup(self) -> None:
        """Delete what the stores of this factory wrote (a no-op unless the factory was given a
        ``cleanup``); the plugin calls it when a test ends, ``durable certify`` when the run ends."""
        if self._cleanup is not None:
            self._cleanup()

    def detected(self) -> frozenset[Capability]:
        """Capabilities the kit observes rather than reads from the declaration (spec CONF-1): ``core``;
        ``restart`` when the factory has ``reopen``; ``concurrent_writers`` when, tried on a new store, four
        threads started together (a barrier) each ``put`` a state and append 10 call records under its own
        key, and all of it reads back within 10 s (tried only when declared: a store that does not claim it
        may misbehave under threads); ``mid_write_kill`` when declared, with ``reopen``, where ``os.fork``
        exists. Computed once per factory."""
        cached: frozenset[Capability] | None = getattr(self, "_detected", None)
        if cached is not None:
            return cached
        found = {Capability.CORE}
        if Capability.CONCURRENT_WRITERS in self.capabilities:
            import threading
            import time

            from ..events import InputEvent
            from ..records import ActionRef, ActionState, CallResult, StateRef

            action = ActionRef("probe", "conformance", "probe", ("_input_event",))
            refs = [StateRef(f"w{n}", 0, action, InputEvent(n), f"probe-w{n}") for n in range(4)]
            barrier = threading.Barrier(len(refs), timeout=10)
            failed: list[BaseException] = []

            def write(store: ActionStateStore, ref: StateRef) -> None:
                try:
                    barrier.wait()
                    store.put(ref, ActionState(task_event=ref.event))
                    for i in range(10):
                        store.put_call_results(ref, i, [CallResult.succeeded("f", str(i), ref.key.encode())])
                except BaseException as exc:  # the probe fails: no capability
                    failed.append(exc)
                    barrier.abort()

            store = self.new()
            threads = [threading.Thread(target=write, args=(store, r), daemon=True) for r in refs]
            try:
                for t in threads:
                    t.start()
                deadline = time.monotonic() + 10
                for t in threads:
                    t.join(max(0.0, deadline - time.monotonic()))
                if not failed and not any(t.is_alive() for t in threads):
                    states = [store.get(r) for r in refs]
                    if all(
                        s is not None and [c.args_digest for c in s.call_results] == [str(i) for i in range(10)]
                        for s in states
                    ):
                        found.add(Capability.CONCURRENT_WRITERS)
            finally:
                if not any(t.is_alive() for t in threads):  # a store a thread still blocks in is left alone
                    store.close()
        if self.reopen is not None:
            found.add(Capability.RESTART)
            if Capability.MID_WRITE_KILL in self.capabilities and hasattr(os, "fork"):
                found.add(Capability.MID_WRITE_KILL)
        self._detected = frozenset(found)
        return self._detected


def store_factory(
    url: str | StoreUrl, tmp: Callable[[], Path] | None = None, *, timeout: float = DEFAULT_TIMEOUT
) -> StoreFactory:
    """A factory of fresh isolated stores of ``url`` (text, or a URL :func:`parse_store_url` parsed once for a
    whole session), any registered scheme. ``tmp`` gives the directory of a file-backed store whose URL names
    no file (``sqlite:``); without it the factory makes a temporary directory and removes it at
    :meth:`StoreFactory.cleanup`. A malformed URL raises ``StoreUrlError``; a scheme that cannot make isolated
    stores raises ``StoreSchemeError``."""
    parsed = parse_store_url(url, needs=("isolated", "client"))
    scheme = parsed.store_scheme
    assert scheme is not None and scheme.isolated is not None  # given by parse_store_url, or refused there
    isolated = scheme.isolated
    handles: list[str] = []
    owned: list[Path] = []

    def scratch() -> Path:
        if tmp is not None:
            return tmp()
        if not owned:
            owned.append(Path(tempfile.mkdtemp(prefix="durable-stores-")))
        return owned[0]

    def new() -> ActionStateStore:
        store, handle = isolated(parsed, timeout, scratch)
        if handle:
            handles.append(handle)
        return store

    def cleanup() -> None:
        made = handles[:]
        handles.clear()
        try:
            if made and scheme.cleanup is not None:
                scheme.cleanup(parsed, made, timeout)
        finally:
            for path in owned:
                shutil.rmtree(path, ignore_errors=True)
            owned.clear()

    return StoreFactory(
        new,
        reopen=scheme.reopen,
        capabilities=scheme.capabilities,
        name=f"{scheme.name}:",
        cleanup=cleanup,
        scheme=scheme,
    )
