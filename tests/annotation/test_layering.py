"""Dependencies point one way: judging and crowd import annotation, never the reverse."""

import ast
from pathlib import Path

ANNOTATION = Path(__file__).resolve().parents[2] / "annotation"
ABOVE = ("judging", "crowd")


def _imported_modules(source: str):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_annotation_imports_nothing_from_the_apps_above_it():
    offenders = [
        f"{path.relative_to(ANNOTATION.parent)}: {module}"
        for path in sorted(ANNOTATION.rglob("*.py"))
        for module in _imported_modules(path.read_text(encoding="utf-8"))
        if module.split(".")[0] in ABOVE
    ]
    assert offenders == []


def test_the_check_sees_an_import_inside_a_function():
    assert list(_imported_modules("def f():\n    from judging.agreement.metrics import cohen_kappa\n")) == [
        "judging.agreement.metrics"
    ]
