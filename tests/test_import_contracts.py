"""The import-linter contracts in pyproject.toml hold, and each of them fails on the import it forbids.

The contracts run in `make test` and `make lint`; here they also run on a copy of the packages with one
bad import added, so a contract that matched nothing (a typo in a module name, a wildcard that no longer
fits the layout) shows up as a case that stays green when it should fail.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("assay", "core", "annotation", "judging", "crowd", "console", "devtools")
LINT_IMPORTS = str(Path(sys.executable).parent / "lint-imports")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("contracts")
    shutil.copy(ROOT / "pyproject.toml", target)
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, target / package, ignore=shutil.ignore_patterns("__pycache__", "migrations")
        )
    return target


@pytest.fixture
def bad_module(copy: Path) -> Iterator[list[Path]]:
    written: list[Path] = []
    yield written
    for path in written:
        path.unlink()


def test_it_keeps_every_contract_on_the_code_as_it_is():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


# (where the bad import is written, what it imports, the contract it breaks)
VIOLATIONS = [
    ("annotation/bad.py", "import judging.models", "Layers:"),
    ("annotation/bad.py", "from crowd import services", "annotation imports neither the console"),
    ("annotation/bad.py", "from console import views", "annotation imports neither the console"),
    ("judging/bad.py", "from console import selectors", "Layers:"),
    ("crowd/bad.py", "from console.models import ImportJob", "Layers:"),
    ("core/bad.py", "from annotation import models", "Layers:"),
    ("crowd/bad.py", "from judging.hybrid import services", "Layers:"),
    (
        "judging/bad.py",
        "from crowd.management.commands import crowd_compose",
        "management commands are its own",
    ),
    (
        "crowd/bad.py",
        "from annotation.management.commands import build_pool",
        "management commands are its own",
    ),
    ("judging/bad.py", "from crowd.management.commands import _crowd", "private module"),
    ("annotation/models/bad.py", "from annotation.relevance import forms", "Models never import"),
    ("console/bad.py", "from devtools import mturk_server", "dev tools"),
    ("crowd/bad.py", "from devtools import mturk_server", "dev tools"),
    (
        "annotation/nuggets/bad.py",
        "from annotation.support import services",
        "label families (relevance, ptkb",
    ),
    ("judging/measures/bad.py", "from django.db import models", "measures are pure statistics"),
    ("judging/measures/hybrid/bad.py", "from core import jobs", "measures are pure statistics"),
    ("judging/measures/bad.py", "import judging.models", "measures are pure statistics"),
    ("judging/support/bad.py", "from judging.agreement import selectors", "judging's features (agreement"),
    ("judging/evaluation/bad.py", "from judging.hybrid import views", "judging's features (agreement"),
    ("judging/scores/bad.py", "from judging.support import views", "features above the scores"),
    ("judging/measures/bad.py", "from judging.scores import support", "features above the scores"),
    ("judging/clients/bad.py", "from judging.machine import nli", "features above the scores"),
]


@pytest.mark.parametrize(("where", "statement", "contract"), VIOLATIONS)
def test_it_breaks_the_contract_an_import_violates(copy, bad_module, where, statement, contract):
    path = copy / where
    path.write_text(f"{statement}\n", encoding="utf-8")
    bad_module.append(path)

    result = _lint_imports(copy)

    assert result.returncode == 1, result.stdout + result.stderr
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken
    assert where.removesuffix(".py").replace("/", ".") in broken
