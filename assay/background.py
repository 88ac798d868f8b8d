"""Work a page hands off when no Celery broker is configured: a daemon thread of the served process.

The judge jobs and the console's uploads both run so; each thread closes its own database connections
when it ends (they are not the request threads'), and an exception is logged, never left to end the
process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import close_old_connections, connections

log = logging.getLogger(__name__)

_running: list[threading.Thread] = []


def thread_start(*, name: str, target: Callable[[], object]) -> threading.Thread:
    """Run `target` in a daemon thread named `name`, and return the started thread."""

    def run() -> None:
        close_old_connections()
        try:
            target()
        except BaseException:  # the job's row says what happened; the thread must not take the process down
            log.exception("background work %s stopped", name)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name=name, daemon=True)
    _running[:] = [t for t in _running if t.is_alive()]
    _running.append(thread)
    thread.start()
    return thread


def threads_join(timeout: float | None = None) -> None:
    """Wait for the work this process runs in threads (tests; a shutdown that lets it finish)."""
    for thread in list(_running):
        thread.join(timeout)
