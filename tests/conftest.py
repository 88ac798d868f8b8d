"""Shared fixtures: the real public data folder, and a live server for browser tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connection

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SHARED_DATA = Path(os.environ.get("ASSAY_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def shared_data() -> Path:
    """The real public iKAT files beside the checkout; tests using them skip when the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"public iKAT data not found at {SHARED_DATA} (set ASSAY_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True)
def _cache_cleared():
    """Each test starts with an empty cache: the login and API throttles count in it."""
    from django.core.cache import cache

    cache.clear()
    yield


def pytest_configure(config):
    # PBKDF2 is slow on purpose, and every test that makes a user or logs in would pay for it; the tests
    # check who may do what, not how strong the stored hash is (production keeps Django's default).
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def on_postgres() -> bool:
    return connection.vendor == "postgresql"


def touches_database(item: pytest.Item) -> bool:
    """Whether a test reaches the test database: the django_db mark, a fixture built on pytest-django's
    database access (db, transactional_db, admin_client, ...), or the postgres mark. pytest-django refuses
    database access to every other test, so a test counted out here cannot depend on the database."""
    return (
        item.get_closest_marker("django_db") is not None
        or item.get_closest_marker("postgres") is not None
        or "_django_db_helper" in getattr(item, "fixturenames", ())
    )


# First, so that `-m database` / `-m "not database"` select on the mark added here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if touches_database(item):
            item.add_marker(pytest.mark.database)
    skip_pg = pytest.mark.skip(reason="needs PostgreSQL (make test runs these on PostgreSQL)")
    from django.conf import settings

    is_pg = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
    for item in items:
        if "postgres" in item.keywords and not is_pg:
            item.add_marker(skip_pg)
