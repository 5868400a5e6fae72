"""A store installed as a separate distribution plugs in by entry point and works everywhere a built-in
scheme works (STORE-18, STORE-19): ``open_store``, ``durable certify --store``, ``pytest --durable-store`` with
the ``durable`` fixture, ``durable inspect``. A broken entry point is one line and exit status 2.

The distribution is written into ``tmp_path`` (a package plus a ``*.dist-info`` with ``entry_points.txt``) and
put on the ``PYTHONPATH`` of subprocesses: that is how an installed wheel looks to ``importlib.metadata``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STORE_MODULE = '''
"""A third-party store: SQLite underneath, its own class, scheme and URL syntax (thirdparty:PATH)."""
import uuid

from reference_runtime.stores import Capability, SqliteStore, StoreScheme, StoreUrl
from reference_runtime.stores.sqlite import drop_namespaces, read_states
from reference_runtime.errors import StoreUrlError


class ThirdPartyStore(SqliteStore):
    pass


def parse(url):
    path = url.partition(":")[2]
    if not path:
        raise StoreUrlError(f"store URL {url!r}: expected thirdparty:PATH")
    return StoreUrl(url, "thirdparty", path=path)


def isolated(parsed, timeout, scratch):
    store = ThirdPartyStore(parsed.path, namespace=f"tp_{uuid.uuid4().hex[:12]}")
    return store, store.namespace


def reopen(store):
    store.close()
    return ThirdPartyStore(store.path, namespace=store.namespace)


SCHEME = StoreScheme(
    name="thirdparty",
    usage="thirdparty:PATH",
    parse=parse,
    open=lambda parsed, timeout: ThirdPartyStore(parsed.path),
    isolated=isolated,
    cleanup=lambda parsed, handles, timeout: drop_namespaces(parsed.path, handles),
    reopen=reopen,
    inspect=lambda parsed, timeout, namespace: read_states(parsed.path),
    capabilities={Capability.RESTART, Capability.CONCURRENT_WRITERS},
)
'''

AGENT_TEST = """
from reference_runtime import Agent, InputEvent, OutputEvent, action
from thirdparty_store import ThirdPartyStore


def charge(amount):
    return f"charged {amount}"


class Refund(Agent):
    @action(InputEvent)
    @staticmethod
    def handle(event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(charge, event.attributes["input"])))


def test_refund(durable):
    assert isinstance(durable.store_factory()(), ThirdPartyStore)
    result = durable.run(Refund, [("order-1", 30)], crash_at=["call0:after-effect"])
    assert result.failovers == 1 and result.outputs["order-1"][-1] == "charged 30"
"""

OPEN_AND_WRITE = """
from conformance.states import ref
from reference_runtime import ActionState, CallResult, CallStatus
from reference_runtime.codecs import CloudpickleCodec
from reference_runtime.stores import open_store

store = open_store("thirdparty:DB")
print(type(store).__module__, type(store).__name__)
r = ref("order-7", 0)
store.put(r, ActionState(task_event=r.event))
payload = CloudpickleCodec().encode_result("charged 7")
call = CallResult("charge", "d1", result_payload=payload, status=CallStatus.SUCCEEDED)
store.put_call_results(r, 0, [call])
assert store.get(r).call_results[0].function_id == "charge"
store.close()
"""


def _distribution(site: Path, name: str, module: str, source: str, entry: str) -> None:
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[pytest_durable.stores]\n{entry}\n")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    _distribution(site, "thirdparty-store", "thirdparty_store", STORE_MODULE, "thirdparty = thirdparty_store:SCHEME")
    _distribution(site, "broken-store", "broken_store", "import no_such_module_xyz\n", "broken = broken_store:SCHEME")
    return site


def _run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_a_store_installed_by_entry_point_works_everywhere(site: Path, tmp_path: Path) -> None:
    """STORE-18, STORE-19: open_store, durable inspect, durable certify --store and pytest --durable-store all
    take the third-party scheme, as they take a built-in one."""
    work = tmp_path / "work"
    work.mkdir()
    db = work / "tp.db"

    opened = _run(site, work, "-c", OPEN_AND_WRITE.replace("DB", str(db)))
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout.split() == ["thirdparty_store", "ThirdPartyStore"]

    inspected = _run(site, work, "-m", "pytest_durable.cli", "inspect", f"thirdparty:{db}", "--json")
    assert inspected.returncode == 0, inspected.stderr
    views = json.loads(inspected.stdout)
    assert [(v["key"], v["seq"], v["calls"][0]["result"]) for v in views] == [("order-7", 0, "'charged 7'")]

    report = tmp_path / "report.json"
    certified = _run(
        site, work, "-m", "pytest_durable.cli", "certify", "--store", f"thirdparty:{tmp_path / 'c.db'}",
        "--report", str(report), "--seed", "5",
    )  # fmt: skip
    assert certified.returncode == 0, certified.stdout[-3000:] + certified.stderr
    doc = json.loads(report.read_text())
    assert doc["backend"] == "thirdparty:" and doc["level"] == "FULL"
    assert set(doc["declared_capabilities"]) == {"core", "restart", "concurrent_writers"}

    (work / "test_refund.py").write_text(AGENT_TEST)
    ran = _run(
        site, work, "-m", "pytest", "-p", "no:cacheprovider", "test_refund.py",
        "--durable-store", f"thirdparty:{tmp_path / 'p.db'}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr
    assert f"durable: store thirdparty:{tmp_path / 'p.db'}" in ran.stdout and "1 passed" in ran.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("pytest_durable.cli", "inspect", "broken:x"),
        ("pytest_durable.cli", "certify", "--store", "broken:x"),
        ("pytest_durable.cli", "sweep", "m:A", "--inputs", "i.jsonl", "--store", "broken:x"),
    ],
)
def test_a_broken_entry_point_is_one_line_and_exit_2(site: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    """STORE-18: a store plugin that fails to import is one line naming the entry point, its distribution
    and the fix; exit status 2, no traceback."""
    (tmp_path / "m.py").write_text("from reference_runtime import Agent\n\nclass A(Agent):\n    pass\n")
    (tmp_path / "i.jsonl").write_text('{"key": "k", "input": 1}\n')
    done = _run(site, tmp_path, "-m", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "entry point broken = broken_store:SCHEME (distribution broken-store 1.0)" in lines[0]
    assert "No module named 'no_such_module_xyz'" in lines[0] and "pip uninstall broken-store" in lines[0]


def test_a_broken_entry_point_is_a_usage_error_of_the_plugin(site: Path, tmp_path: Path) -> None:
    """STORE-18: pytest --durable-store with a broken plugin stops before any test, naming the entry point."""
    (tmp_path / "test_x.py").write_text("def test_x(durable):\n    pass\n")
    done = _run(site, tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "--durable-store", "broken:x")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "--durable-store (ini durable_store): store scheme 'broken'" in done.stderr
    assert "distribution broken-store 1.0" in done.stderr


def test_unknown_schemes_list_the_registered_ones(site: Path, tmp_path: Path) -> None:
    """STORE-17: an unknown scheme's error lists the built-in schemes and those entry points declare."""
    done = _run(site, tmp_path, "-m", "pytest_durable.cli", "inspect", "nosuch://x")
    assert done.returncode == 2
    assert "unknown scheme 'nosuch'" in done.stderr
    assert "redis://HOST:PORT/DB" in done.stderr and "thirdparty:…" in done.stderr and "broken:…" in done.stderr
