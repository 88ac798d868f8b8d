"""Liveness and readiness probes for a process manager or a load balancer.

/healthz says the process answers (nothing else is touched, so a database outage does not get every
worker restarted); /readyz says it can do its work: the database answers, and so does the queue of
background tasks kept in it.
"""

from __future__ import annotations

import time
from typing import Any

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django_tasks_db.models import DBTaskResult


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any failure means not ready; the probe says which
        return f"error: {type(exc).__name__}: {str(exc).strip()[:200]}"
    return "ok"


def _task_queue() -> str:
    """The queue of background tasks answers (a table of the same database: not migrated, it fails)."""
    try:
        DBTaskResult.objects.filter(pk__isnull=True).exists()
    except Exception as exc:  # any failure means not ready; the probe says which
        return f"error: {type(exc).__name__}: {str(exc).strip()[:200]}"
    return "ok"


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    checks = {"database": _database(), "tasks": _task_queue()}
    ready = not any(value.startswith("error") for value in checks.values())
    body: dict[str, Any] = {"status": "ok" if ready else "unavailable", "checks": checks}
    body["ms"] = round(1000 * (time.monotonic() - started), 1)
    response = JsonResponse(body, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = "5"
    return response
