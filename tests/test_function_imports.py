"""No import of Assay's own code hides inside a function: import-linter reads such imports too, but a
function-level import is how a cycle between two modules, or a dependency that belongs elsewhere, stays
out of sight of the reader. A heavy third-party library (torch, transformers, scipy, matplotlib, ...) may
still be imported where it is used: tests/test_startup.py keeps those out of every process's start-up.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("assay", "core", "annotation", "judging", "crowd", "console", "devtools")
FIRST_PARTY = set(PACKAGES)

# (module, function) -> why an import of Assay's code inside it is right.
ALLOWED = {
    ("crowd/apps.py", "ready"): "AppConfig.ready reserves judge names once the apps are loaded",
    ("annotation/apps.py", "ready"): "AppConfig.ready connects the judge labels' and the passage counts' "
    "triggers, made from the models once the apps are loaded",
}


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return ["." if node.level else (node.module or "")]
    return [alias.name for alias in node.names]


def _function_imports(path: Path) -> list[tuple[str, int, str]]:
    """(function, line, statement) of each import of first-party code inside a function of `path`."""
    found: list[tuple[str, int, str]] = []

    def walk(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inside = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            if function is not None and isinstance(child, ast.Import | ast.ImportFrom):
                if any(name == "." or name.split(".")[0] in FIRST_PARTY for name in _imported(child)):
                    found.append((function, child.lineno, ast.unparse(child)))
            walk(child, inside)

    walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), None)
    return found


def test_no_function_imports_assays_own_code():
    offending = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            module = path.relative_to(ROOT).as_posix()
            for function, line, statement in _function_imports(path):
                if (module, function) not in ALLOWED:
                    offending.append(f"{module}:{line} in {function}(): {statement}")
    assert not offending, "imports of Assay's code inside functions:\n" + "\n".join(offending)


def test_the_allow_list_names_only_imports_that_exist():
    stale = [
        key
        for key in ALLOWED
        if not (ROOT / key[0]).exists() or key[1] not in {f for f, _, _ in _function_imports(ROOT / key[0])}
    ]
    assert not stale, f"allowed function-level imports that are gone: {stale}"


def test_it_finds_an_import_inside_a_method(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("class A:\n    def f(self):\n        from judging import models\n        import numpy\n")
    assert _function_imports(path) == [("f", 3, "from judging import models")]
