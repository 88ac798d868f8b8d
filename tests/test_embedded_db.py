"""The embedded PostgreSQL (assay/embedded_db.py): a cluster of the wheel's server in a folder, started,
found running, refused on a taken port, stopped; and settings that refuse any other database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import psycopg
import pytest

from assay import embedded_db
from tests.conftest import REPO
from tests.test_readme import free_port


def test_it_starts_a_cluster_in_a_folder_with_the_assay_database_finds_it_running_and_stops_it(tmp_path):
    data, port = tmp_path / "pg", free_port()
    try:
        url = embedded_db.start(data=data, at_port=port)
        assert url == f"postgres://assay@127.0.0.1:{port}/assay"
        with psycopg.connect(url) as conn:
            version = conn.execute("show server_version_num").fetchone()
            assert version is not None and int(version[0]) >= 180000
            assert conn.execute("select current_user, current_database()").fetchone() == ("assay", "assay")
        # Started again, it finds the cluster running and makes a second database when asked.
        other = f"postgres://assay@127.0.0.1:{port}/other"
        assert embedded_db.start(data=data, at_port=port, database="other") == other
        with psycopg.connect(other) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
    finally:
        stopped = embedded_db.stop(data=data)
    assert stopped
    assert not embedded_db.accepts_connections(port)


def test_it_refuses_a_port_another_program_holds_and_says_so(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(embedded_db.EmbeddedDatabaseError, match=f"port {port} is taken"):
            embedded_db.start(data=tmp_path / "pg", at_port=port)


def test_it_refuses_a_database_name_it_would_have_to_quote(tmp_path):
    data, port = tmp_path / "pg", free_port()
    try:
        with pytest.raises(embedded_db.EmbeddedDatabaseError, match="lower-case letters"):
            embedded_db.start(data=data, at_port=port, database='x"; drop table y; --')
    finally:
        embedded_db.stop(data=data)


@pytest.mark.parametrize("url", ["sqlite:///db.sqlite3", "mysql://u@localhost/assay"])
def test_the_settings_refuse_a_database_that_is_not_postgresql(url):
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "1"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env=env | {"DJANGO_SETTINGS_MODULE": "assay.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "DATABASE_URL must name a PostgreSQL database" in done.stderr


def test_a_command_that_reads_no_row_starts_no_cluster(tmp_path):
    # The docs build writes the API schema through manage.py where no cluster runs, or where another
    # checkout's holds the default port: taken here, so a start would fail the command.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env |= {
            "DEBUG": "1",
            "EMBEDDED_PG_PORT": str(taken.getsockname()[1]),
            "EMBEDDED_PG_DIR": str(tmp_path),
        }
        done = subprocess.run(
            [sys.executable, "manage.py", "spectacular", "--file", str(tmp_path / "schema.yaml")],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "schema.yaml").read_text().startswith("openapi:")
    assert not (tmp_path / "PG_VERSION").exists()


def test_a_command_without_database_url_or_debug_refuses_rather_than_start_a_local_cluster(tmp_path):
    # A production machine that forgot DATABASE_URL must not make and migrate a cluster beside its server.
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DEBUG"}}
    env |= {"EMBEDDED_PG_DIR": str(tmp_path / "pg"), "EMBEDDED_PG_PORT": str(free_port())}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "DATABASE_URL is not set" in done.stderr and "DEBUG=1" in done.stderr
    assert not (tmp_path / "pg").exists()
