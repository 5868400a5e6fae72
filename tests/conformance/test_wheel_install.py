"""The kit as a backend author meets it: an installed wheel, a one-file project outside this repository
(issue 6, item 6)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.wheel import build_wheel

AUTHOR_TEST = textwrap.dedent(
    '''
    """A backend author's whole certification: one store, one test file."""

    import copy

    import pytest

    from conformance import StoreConformance, StoreFactory

    pytest_plugins = ["conformance.plugin"]


    class DictStore:
        """An action-state store in a dict, subclassing nothing."""

        def __init__(self):
            self.states = {}  # state key -> (business key, seq, state)

        def put(self, ref, state):
            self.states[ref.state_key] = (ref.key, ref.seq, copy.deepcopy(state))

        def get(self, ref):
            entry = self.states.get(ref.state_key)
            if entry is None:
                for sk in [sk for sk, (k, s, _) in self.states.items() if k == ref.key and s > ref.seq]:
                    del self.states[sk]
                return None
            return copy.deepcopy(entry[2])

        def put_call_results(self, ref, index, results):
            calls = self.states[ref.state_key][2].call_results
            calls[index : index + len(results)] = copy.deepcopy(list(results))

        def truncate_call_results(self, ref, index):
            del self.states[ref.state_key][2].call_results[index:]

        def prune_state(self, key, seq):
            for sk in [sk for sk, (k, s, _) in self.states.items() if k == key and s <= seq]:
                del self.states[sk]

        def get_recovery_marker(self):
            return None

        def rebuild_state(self, markers):
            pass

        def close(self):
            pass


    @pytest.fixture(scope="session")
    def durable_store_factory():
        return StoreFactory(DictStore, name="dict-store")


    class TestDictStore(StoreConformance):
        pass
    '''
)


def test_a_backend_author_certifies_a_store_against_the_installed_wheel(tmp_path: Path) -> None:
    """CONF-1, CONF-3: built wheel → fresh venv → one test file outside the repo → core is FULL, the
    undeclared capabilities are skipped with a reason, and the kit is imported from the wheel."""
    wheel = build_wheel(tmp_path / "wheels")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "PYTEST_"))}
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        env=env,
        cwd=tmp_path,
    )

    project = tmp_path / "author"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "test_dict_store.py").write_text(AUTHOR_TEST)

    where = subprocess.run(
        [
            str(python),
            "-c",
            "import conformance, reference_runtime as r; print(conformance.__file__); print(r.__file__)",
        ],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), f"not imported from the wheel: {where}"

    # The test file's own `pytest_plugins` is enough for the level table...
    run = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-rs"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "backend: dict-store   capabilities: core" in run.stdout
    assert re.search(r"core +FULL", run.stdout), run.stdout
    assert "does not declare the 'restart' capability" in run.stdout
    # ...command-line options need the plugin loaded before the command line is parsed.
    run = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "conformance.plugin",
            "--durable-conformance-report",
            "report.json",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads((project / "report.json").read_text())
    assert doc["backend"] == "dict-store"
    assert doc["capabilities"]["core"]["level"] == "FULL"
    assert doc["capabilities"]["restart"]["level"] == "NONE"
    # FULL for what it declares: the undeclared capabilities are listed (NONE) but do not count.
    assert doc["level"] == "FULL"
    # `durable certify` runs the kit's fixed suite, shipped in the wheel with its own pytest.ini: the project's
    # configuration (its pytest.ini here) does not apply and node ids name the check.
    certified = project / "certified.json"
    run = subprocess.run(
        [str(venv / "bin" / "durable"), "certify", "--store", "memory:", "--seed", "1", "--report", str(certified)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads(certified.read_text())
    assert (doc["backend"], doc["level"]) == ("memory:", "FULL")
    assert all(c["nodeid"].startswith("test_certify.py::TestCertify::") for c in doc["checks"])
