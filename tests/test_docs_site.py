"""The documentation site builds with ``mkdocs build --strict``, API reference included (DOC-4)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs is not installed in CI: scripts/install-test-deps.sh installs the docs extra")
        pytest.skip("the docs extra is not installed: python -m pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"},
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}{done.stderr}"
    return out


def test_the_site_builds_strictly_with_every_page_in_the_nav(site: Path) -> None:
    """DOC-4: --strict passed (no broken link, no page left out of the nav), and every docs page is built."""
    missing = []
    for md in (ROOT / "docs").rglob("*.md"):
        page = md.relative_to(ROOT / "docs").with_suffix("")
        html = site / "index.html" if page == Path("index") else site / page / "index.html"
        if not html.exists():
            missing.append(str(page))
    assert not missing, f"pages not built: {missing}"


@pytest.mark.parametrize(
    ("page", "names"),
    [
        ("reference_runtime", ["Runner", "FaultInjector", "CrashNotReachedError", "SimulatedCrash"]),
        ("conformance", ["StoreConformance", "StoreFactory", "RunnerFactory", "factory_from_url"]),
        ("pytest_durable", ["DurableHarness", "Ledger", "Scenario", "crash_schedules"]),
    ],
)
def test_the_api_reference_is_generated_from_the_docstrings(site: Path, page: str, names: list[str]) -> None:
    """DOC-4: each package's API page lists its public names with their docstrings."""
    html = (site / "api" / page / "index.html").read_text(encoding="utf-8")
    missing = [name for name in names if f'id="{name}"' not in html and f'.{name}"' not in html]
    assert not missing, f"api/{page}: no entry for {missing}"


@pytest.mark.parametrize("root", ["reference_runtime", "conformance", "pytest_durable"])
def test_every_exported_class_and_function_has_an_api_entry(site: Path, root: str) -> None:
    """API-1, DOC-4: each class and function a root exports (its ``__all__``) has an entry on its API page,
    under the root's name (constants are explained in the guides; tests/test_public_api.py checks those)."""
    module = importlib.import_module(root)
    html = (site / "api" / root / "index.html").read_text(encoding="utf-8")
    wanted = [n for n in module.__all__ if inspect.isclass(obj := getattr(module, n)) or inspect.isfunction(obj)]
    missing = [n for n in wanted if f'id="{root}.{n}"' not in html]
    assert not missing, f"api/{root}: no entry for {missing}"
