"""The documentation site stays true to the code: the tutorial shows the tour's pictures, the configuration
page names every variable the settings read, and the strict build refuses a broken link.

The whole site is built by `make docs` in `make test` (mkdocs build --strict, which also regenerates the
API page from the OpenAPI schema); the build here is of a two-page site under the same configuration, so
that the configuration's refusal of broken links is itself tested.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCS = REPO / "docs"
PRODUCT = ["assay", "annotation", "judging", "crowd", "console", "devtools"]
ENV_READ = re.compile(
    r"""(?:env_(?:str|bool|int|float|list|networks)\(|os\.environ\.get\()\s*["']([A-Z][A-Z0-9_]+)["']"""
)


def test_it_shows_every_tour_picture_in_the_tutorial_in_order():
    tutorial = (DOCS / "tutorial.md").read_text(encoding="utf-8")

    shown = re.findall(r"\]\(tour/([^)]+)\)", tutorial)

    # The browser tour (tests/browser/test_organiser_tour.py) checks the same list against its steps.
    assert shown == sorted(path.name for path in (DOCS / "tour").glob("*.png"))
    assert len(shown) == len(set(shown))


def test_it_documents_every_environment_variable_the_code_reads():
    read: set[str] = set()
    for package in PRODUCT:
        for path in (REPO / package).rglob("*.py"):
            if "migrations" not in path.parts:
                read |= set(ENV_READ.findall(path.read_text(encoding="utf-8")))
    page = (DOCS / "operations" / "configuration.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]

    documented = {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])}

    assert "SECRET_KEY" in read and "DATABASE_URL" in read
    assert sorted(read - documented) == []
    assert sorted(documented - read) == []


def _build(site: Path, pages: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the given pages under the project's configuration (nav and hooks left out)."""
    docs = site / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    config = site / "mkdocs.yml"
    nav = "".join(f"  - {name}\n" for name in pages)
    config.write_text(
        f"INHERIT: {REPO / 'mkdocs.yml'}\ndocs_dir: {docs}\nsite_dir: {site / 'out'}\nhooks: []\nnav:\n{nav}",
        encoding="utf-8",
    )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config)],
        capture_output=True,
        text=True,
        cwd=site,
        timeout=120,
    )


@pytest.mark.parametrize(
    "link",
    ["[gone](missing.md)", "[no anchor](other.md#no-such-section)", "[outside](../README.md)"],
)
def test_it_fails_the_strict_build_on_a_broken_link(tmp_path, link):
    built = _build(tmp_path, {"index.md": f"# Home\n\n{link}\n", "other.md": "# Other\n\n## A section\n"})

    assert built.returncode != 0, built.stderr
    assert "WARNING" in built.stderr


def test_it_builds_pages_whose_links_hold(tmp_path):
    built = _build(
        tmp_path,
        {"index.md": "# Home\n\n[there](other.md#a-section)\n", "other.md": "# Other\n\n## A section\n"},
    )

    assert built.returncode == 0, built.stderr
    assert (tmp_path / "out" / "other.html").exists()
