"""How `make test` splits the suite: the database mark it selects on, and the PostgreSQL pass that fails,
rather than passing by skipping, when PostgreSQL is not running."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import REPO


def test_it_marks_a_test_that_asks_for_the_database(request, db):
    assert request.node.get_closest_marker("database") is not None


@pytest.mark.django_db
def test_it_marks_a_test_with_the_django_db_mark(request):
    assert request.node.get_closest_marker("database") is not None


def test_it_leaves_a_test_without_the_database_unmarked(request):
    assert request.node.get_closest_marker("database") is None


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_postgresql_pass_fails_and_says_why_when_postgresql_is_not_running(tmp_path):
    # An empty TMP: no cluster that `make services` started, as when PostgreSQL could not start.
    done = subprocess.run(
        ["make", "--no-print-directory", "test-postgres-ready", f"TMP={tmp_path}", "PG_PORT=1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode != 0
    assert "PostgreSQL is not running on 127.0.0.1:1" in done.stderr
    assert "make test fails" in done.stderr
