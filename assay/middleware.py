"""A database that is down or unreachable answers 503 with Retry-After, never a 500 with a traceback page.

Scripts and the assessor pages' JavaScript get JSON they can wait on and retry; people get a short page
that says to try again. Django closes a connection that failed at the end of the request (and the pool
drops it), so the next request opens a fresh one: once the server is back, requests succeed again.

The Redis behind the cache gets the same answer where its outage reaches a view. None should: the cache
misses while Redis is down and the throttles count in the process (assay/cache.py, core/throttling.py),
so this is the answer for a use of Redis that forgot to choose, rather than a 500.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from csp.middleware import CSPMiddleware
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.template.loader import render_to_string

from core.api_errors import error_body

RETRY_AFTER_S = 5
logger = logging.getLogger("assay.database")


def wants_json(request: HttpRequest) -> bool:
    """The API, the JSON endpoints of the pages (`.../api/...`, `....json`), or a client that asks for JSON
    or sends it (the pages' scripts post JSON to the nugget endpoints)."""
    path = request.path
    return (
        path.startswith("/api/")
        or "/api/" in path
        or path.endswith(".json")
        or "application/json" in request.headers.get("Accept", "")
        or request.content_type == "application/json"
    )


def database_unavailable_response(request: HttpRequest, *, service: str = "database") -> HttpResponse:
    response: HttpResponse
    if wants_json(request):
        # The API's one error shape (core/api_errors.py), with the wait in the body too.
        detail = f"The {service} is unavailable; try again shortly."
        body = error_body(detail=detail, code=f"{service}_unavailable") | {"retry_after": RETRY_AFTER_S}
        response = JsonResponse(body, status=503)
    else:
        # No request context: the site's base template reads the user, which needs the database.
        context = {"retry_after": RETRY_AFTER_S, "service": service}
        response = HttpResponse(render_to_string("db_unavailable.html", context), status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    response["Cache-Control"] = "no-store"
    return response


def _redis_unavailable(exception: Exception) -> bool:
    # redis-py's errors exist only once it is loaded, which the Redis cache does with its first client
    # (assay/cache.py); a process whose cache is in its memory never imports it, here either.
    errors = sys.modules.get("redis.exceptions")
    return errors is not None and isinstance(exception, errors.ConnectionError | errors.TimeoutError)


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        # OperationalError covers a refused or dropped connection and a pool that timed out; an
        # InterfaceError is a connection already closed under us. Errors in the data are IntegrityError
        # or DataError, and stay server errors.
        if _redis_unavailable(exception):
            logger.warning("cache unavailable on %s %s: %s", request.method, request.path, exception)
            return database_unavailable_response(request, service="cache")
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.warning("database unavailable on %s %s: %s", request.method, request.path, exception)
        return database_unavailable_response(request)


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's middleware, which builds the policies for every response, even one exempt from them.

    The assessor endpoints' JSON (one or two requests per judgment) is exempt: never rendered as a page,
    it needs no policy. Such a response is returned as it is, unless a report-only policy is configured
    and the response is not exempt from that one too; every other response gets django-csp's headers.
    """

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        exempt = getattr(response, "_csp_exempt", False) is True
        if exempt and (
            getattr(response, "_csp_exempt_ro", False) is True
            or not getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None)
        ):
            return response
        return super().process_response(request, response)
