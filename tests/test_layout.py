"""Every feature has the same shape: its parts are named models, services, selectors, io, views, forms, api,
urls and tasks (a module, or a package of modules split by topic), and an app's root holds only what the
whole app shares, so a reader finds a feature's pages, writes or files in the same place in every app."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APPS = ("annotation", "judging", "crowd")
PARTS = ("models", "services", "selectors", "io", "views", "forms", "api", "urls", "tasks")

# What may sit at an app's root beside its feature packages: Django's own modules, the app-wide parts, and
# what the app as a whole sets up (console_panels: what AppConfig.ready registers on annotation's pages;
# relabel: moving a database made under the crowd app's first label).
APP_WIDE = {"__init__", "admin", "apps", "models", "tasks", "urls", "console_panels"}
ROOTS = {
    # judging's views: the pages that put two of its features side by side, above both.
    "judging": APP_WIDE | {"views"},
    "crowd": APP_WIDE | {"forms", "selectors", "report", "client", "relabel"},
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
