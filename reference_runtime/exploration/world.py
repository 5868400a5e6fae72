"""A fake outside world made fresh for every run (spec PLG-8).

A sweep, a crash or an exploration runs the agent several times: a crash-free run to learn what should
happen, then one run per crash scenario (each recovering from its crashes in-process). A stateful fake
(a payment provider that remembers refunds, an inbox) shared by those runs lets the crash-free run's
effects leak into the crash runs, so a reconciler asking "did this already happen?" gets the wrong answer.
:class:`World` forwards every attribute to the object ``factory`` made for the current run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class World(Generic[T]):
    """Stands for the fake of the current run: attribute access goes to ``current``. The harness calls
    :meth:`fresh` as each run starts; ``worlds`` keeps every fake made, oldest first."""

    def __init__(self, factory: Callable[[], T]) -> None:
        if not callable(factory):
            raise TypeError(f"durable.world() takes a callable that makes the fake, got {factory!r}")
        self._factory = factory
        self.worlds: list[T] = []

    def fresh(self) -> T:
        """Make a new fake; from now on it is ``current``."""
        self.worlds.append(self._factory())
        return self.worlds[-1]

    @property
    def current(self) -> T:
        """The fake of the run in progress (or of the last run once the runs are over)."""
        return self.worlds[-1] if self.worlds else self.fresh()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_factory", "worlds"):
            raise AttributeError(name)
        return getattr(self.current, name)

    def __repr__(self) -> str:
        return f"<durable world {len(self.worlds)} made, current {self.current!r}>"
