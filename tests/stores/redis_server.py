"""Starts private redis-servers on free loopback ports: one for the test session, and ones a test owns (to
kill, pause or restart it empty)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _launch(binary: str, port: int, timeout: float) -> subprocess.Popen[bytes]:
    """A redis-server without persistence on ``port``, once it answers PING."""
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"redis-server did not answer on port {port} within {timeout} s")


def start_redis(timeout: float = 10.0) -> tuple[str, Callable[[], None]] | None:
    """``(url, stop)`` for a fresh server, or None when redis-server is not installed (an error instead
    when ``DURABLE_REQUIRE_SERVERS=1``, as in CI)."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("DURABLE_REQUIRE_SERVERS") == "1":
            raise RuntimeError("redis-server is required (DURABLE_REQUIRE_SERVERS=1) but not on PATH")
        return None
    port = free_port()
    proc = _launch(binary, port, timeout)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    return f"redis://127.0.0.1:{port}/0", stop


class PrivateRedis:
    """A redis-server of one test's own, without persistence, that it can kill, pause (``proc``) or restart
    empty on the same port. Raises ``LookupError`` when redis-server is not installed."""

    def __init__(self, timeout: float = 10.0) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise LookupError("redis-server is not installed")
        self.binary, self.timeout = binary, timeout
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = _launch(binary, self.port, timeout)

    def restart(self) -> None:
        """What a restart without persistence does: everything the server held is gone."""
        self.stop()
        self.proc = _launch(self.binary, self.port, self.timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)  # also ends a paused (SIGSTOPped) server
        self.proc.wait()
