"""`make test` fails, rather than passing by skipping, when PostgreSQL is not running."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import REPO


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_tests_fail_and_say_why_when_postgresql_is_not_running(tmp_path):
    # An empty TMP: no cluster that `make services` started, as when PostgreSQL could not start.
    done = subprocess.run(
        ["make", "--no-print-directory", "test-ready", f"TMP={tmp_path}", "PG_PORT=1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode != 0
    assert "PostgreSQL is not running on 127.0.0.1:1" in done.stderr
    assert "make test fails" in done.stderr
