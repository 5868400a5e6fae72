"""The mutation suite (KIT-3, CONF-2): every broken store and runner of tests/conformance/mutants is killed by a
check citing the clause it violates, whose message names that clause; every control certifies FULL.

Each mutant runs in-process with ``--durable-clause`` selecting the checks of its clause, so the whole suite
stays within a couple of minutes and spreads over pytest-xdist workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conformance.kit_run import run_kit
from tests.conformance.mutants import CONTROLS, MUTANTS

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

STORE_SUITE = """
import pytest
from conformance import StoreConformance
from tests.conformance.mutants import store_factory


@pytest.fixture(scope="session")
def durable_store_factory(tmp_path_factory):
    return store_factory({name!r}, tmp_path_factory.mktemp("data"))


class TestMutant(StoreConformance):
    check_timeout = {timeout!r}
"""

RUNNER_SUITE = """
import pytest
from conformance import RunnerConformance
from tests.conformance.mutants import runner_factory


@pytest.fixture(scope="session")
def durable_runner_factory():
    return runner_factory({name!r})


class TestMutant(RunnerConformance):
    check_timeout = {timeout!r}
"""


def certify(
    pytester: pytest.Pytester, name: str, kind: str, *args: str, timeout: float = 60.0
) -> tuple[pytest.RunResult, dict[str, Any]]:
    suite = (STORE_SUITE if kind == "store" else RUNNER_SUITE).format(name=name, timeout=timeout)
    return run_kit(pytester, suite, "--durable-conformance-seed", "16", "-p", "no:cacheprovider", "-q", *args)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_killed_by_a_check_citing_its_clause(pytester: pytest.Pytester, name: str) -> None:
    """KIT-3, CONF-2: the mutant fails a check that cites the clause it violates, and that check's message names
    the clause."""
    mutant = MUTANTS[name]
    result, doc = certify(pytester, name, mutant.kind, "--durable-clause", mutant.clause, "-x", timeout=mutant.timeout)
    assert doc, f"{name}: no report\n{result.stdout.str()}"
    killers = [c for c in doc["checks"] if c["outcome"] == "failed" and mutant.clause in c["clauses"]]
    assert killers, (
        f"{name} ({mutant.clause}: {mutant.doc}) survived: {[(c['nodeid'], c['outcome']) for c in doc['checks']]}"
    )
    assert any(mutant.clause in (c["reason"] or "") for c in killers), (
        f"{name}: the failure does not name {mutant.clause}: {[c['reason'] for c in killers]}"
    )


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_control_certifies_full(pytester: pytest.Pytester, name: str) -> None:
    """KIT-3: a correct backend written like the mutants (a Kafka-like store replaying from its markers
    among them) certifies FULL: no check demands more than its clause."""
    result, doc = certify(pytester, name, CONTROLS[name])
    assert doc.get("level") == "FULL", result.stdout.str()
    assert result.ret == pytest.ExitCode.OK


def test_every_store_and_runner_clause_has_a_mutant() -> None:
    """KIT-3: the mutation suite has at least 120 mutants, and every check of the kit cites a clause some
    mutant violates, so each check is one that can be the killer."""
    from tests.conformance.test_must_map import SUITES

    assert len(MUTANTS) >= 120, len(MUTANTS)
    violated = {m.clause for m in MUTANTS.values()}
    idle = [
        f"{suite}.{name}"
        for suite, cls in SUITES.items()
        for name in dir(cls)
        if name.startswith("test_")
        and not set(getattr(getattr(cls, name), "durable_conformance_clauses", ())) & violated
    ]
    assert not idle, f"checks no mutant's clause is cited by: {idle}"


def test_the_documented_mutation_score_counts_every_mutant() -> None:
    """KIT-3: docs/conformance/reference.md states the size of the mutation suite as it is."""
    text = (ROOT / "docs" / "conformance" / "reference.md").read_text(encoding="utf-8")
    stores = sum(m.kind == "store" for m in MUTANTS.values())
    assert f"| **total** | **{len(MUTANTS)}** | **{len(MUTANTS)}** | **100 %** |" in text
    assert f"| stores | {stores}: " in text and f"| runners | {len(MUTANTS) - stores}: " in text


def test_a_serial_batch_waits_out_the_parallelism_gate_once() -> None:
    """BAT-3: a runner that runs a batch one call at a time is caught by the first batch call that waits in
    vain for ``tool-call.parallelism`` calls at once; later calls do not wait again (the mutation suite would
    otherwise spend a second per call on ``serial_batches``), and a parallel runner never waits it out."""
    from conformance import agents
    from reference_runtime import Runner
    from reference_runtime.stores.memory import InMemoryStore

    agents.reset()
    Runner(agents.ParallelBatch, InMemoryStore(), config={"tool-call.parallelism": 1}).run([("k", 0)])
    assert (agents.LEDGER.max_active, agents.LEDGER.gate_timeouts) == (1, 1)
    agents.reset()
    Runner(agents.ParallelBatch, InMemoryStore()).run([("k", 0)])
    assert (agents.LEDGER.max_active, agents.LEDGER.gate_timeouts) == (3, 0)
