"""One limit on failed log-ins for every way in, kept by django-axes: the site and admin log-in pages, the
API's token endpoint and invitation links all authenticate through Django (or report their failures to
it), and axes counts each failure per user name and per client address in the database.

What axes leaves to the project, and this module gives it:
- the user name, normalised as Django's log-in form normalises it (NFKC), so that `ａlice` counts as
  `alice`; case is kept, because the user model's lookup keeps it (`Alice` is another account);
- the client address (core.client_address, AXES_CLIENT_IP_CALLABLE): behind a proxy every request comes
  from the proxy, so the address must be the one a trusted proxy saw, or the per-address count is everyone's;
- two limits, LOGIN_FAILURE_LIMIT per name and the larger LOGIN_FAILURE_LIMIT_PER_ADDRESS per address
  (one address may be a whole classroom behind NAT), where axes has one;
- the lockout answer (429 with Retry-After and the time the lock ends) and the list of locks for the
  People page, where an organiser can lift one early.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.signals import user_login_failed
from django.db.models import Max, Q, QuerySet, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from core.api_errors import error_body

# axes stores names in a 255-character column; no account name is that long (the user model allows 150).
_NAME_COLUMN = 255
# The People page lists at most this many locks of each kind, the newest first.
LOCKS_SHOWN = 100


# axes calls these two with the request (and credentials); the limits are the same for every request.
def window(request: HttpRequest | None = None) -> timedelta:
    """How long a failure counts (axes' AXES_COOLOFF_TIME), read from the settings at each use."""
    return timedelta(seconds=settings.LOGIN_FAILURE_WINDOW)


def name_limit(request: HttpRequest | None = None, credentials: dict[str, Any] | None = None) -> int:
    """axes' AXES_FAILURE_LIMIT: the per-name limit; the address's own limit is folded into the count
    (LoginLimitHandler.get_failures)."""
    return int(settings.LOGIN_FAILURE_LIMIT)


def login_name(request: HttpRequest | None, credentials: dict[str, Any] | None = None) -> str | None:
    """The user name a log-in tried, as the user model's lookup will see it: stripped, then NFKC (what
    Django's UsernameField does before authenticating), case kept."""
    field = _username_field()
    if credentials is not None:
        raw = credentials.get(field)
    elif request is not None:
        raw = getattr(request, "data", request.POST).get(field)
    else:
        raw = None
    if not isinstance(raw, str):
        return None
    return AbstractBaseUser.normalize_username(raw.strip())[:_NAME_COLUMN]


def _username_field() -> str:
    return str(get_user_model().USERNAME_FIELD)


def _recent() -> QuerySet[AccessAttempt]:
    # axes ships no type information: its manager's queryset is Any until named here.
    recent: QuerySet[AccessAttempt] = AccessAttempt.objects.filter(
        attempt_time__gte=timezone.now() - window()
    )
    return recent


class LoginLimitHandler(AxesDatabaseHandler):  # type: ignore[misc]  # axes ships no types: its class is Any
    """axes' database handler with a limit per name and a larger one per address."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        """The failures that count against the name limit. axes locks when this reaches it; the address's
        failures count only past the difference between the two limits, so that axes' one comparison
        locks when the name reaches LOGIN_FAILURE_LIMIT or the address LOGIN_FAILURE_LIMIT_PER_ADDRESS."""
        name = get_client_username(request, credentials)
        address = request.axes_ip_address  # type: ignore[attr-defined]  # set by axes before every call
        name_q, address_q = Q(username=name), Q(ip_address=address)
        counts = _recent().aggregate(
            by_name=Sum("failures_since_start", filter=name_q),
            by_address=Sum("failures_since_start", filter=address_q),
        )
        by_name, by_address = counts["by_name"] or 0, counts["by_address"] or 0
        allowance = settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS - settings.LOGIN_FAILURE_LIMIT
        return int(max(by_name, by_address - allowance))


def _lock_end(attempts: QuerySet[AccessAttempt], limit: int) -> datetime | None:
    """When a count of recent failures drops under `limit`: failures leave the count `window` after their
    row's last one, newest rows last, so the lock ends when the newest rows alone no longer reach it."""
    total = 0
    for last, failures in attempts.order_by("-attempt_time").values_list(
        "attempt_time", "failures_since_start"
    ):
        total += failures
        if total >= limit:
            end: datetime = last + window()
            return end
    return None


def locked_until(request: HttpRequest, credentials: dict[str, Any] | None = None) -> datetime:
    recent = _recent()
    ends = [
        _lock_end(recent.filter(username=login_name(request, credentials)), settings.LOGIN_FAILURE_LIMIT),
        _lock_end(
            recent.filter(ip_address=getattr(request, "axes_ip_address", None)),
            settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS,
        ),
    ]
    return max((end for end in ends if end is not None), default=timezone.now() + window())


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """axes' AXES_LOCKOUT_CALLABLE: 429 with Retry-After, a page for people and JSON for API clients."""
    until = locked_until(request, credentials)
    seconds = max(1, math.ceil((until - timezone.now()).total_seconds()))
    minutes = math.ceil(seconds / 60)
    if request.path.startswith("/api/"):
        detail = (
            f"Too many failed log-ins for this name or address: try again in {minutes} minute(s), "
            "or ask an organiser to unlock it."
        )
        # The API's one error shape (core/api_errors.py), with the wait in the body too.
        body = error_body(detail=detail, code="locked_out") | {"retry_after": seconds}
        response: HttpResponse = JsonResponse(body, status=429)
    else:
        response = render(
            request, "registration/login_locked.html", {"until": until, "minutes": minutes}, status=429
        )
    response["Retry-After"] = str(seconds)
    return response


def login_failure_record(*, request: HttpRequest, username: str) -> None:
    """Count a failed way in that does not go through authenticate() (an invitation link that is not
    valid): Django's own failure signal, which axes listens to."""
    user_login_failed.send(sender=__name__, credentials={_username_field(): username}, request=request)


@dataclass(frozen=True)
class LoginLock:
    kind: Literal["name", "address"]
    value: str
    failures: int
    until: datetime  # at the latest: the last failure plus the window


def login_locks() -> list[LoginLock]:
    """The names and addresses locked now, newest first (at most LOCKS_SHOWN of each): one grouped query
    per kind."""
    locks: list[LoginLock] = []
    recent = _recent()
    for kind, field, limit in (
        ("name", "username", settings.LOGIN_FAILURE_LIMIT),
        ("address", "ip_address", settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS),
    ):
        rows = (
            recent.exclude(**{f"{field}__isnull": True})
            .values(field)
            .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
            .filter(failures__gte=limit)
            .order_by("-last")[:LOCKS_SHOWN]
        )
        locks.extend(LoginLock(kind, row[field], row["failures"], row["last"] + window()) for row in rows)  # type: ignore[arg-type]
    return locks


def is_login_allowed(request: HttpRequest, *, username: str) -> bool:
    """For a way in that checks its own secret (an invitation link): axes' verdict on the name and address."""
    return bool(AxesProxyHandler.is_allowed(request, {_username_field(): username}))
