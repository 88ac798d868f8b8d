"""The login page, with a limit on failed attempts: guessing passwords costs 429s, not an endless 200 loop.

Failures are counted in the cache per user name and per client address over LOGIN_FAILURE_WINDOW
seconds; a success does not reset them (a guesser who also knows one password learns nothing). Behind a
proxy the address is the proxy's, so the per-name limit is the one that holds.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from annotation.models import Assignment, SupportAssignment
from annotation.permissions import is_organiser
from crowd.models import CrowdWorker


def _keys(request: HttpRequest) -> list[tuple[str, int]]:
    name = request.POST.get("username", "").strip().lower()
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]
    address = request.META.get("REMOTE_ADDR", "")
    return [
        (f"login-failures:name:{digest}", settings.LOGIN_FAILURE_LIMIT),
        (f"login-failures:addr:{address}", settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS),
    ]


def landing_url(user: Any) -> str:
    """Where a login without `next` lands: organisers on the home page with every collection; a crowd
    worker's account on the crowd page; an assessor on their own work (relevance first, or support when
    that is all they have), so that a login never waits on pages that are not theirs."""
    if is_organiser(user):
        return reverse("home")
    if CrowdWorker.objects.filter(user=user).exists():
        return reverse("crowd:home")
    only_support = (
        not Assignment.objects.filter(assessors=user).exists()
        and SupportAssignment.objects.filter(user=user).exists()
    )
    return reverse("support-assignments" if only_support else "relevance-queue")


class ThrottledLoginView(LoginView):
    def get_default_redirect_url(self) -> str:
        return landing_url(self.request.user)

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        keys = _keys(request)
        counts = cache.get_many([key for key, _ in keys])
        if any(counts.get(key, 0) >= limit for key, limit in keys):
            throttled = TemplateResponse(
                request,
                "registration/login_throttled.html",
                {"window_minutes": max(1, settings.LOGIN_FAILURE_WINDOW // 60)},
                status=429,
            )
            throttled["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW)
            return throttled
        response = super().post(request, *args, **kwargs)
        if response.status_code == 200:  # the form came back: a wrong name or password
            for key, _limit in keys:
                cache.add(key, 0, timeout=settings.LOGIN_FAILURE_WINDOW)
                try:
                    cache.incr(key)
                except ValueError:  # expired between add and incr
                    cache.set(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW)
        return response
