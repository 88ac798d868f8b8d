"""Fixtures tests of more than one app share: the real public data folder and this checkout's fixture
files, a signed-in organiser, a judge, the support fixtures' TREC RAG collection with GPT-4o's labels of
it, and a TREC RAG topic with its answers and nugget list."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotation.collection.io import passages_import, run_import
from annotation.models import Judge
from annotation.services import judge_get_or_create
from annotation.support.io import support_labels_import
from tests.annotation.rag_nuggets.data import rag_topic
from tests.factories import CollectionFactory, JudgeFactory, OrganiserFactory

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SHARED_DATA = Path(os.environ.get("ASSAY_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def reports_in_request(settings):
    """Tasks run as they are queued (the immediate backend), so a stored report's first view computes it
    and shows it done: for tests of what a report says, not of how it is stored
    (tests/judging/reports/ and tests/judging/agreement/test_stored_pages.py test that, on the queue)."""
    from tests.background import IMMEDIATE  # it imports this module

    settings.TASKS = IMMEDIATE


@pytest.fixture
def shared_data() -> Path:
    """The real public iKAT files beside the checkout; tests using them skip when the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"public iKAT data not found at {SHARED_DATA} (set ASSAY_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def organiser(client):
    """An organiser, signed in on `client`."""
    user = OrganiserFactory(username="olga")
    client.force_login(user)
    return user


@pytest.fixture
def judge():
    return JudgeFactory()


@pytest.fixture
def rag(db, fixtures_dir):
    """The support fixtures' TREC RAG collection: two runs' cited answers and the passages they cite."""
    collection = CollectionFactory(name="rag24")
    run_import(path=fixtures_dir / "support" / "answers.jsonl", collection=collection)
    passages_import(path=fixtures_dir / "support" / "passages.jsonl", collection=collection)
    return collection


@pytest.fixture
def gpt(rag, fixtures_dir):
    """GPT-4o's support labels of every citation in `rag`."""
    judge = judge_get_or_create(name="gpt-4o", kind=Judge.Kind.LLM)
    support_labels_import(path=fixtures_dir / "support" / "gpt4o_labels.jsonl", collection=rag, judge=judge)
    return judge


@pytest.fixture
def data():
    """A TREC RAG topic with answers and a nugget list (tests/annotation/rag_nuggets/data.py)."""
    return rag_topic()


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
