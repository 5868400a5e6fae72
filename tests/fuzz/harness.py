"""Runs one fuzz input under a time and memory meter and checks the outcome: a value, or one of the
target's typed errors — with a location where the decoder is given one. Bounds are generous on purpose
(hundreds of times what a valid record costs): they catch resource bombs, not slowness."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from reference_runtime.errors import LocatedError, WireFormatError

#: Per input: CPU time of the decoding thread and the peak of Python allocations while decoding it. CPU
#: time, not wall time: the bound is about the work an input costs, and on a loaded machine waiting for a
#: core added seconds of wall time to inputs that cost a fraction of that (a flaky failure).
MAX_SECONDS = 2.0
MAX_BYTES = 96 * 1024 * 1024


@dataclass
class Meter:
    """Inputs run, total decode CPU time and the worst single input, for the report of a slow run."""

    name: str
    inputs: int = 0
    seconds: float = 0.0
    worst_seconds: float = 0.0
    peak_bytes: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"{self.name}: {self.inputs} inputs, {self.seconds:.1f} s decoding, "
            f"worst {self.worst_seconds * 1e3:.1f} ms, peak {self.peak_bytes / 1e6:.1f} MB, "
            f"errors {dict(sorted(self.errors.items()))}"
        )


@contextmanager
def metered(name: str) -> Iterator[Meter]:
    yield Meter(name)


@dataclass(frozen=True)
class Target:
    """A decoder under fuzz: ``decode`` takes one input; ``errors`` are the only exceptions it may raise;
    ``located`` says every error must carry the key and sequence number it was given; ``setup`` prepares
    what the decoder reads from."""

    decode: Callable[[Any], Any]
    errors: tuple[type[BaseException], ...]
    located: bool = False
    #: Run once before the first input, unmetered: starting the server a store reader reads from.
    setup: Callable[[], Any] | None = None


def run(meter: Meter, target: Target, data: Any) -> None:
    # Tracing only around the decoder: tracing Hypothesis' own generation would cost ten times more.
    tracemalloc.start()
    start = time.thread_time()
    try:
        target.decode(data)
    except target.errors as exc:
        meter.errors[type(exc).__name__] = meter.errors.get(type(exc).__name__, 0) + 1
        assert str(exc), "a typed error says what is wrong"
        if target.located:
            assert isinstance(exc, LocatedError) and exc.key is not None and exc.seq is not None, exc
        if isinstance(exc, WireFormatError):
            assert exc.path == "payload" or exc.path.startswith("$"), exc.path
    finally:
        elapsed = time.thread_time() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    meter.inputs += 1
    meter.seconds += elapsed
    meter.worst_seconds = max(meter.worst_seconds, elapsed)
    meter.peak_bytes = max(meter.peak_bytes, peak)
    assert elapsed < MAX_SECONDS, f"one input took {elapsed:.2f} s of CPU: {data!r:.200}"
    assert peak < MAX_BYTES, f"one input allocated {peak} bytes: {data!r:.200}"
