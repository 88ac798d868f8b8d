"""No module reaches into another module's private names. A leading underscore says "only this module uses
it": a helper that a second module needs is public under a name that says what it is, or moves to a module
both import. Module paths are not checked here, only the names taken from them, so Django's underscore
module beside the management commands stays as Django documents it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("assay", "core", "annotation", "judging", "crowd", "console", "devtools")
FIRST_PARTY = set(PACKAGES)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of the module at `path` and whether it is a package's `__init__`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of the module a `from ... import` statement reads."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_module(name: str, root: Path) -> bool:
    path = root.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _dotted(node: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything else than names joined by dots."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(names)]


def private_uses(source: str, module: str, *, is_package: bool = False, root: Path = ROOT) -> list[str]:
    """Each `line: what` where the code of `module` imports or reads another first-party module's private
    name: `from x import _name`, or `x._name` on a name bound to a first-party module by an import."""
    tree = ast.parse(source)
    found: list[str] = []
    modules: dict[str, str] = {}  # a local name bound to a first-party module -> that module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source_module = _absolute(module, is_package, node)
            if source_module.split(".")[0] not in FIRST_PARTY or source_module == module:
                continue
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{node.lineno}: from {source_module} import {alias.name}")
                elif _is_module(f"{source_module}.{alias.name}", root):
                    modules[alias.asname or alias.name] = f"{source_module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in FIRST_PARTY:
                    continue
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
            continue
        names = _dotted(node.value)
        if names is None or names[0] not in modules:
            continue
        owner = ".".join([modules[names[0]], *names[1:]])
        if owner != module and _is_module(owner, root):
            found.append(f"{node.lineno}: {owner}.{node.attr}")
    return sorted(set(found), key=lambda entry: (int(entry.split(":")[0]), entry))


def test_no_module_uses_another_modules_private_names():
    offending = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            module, is_package = _module_name(path, ROOT)
            source = path.read_text(encoding="utf-8")
            for use in private_uses(source, module, is_package=is_package):
                offending.append(f"{path.relative_to(ROOT).as_posix()}:{use}")
    assert not offending, "private names used outside their module:\n" + "\n".join(offending)


def test_it_finds_a_private_name_imported_from_another_module():
    source = "from judging.measures.agreement import _pairs, cohen_agreement\nfrom .scores import _runs\n"
    assert private_uses(source, "judging.agreement.selectors") == [
        "1: from judging.measures.agreement import _pairs",
        "2: from judging.agreement.scores import _runs",
    ]


def test_it_finds_a_private_name_read_off_an_imported_module():
    source = "import judging.measures\nfrom judging import measures as m\nm.agreement._pairs()\njudging.measures._x\n"
    assert private_uses(source, "console.views") == [
        "3: judging.measures.agreement._pairs",
        "4: judging.measures._x",
    ]


def test_it_lets_a_module_use_its_own_private_names_and_dunders():
    source = "from judging.measures.agreement import _pairs, __all__\nfrom django.db import _y\n"
    assert private_uses(source, "judging.measures.agreement") == []
    assert private_uses("from . import _x\n", "judging.measures", is_package=True) == []
