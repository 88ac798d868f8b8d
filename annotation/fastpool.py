"""A few PostgreSQL connections per process for the assessor API's prepared statements (annotation.assignment).

Measured with bench/bench_assessors.py (50 assessors, gunicorn + PostgreSQL on 2 shared cores): answering the
two API statements on Django's per-thread connections through psycopg's cursor made 736-908 loops/s; on this
pool, run through libpq's own prepared-statement call, 898-1075 loops/s (the first runs alternated with those). Two
things are saved. A handful of busy server backends stay warm where one per gunicorn thread took turns on the
cores, and a statement costs one libpq call (the GIL released while it waits) instead of psycopg's cursor
machinery around it.

The statements are the same SQL either way. They take Django's connection and cursor instead whenever that
is what the caller needs:
- the caller is inside `transaction.atomic` (a pooled connection would not see its uncommitted rows);
- Django logs queries (DEBUG, or a test counting them);
- an execute wrapper is installed (`connection.execute_wrapper`, as tracing tools do);
- settings.ASSAY_FAST_PATH_CONNECTIONS is 0.

Each pooled connection is a DatabaseWrapper made from the `default` settings, so it is opened and set up
exactly as Django opens its own (options, time zone, role). The pool grows on demand up to the setting
and is per process (gunicorn forks its workers before any request opens one). A connection that broke
is dropped: its request fails, as with Django's own connections, and the next one opens a new one.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from datetime import datetime

from django.conf import settings
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg import errors as pg_errors
from psycopg import pq

_ROWS = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
_NO_SUCH_STATEMENT = b"26000"  # invalid_sql_statement_name


class _Pool:
    """Up to `size` DatabaseWrappers for one process; idle ones wait in a queue, in any thread's hands."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pid = os.getpid()
        self.idle: queue.SimpleQueue[BaseDatabaseWrapper | None] = queue.SimpleQueue()
        self.opened: list[BaseDatabaseWrapper] = []
        # Per connection, {statement name: (runs, generation)}; only the thread holding it reads it.
        self.runs: dict[BaseDatabaseWrapper, dict[str, tuple[int, int]]] = {}
        self.lock = threading.Lock()

    def take(self) -> BaseDatabaseWrapper:
        """An idle connection, a new one while there is room, or else the next one given back."""
        while True:
            try:
                wrapper = self.idle.get_nowait()
            except queue.Empty:
                with self.lock:
                    if len(self.opened) < self.size:
                        return self._open()
                wrapper = self.idle.get()
            if wrapper is not None:
                return wrapper
            # None: a connection was dropped or the pool closed, so there may be room to open one.

    def _open(self) -> BaseDatabaseWrapper:
        wrapper = connections.create_connection("default")
        wrapper.inc_thread_sharing()  # handed between the process's threads, one at a time
        wrapper.ensure_connection()
        self.opened.append(wrapper)
        self.runs[wrapper] = {}
        return wrapper

    def give_back(self, wrapper: BaseDatabaseWrapper) -> None:
        if wrapper in self.opened:  # not closed meanwhile
            self.idle.put(wrapper)

    def drop(self, wrapper: BaseDatabaseWrapper) -> None:
        with self.lock:
            if wrapper in self.opened:
                self.opened.remove(wrapper)
                del self.runs[wrapper]
        wrapper.close()
        self.idle.put(None)  # wakes a thread waiting for a connection: it may open one in its place

    def close(self) -> None:
        with self.lock:
            opened, self.opened, self.runs = self.opened, [], {}
            waiting, self.idle = self.idle, queue.SimpleQueue()
        for wrapper in opened:
            wrapper.close()
        for _ in range(self.size):
            waiting.put(None)  # threads still waiting on the old queue open new connections


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def pool() -> _Pool | None:
    """This process's pool, or None when the setting turns it off."""
    global _pool
    size = settings.ASSAY_FAST_PATH_CONNECTIONS
    if size <= 0:
        return None
    current = _pool
    if current is None or current.pid != os.getpid() or current.size != size:
        with _pool_lock:
            if _pool is None or _pool.pid != os.getpid() or _pool.size != size:
                if _pool is not None and _pool.pid == os.getpid():
                    _pool.close()  # the setting changed
                # A forked child must not use its parent's sockets; it opens its own.
                _pool = _Pool(size)
            current = _pool
    return current


