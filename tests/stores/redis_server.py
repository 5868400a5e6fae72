"""Starts a private redis-server on a free loopback port for the test session, and stops it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(timeout: float = 10.0) -> tuple[str, Callable[[], None]] | None:
    """``(url, stop)`` for a fresh server, or None when redis-server is not installed (an error instead
    when ``DURABLE_REQUIRE_SERVERS=1``, as in CI)."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("DURABLE_REQUIRE_SERVERS") == "1":
            raise RuntimeError("redis-server is required (DURABLE_REQUIRE_SERVERS=1) but not on PATH")
        return None
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return f"redis://127.0.0.1:{port}/0", stop
        except OSError:
            time.sleep(0.05)
    stop()
    raise RuntimeError(f"redis-server did not answer on port {port} within {timeout} s")
