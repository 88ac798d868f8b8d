"""Liveness and readiness probes for a process manager or a load balancer.

/healthz says the process answers (nothing else is touched, so a database outage does not get every
worker restarted); /readyz says it can do its work: the database answers, and the Celery broker when one
is configured.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

BROKER_TIMEOUT_S = 2.0


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


def _broker() -> str:
    if not settings.CELERY_BROKER_URL:
        return "not configured (judge jobs run in the web process)"
    from assay.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_S)
    except Exception as exc:  # any failure means not ready; the probe says which
        return f"error: {type(exc).__name__}: {str(exc).strip()[:200]}"
    return "ok"


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    checks = {"database": _database(), "broker": _broker()}
    ready = not any(value.startswith("error") for value in checks.values())
    body: dict[str, Any] = {"status": "ok" if ready else "unavailable", "checks": checks}
    body["ms"] = round(1000 * (time.monotonic() - started), 1)
    response = JsonResponse(body, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = "5"
    return response