def close() -> None:
    """Close this process's pooled connections (a test database cannot be dropped while they are open)."""
    if _pool is not None and _pool.pid == os.getpid():
        _pool.close()


def usable(connection: BaseDatabaseWrapper) -> bool:
    """Whether a statement for `connection`'s caller may run on the pool (see the module's docstring)."""
    return not (connection.in_atomic_block or connection.queries_logged or connection.execute_wrappers)


def _text(value: object) -> bytes | None:
    # Parameters go as text; each placeholder in the statements carries its type ($2::bigint, ...).
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat().encode()
    return str(value).encode()


def execute(
    pooled: _Pool,
    name: str,
    sql: str,
    params: Sequence[object],
    convert: Sequence[Callable[[bytes], object]],
    *,
    reprepare_every: int,
    first_run: tuple[bytes, bytes],
) -> tuple | None:
    """Run statement `name` (text `sql`, $n placeholders) prepared on a pooled connection; its first row
    converted column by column, or None.

    A connection prepares it at its first run there, between the `first_run` commands (a setting and its
    reset: the generic plan is made then), and prepares it again under a new name every
    `reprepare_every` runs, deallocating the old one.
    """
    wrapper = pooled.take()
    try:
        row = _execute_on(
            wrapper, pooled.runs[wrapper], name, sql, params, convert, reprepare_every, first_run
        )
    except Exception:
        if wrapper.connection is None or wrapper.connection.pgconn.status != pq.ConnStatus.OK:
            # The server closed it (a restart, an idle timeout). As with Django's own connections, this
            # request fails and the next one opens a new connection; a retry could apply a grade twice.
            pooled.drop(wrapper)
        else:
            pooled.give_back(wrapper)
        raise
    pooled.give_back(wrapper)
    return row


def _execute_on(wrapper, runs, name, sql, params, convert, reprepare_every, first_run) -> tuple | None:
    pgconn = wrapper.connection.pgconn
    count, generation = runs.get(name, (0, 0))  # runs since it was prepared (0: not prepared yet)
    values = [_text(value) for value in params]
    with wrapper.wrap_database_errors:
        if count >= reprepare_every:
            done = pgconn.exec_(b"DEALLOCATE " + _statement(name, generation))
            if done.error_field(pq.DiagnosticField.SQLSTATE) != _NO_SUCH_STATEMENT:  # gone already: fine
                _check(pgconn, done)
            count, generation = 0, generation + 1
            runs[name] = (count, generation)
        statement = _statement(name, generation)
        if count == 0:
            _check(pgconn, pgconn.prepare(statement, sql.encode(), None))
        # Counted before it runs: a run that fails (a bad value, a conflict) leaves it prepared all the same.
        runs[name] = (count + 1, generation)
        if count == 0:
            _check(pgconn, pgconn.exec_(first_run[0]))
            try:
                result = pgconn.exec_prepared(statement, values)
            finally:
                _check(pgconn, pgconn.exec_(first_run[1]))
        else:
            result = pgconn.exec_prepared(statement, values)
        _check(pgconn, result)
    if result.ntuples == 0:
        return None
    return tuple(
        None if (value := result.get_value(0, i)) is None else to_python(value)
        for i, to_python in enumerate(convert)
    )


def _statement(name: str, generation: int) -> bytes:
    return f"assay_{name}_{generation}".encode()


def _check(pgconn: pq.abc.PGconn, result: pq.abc.PGresult) -> None:
    if result.status not in _ROWS:
        raise pg_errors.error_from_result(result, encoding=pgconn._encoding)
