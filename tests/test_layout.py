"""Every feature has the same shape: its parts are named models, services, selectors, io, views, forms, api,
urls and tasks (a module, or a package of modules split by topic), and an app's root holds only what the
whole app shares, so a reader finds a feature's pages, writes or files in the same place in every app."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APPS = ("annotation", "judging", "crowd", "console")
PARTS = ("models", "services", "selectors", "io", "views", "forms", "api", "urls", "tasks")
# A label family's package holds its own parts besides those: the one writer of its rows, its files' text
# and its declaration (annotation/labels/family.py is the type of that declaration).
FAMILY_PARTS = ("models", "writer", "formats", "io", "family")

# What may sit at an app's root beside its feature packages: Django's own modules, the app-wide parts, and
# what the app as a whole sets up (errors: the one error every crowd feature raises).
APP_WIDE = {"__init__", "admin", "apps", "models", "tasks", "urls"}
ROOTS = {
    # judging's views: the pages that put two of its features side by side, above both.
    "judging": APP_WIDE | {"views"},
    "crowd": APP_WIDE | {"forms", "errors"},
    # The console's own pages (home, collections, pools and work, dashboard, downloads) at its root, with
    # the stored reports two of them show; its uploads and people are packages.
    "console": APP_WIDE | {"views", "forms", "selectors", "services", "stored"},
    # annotation's root: the collection's reads and writes every family builds on (selectors, services;
    # its files in are the collection package), the list of label families, and the rules every
    # family's pages, API and commands share (who is an organiser, whose labels one may read, judge
    # menus, the commands' base, narrow request types). demo builds `make run`'s collection.
    "annotation": APP_WIDE
    | {"selectors", "services", "families", "permissions", "judge_access", "judge_menus"}
    | {"commands", "typed", "demo"},
}


def _modules(app: str) -> list[Path]:
    return [
        path
        for path in (REPO / app).rglob("*.py")
        if "migrations" not in path.parts and "management" not in path.parts
    ]


def test_it_names_no_module_after_a_part_plus_a_suffix():
    # views_agreement.py beside views.py is a second views module: it belongs in a views/ package.
    suffixed = sorted(
        str(path.relative_to(REPO))
        for app in APPS
        for path in _modules(app)
        if any(path.stem.startswith(f"{part}_") for part in PARTS)
    )

    assert suffixed == []


def test_it_keeps_features_out_of_the_app_roots():
    loose = {
        app: sorted(path.stem for path in (REPO / app).glob("*.py") if path.stem not in allowed)
        for app, allowed in ROOTS.items()
    }

    assert loose == {app: [] for app in ROOTS}


def test_it_gives_every_feature_package_an_init():
    # A folder of modules without __init__.py is a namespace package: mypy and import-linter skip it.
    bare = sorted(
        str(folder.relative_to(REPO))
        for app in APPS
        for folder in (REPO / app).rglob("*")
        if folder.is_dir()
        and any(folder.glob("*.py"))
        and not (folder / "__init__.py").exists()
        and "migrations" not in folder.parts
    )

    assert bare == []


def test_it_keeps_each_label_family_in_its_own_package():
    families = sorted(
        path.parent for path in (REPO / "annotation").glob("*/family.py") if path.parent.name != "labels"
    )
    missing = {
        family.name: [part for part in FAMILY_PARTS if not (family / f"{part}.py").exists()]
        for family in families
    }

    assert len(families) >= 5
    assert missing == {family.name: [] for family in families}
