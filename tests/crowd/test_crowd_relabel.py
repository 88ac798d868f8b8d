"""The crowd app's label moved from "mturk" to "crowd": fresh and old databases both migrate.

Each database is a scratch database on the test run's PostgreSQL server, migrated by a separate process so
that the old label's app registry (tests/crowd/mturk_label) and today's never meet in one interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from crowd.relabel import crowd_history_relabel

REPO = Path(__file__).resolve().parents[2]
CROWD_MIGRATIONS = [
    "0001_crowd_campaigns",
    "0002_assignment_bonus",
    "0003_batch_missing_assignment_provisional",
    "0004_crowd_studies",
]
# Migrations made after the app was relabelled: a database made under the old label takes them on upgrade.
CROWD_MIGRATIONS_SINCE = ["0005_nugget_support_campaigns", "0006_fit_jobs", "0007_crowdfitjob_task_id_help"]
# Models those migrations added: their content types are new, after the relabelled ones.
CROWD_MODELS_SINCE = ["crowdfitjob"]
CROWD_TABLES = {
    "mturk_batchitem",
    "mturk_crowdanswer",
    "mturk_crowdassignment",
    "mturk_crowdbatch",
    "mturk_crowdcampaign",
    "mturk_crowdcampaign_runs",
    "mturk_crowdcampaign_turns",
    "mturk_crowdfitjob",
    "mturk_crowdstudy",
    "mturk_crowdworker",
    "mturk_testquestion",
}

BUILD_UNDER_OLD_LABEL = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", "auth", verbosity=0)
call_command("migrate", "mturk", verbosity=0)
from django.contrib.auth.models import Group, Permission, User
from crowd.models import CrowdWorker
user = User.objects.create_user("organiser")
user.user_permissions.add(Permission.objects.get(content_type__app_label="mturk", codename="change_crowdworker"))
group = Group.objects.create(name="crowd-viewers")
group.permissions.add(Permission.objects.get(content_type__app_label="mturk", codename="view_crowdcampaign"))
user.groups.add(group)
CrowdWorker.objects.create(worker_id="A1B2C3", user=user)
"""

UPGRADE = """
import io, json
import django
django.setup()
from django.core.management import call_command
out = io.StringIO()
call_command("migrate", "crowd", stdout=out)
again = io.StringIO()
call_command("migrate", "crowd", stdout=again)
from django.contrib.auth.models import User
from crowd.models import CrowdWorker
user = User.objects.get(username="organiser")
print(json.dumps({
    "out": out.getvalue(),
    "again": again.getvalue(),
    "workers": [[w.worker_id, w.user.username] for w in CrowdWorker.objects.select_related("user")],
    "perms": sorted(user.get_all_permissions()),
}))
"""


def _server_url(name: str) -> str:
    server = connection.settings_dict
    return f"postgres://{server['USER']}@{server['HOST']}:{server['PORT']}/{name}"


@pytest.fixture
def scratch_database() -> Iterator[str]:
    """The URL of an empty database of its own on the test server, dropped afterwards."""
    name = f"relabel_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_server_url("postgres"), autocommit=True) as server:
        server.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _server_url(name)
    finally:
        with psycopg.connect(_server_url("postgres"), autocommit=True) as server:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(script: str, *, database: str, settings: str = "assay.settings") -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "TEST_DATABASE_NAME"}}
    env |= {"DEBUG": "1", "DATABASE_URL": database, "DJANGO_SETTINGS_MODULE": settings}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _rows(database: str, sql: str) -> list[tuple]:
    with psycopg.connect(database) as db:
        return db.execute(sql).fetchall()  # type: ignore[arg-type]


@pytest.mark.django_db
def test_it_migrates_a_fresh_database_under_the_crowd_label_to_the_old_table_names(
    scratch_database: str,
) -> None:
    database = scratch_database
    _run(
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('migrate', 'crowd', verbosity=0)",
        database=database,
    )

    applied = _rows(database, "SELECT app, name FROM django_migrations WHERE app IN ('crowd', 'mturk')")
    assert sorted(applied) == [("crowd", name) for name in CROWD_MIGRATIONS + CROWD_MIGRATIONS_SINCE]
    tables = {
        name
        for (name,) in _rows(
            database, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
    }
    assert CROWD_TABLES <= tables
    assert not {name for name in tables if name.startswith("crowd_")}
    labels = {label for (label,) in _rows(database, "SELECT DISTINCT app_label FROM django_content_type")}
    assert "crowd" in labels and "mturk" not in labels


@pytest.mark.django_db
def test_it_moves_a_database_made_under_the_mturk_label(scratch_database: str) -> None:
    database = scratch_database
    _run(BUILD_UNDER_OLD_LABEL, database=database, settings="tests.crowd.mturk_label.settings")
    old_types = _rows(
        database, "SELECT id, model FROM django_content_type WHERE app_label = 'mturk' ORDER BY id"
    )
    assert old_types and _rows(database, "SELECT COUNT(*) FROM django_migrations WHERE app = 'mturk'") == [
        (4,)
    ]

    result = json.loads(_run(UPGRADE, database=database))

    assert "Moved 12 migration and content type rows from label 'mturk' to 'crowd'." in result["out"]
    assert all(f"Applying crowd.{name}... OK" in result["out"] for name in CROWD_MIGRATIONS_SINCE)
    assert not any(f"Applying crowd.{name}" in result["out"] for name in CROWD_MIGRATIONS)
    assert "Moved" not in result["again"] and "No migrations to apply." in result["again"]
    assert result["workers"] == [["A1B2C3", "organiser"]]
    assert result["perms"] == ["crowd.change_crowdworker", "crowd.view_crowdcampaign"]
    applied = _rows(database, "SELECT app, name FROM django_migrations WHERE app IN ('crowd', 'mturk')")
    assert sorted(applied) == [("crowd", name) for name in CROWD_MIGRATIONS + CROWD_MIGRATIONS_SINCE]
    # The same content type rows, relabelled: whatever points at them by id (permissions, admin log) follows.
    crowd_types = _rows(
        database, "SELECT id, model FROM django_content_type WHERE app_label = 'crowd' ORDER BY id"
    )
    assert crowd_types[: len(old_types)] == old_types
    assert [model for _, model in crowd_types[len(old_types) :]] == CROWD_MODELS_SINCE
    assert _rows(database, "SELECT COUNT(*) FROM django_content_type WHERE app_label = 'mturk'") == [(0,)]


@pytest.mark.django_db
def test_it_keeps_rows_already_under_the_crowd_label() -> None:
    # The test database may be built from the models (make test's --nomigrations), with no history yet.
    recorder = MigrationRecorder(connection)
    recorder.ensure_schema()
    if ("crowd", CROWD_MIGRATIONS[0]) not in recorder.applied_migrations():
        recorder.record_applied("crowd", CROWD_MIGRATIONS[0])
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES ('mturk', %s, CURRENT_TIMESTAMP)",
            [CROWD_MIGRATIONS[0]],
        )
        cursor.execute("INSERT INTO django_content_type (app_label, model) VALUES ('mturk', 'crowdworker')")

    moved = crowd_history_relabel(connection=connection)

    assert moved == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT app FROM django_migrations WHERE name = %s", [CROWD_MIGRATIONS[0]])
        assert cursor.fetchall() == [("crowd",)]
        cursor.execute("SELECT app_label FROM django_content_type WHERE model = 'crowdworker' ORDER BY id")
        assert cursor.fetchall() == [("crowd",), ("mturk",)]
