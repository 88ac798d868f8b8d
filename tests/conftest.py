"""Shared fixtures: the real public data folder, and a live server for browser tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
    # Without DATABASE_URL (pytest run by hand, not by make test) the tests use the project's embedded
    # PostgreSQL, as manage.py does, started here when it is not running.
    if not os.environ.get("DATABASE_URL"):
        from assay import embedded_db

        embedded_db.ensure_default()
    # PBKDF2 is slow on purpose, and every test that makes a user or logs in would pay for it; the tests
    # check who may do what, not how strong the stored hash is (production keeps Django's default).
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
