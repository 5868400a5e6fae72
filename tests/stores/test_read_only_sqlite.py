"""``durable inspect`` reads a WAL SQLite store on read-only media (spec INS-9): the read-only open no longer
needs to create the shared-memory file. Read-only media is a read-only bind mount in a mount namespace of
its own when this runs as root (root writes through file permissions), a directory without write permission
otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.store_suite import ref
from reference_runtime.records import ActionState, CallResult
from reference_runtime.stores.sqlite import SqliteStore

INSPECT = "import sys; from pytest_durable.cli import main; sys.exit(main(['inspect', sys.argv[1]]))"


def inspect_read_only(directory: Path, url: str) -> subprocess.CompletedProcess[str]:
    """``durable inspect url`` with ``directory`` read-only."""
    command = [sys.executable, "-c", INSPECT, url]
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        finally:
            directory.chmod(0o755)
    if shutil.which("unshare") is None:
        pytest.skip("running as root without unshare: no way to make a directory read-only")
    mount = f"mount --bind {directory} {directory} && mount -o remount,ro,bind {directory} {directory}"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {probe.stderr.strip()}")
    script = f'{mount} && exec "$0" "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, *command], capture_output=True, text=True, timeout=120, check=False
    )


def test_inspect_reads_a_wal_store_on_read_only_media(tmp_path: Path) -> None:
    """INS-9: 'durable inspect' said "not a pytest-durable store: unable to open database file" for a WAL store
    in a read-only directory (SQLite could not create its -shm file); it shows the states."""
    media = tmp_path / "media"
    media.mkdir()
    store = SqliteStore(media / "state.db")
    store.put(ref("order-1", 0), ActionState(call_results=[CallResult.succeeded("shop.charge", "d", None)]))
    store.close()
    assert sorted(p.name for p in media.iterdir()) == ["state.db"]  # a clean close leaves no -wal or -shm
    done = inspect_read_only(media, f"sqlite:{media / 'state.db'}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "key 'order-1'  seq 0  action work" in done.stdout and "shop.charge" in done.stdout
    assert sorted(p.name for p in media.iterdir()) == ["state.db"]


def test_a_wal_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    """INS-9: a -wal file holding changes, without its -shm, cannot be read on read-only media: the error
    says so and what to do, instead of "not a pytest-durable store" (or stale states read without the WAL)."""
    media = tmp_path / "media"
    media.mkdir()
    writer = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys\n"
            "from conformance.store_suite import ref\n"
            "from reference_runtime.records import ActionState\n"
            "from reference_runtime.stores.sqlite import SqliteStore\n"
            "s = SqliteStore(sys.argv[1])\n"
            "s.put(ref('order-1', 0), ActionState())\n"
            "os._exit(0)\n",  # killed: the WAL keeps the change, the database file does not have it
            str(media / "state.db"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert writer.returncode == 0, writer.stderr
    (media / "state.db-shm").unlink()
    assert (media / "state.db-wal").stat().st_size > 0
    done = inspect_read_only(media, f"sqlite:{media / 'state.db'}")
    assert done.returncode != 0
    assert "write-ahead log state.db-wal holds changes" in done.stdout + done.stderr
