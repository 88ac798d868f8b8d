"""Shared set-up for benchmarks: a throwaway PostgreSQL database, migrated, before Django loads.

The database is made on the cluster at 127.0.0.1:$PG_PORT (55432 unless set: the one `make services`
starts, which `make bench` does first). When nothing answers there, the bench starts an embedded cluster
(assay/embedded_db.py) of its own in a scratch folder, on that port, and stops and removes it at exit,
so that a bench also runs on its own: `.venv/bin/python bench/bench_<name>.py`.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_PORT = int(os.environ.get("PG_PORT", "55432"))

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@functools.cache
def cluster_url() -> str:
    """The URL of the cluster's `assay` database, from which benches make and drop their own."""
    from assay import embedded_db

    if embedded_db.accepts_connections(PG_PORT):
        return embedded_db.url(at_port=PG_PORT)
    folder = Path(tempfile.mkdtemp(prefix="assay-bench-pg-"))
    print(f"nothing answers on 127.0.0.1:{PG_PORT}: starting an embedded PostgreSQL there for this run")
    # Registered before any database's drop, so it runs after them (atexit runs last in, first out).
    atexit.register(_cluster_remove, folder)
    return embedded_db.start(data=folder / "pgdata", at_port=PG_PORT)


def _cluster_remove(folder: Path) -> None:
    from assay import embedded_db

    embedded_db.stop(data=folder / "pgdata")
    shutil.rmtree(folder, ignore_errors=True)


def database_url(name: str) -> str:
    return cluster_url().rsplit("/", 1)[0] + "/" + name


def database_create(name: str, *, template: str | None = None) -> str:
    """Makes the database `name` afresh (a copy of `template` when given); returns its URL."""
    import psycopg

    with psycopg.connect(cluster_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    return database_url(name)


def database_drop(name: str) -> None:
    import psycopg

    with psycopg.connect(cluster_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def django_disconnect() -> None:
    """Closes this process's connections, pooled ones too: a database in use can be neither copied nor
    dropped without ending its sessions."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close()
        if conn.vendor == "postgresql" and conn.settings_dict["OPTIONS"].get("pool"):
            conn.close_pool()


def bench_database_name() -> str:
    """One name per bench process, so that benches and runs sharing a cluster keep apart."""
    stem = re.sub(r"[^a-z0-9_]", "_", Path(sys.argv[0]).stem.lower()) or "bench"
    return f"{stem[:40]}_{os.getpid()}"


def django_with_temp_database() -> Path:
    """Points Django at a fresh database on the bench cluster (DATABASE_URL), sets Django up and migrates;
    the database and a scratch folder for the bench's files are removed at exit. Returns the folder."""
    scratch = Path(tempfile.mkdtemp(prefix="assay-bench-"))
    name = bench_database_name()
    os.environ["DATABASE_URL"] = database_create(name)
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    atexit.register(_database_remove, name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return scratch


def django_with_database(name: str) -> None:
    """Points Django at the existing database `name` on the bench cluster and sets Django up; refuses one
    whose migrations are behind the code (migrate it first: the bench does not change its schema)."""
    os.environ["DATABASE_URL"] = database_url(name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    import django
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    django.setup()
    executor = MigrationExecutor(connection)
    behind = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if behind:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in behind[:5])
        raise SystemExit(f"database {name} lacks {len(behind)} migrations ({names}...): migrate it first")


def _database_remove(name: str) -> None:
    django_disconnect()
    database_drop(name)


def raw_copy(columns: int, rows: Iterable[Sequence[object]]) -> float:
    """Seconds to load `rows` (parsed as they are consumed) by psycopg's COPY into a new plain table of
    `columns` text columns in the bench database (DATABASE_URL), in one committed transaction: the plainest
    fast load into the same database, which benches set Django's imports against. The table is dropped
    afterwards, outside the time."""
    import psycopg

    start = time.perf_counter()
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        conn.execute(f"CREATE TABLE bench_raw_rows ({', '.join(f'c{i} text' for i in range(columns))})")
        with conn.cursor().copy("COPY bench_raw_rows FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
    seconds = time.perf_counter() - start
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("DROP TABLE bench_raw_rows")
    return seconds


def best_ms(call: Callable[[], object], best_of: int) -> float:
    """The best of `best_of` calls, after one that warms the caches, in ms."""
    times = []
    for _ in range(best_of + 1):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return min(times[1:])
