"""No product module over about 450 lines: a module past that holds more than one job and is split by feature
(a package with a module per topic, as crowd/services/ is)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("assay", "core", "annotation", "judging", "crowd", "console", "devtools")
LIMIT = 460


def test_no_product_module_is_over_about_450_lines():
    sizes = {
        str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if "migrations" not in path.parts
    }
    assert sizes, "no modules found"
    assert {name: lines for name, lines in sizes.items() if lines > LIMIT} == {}
