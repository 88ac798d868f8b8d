"""Who is an organiser, and the one check every organiser page and endpoint makes.

An organiser is an active staff account. Anonymous visitors of an organiser page are sent to the login
page; signed-in users who are not organisers get the 403 page, which carries the site's navigation so
they can go back to their own work.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.http.response import HttpResponseBase
from django.template import loader
from rest_framework.permissions import BasePermission

ORGANISERS_ONLY = "This page is for organisers."


def is_organiser(user: AbstractBaseUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated and user.is_active and getattr(user, "is_staff", False))


# A page view or a download (which may stream): the decorated view keeps its type.
View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def organiser_required(view: View) -> View:
    """Decorate a page view: anonymous users go to the login page, non-organisers get the 403 page."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not is_organiser(request.user):
            raise PermissionDenied(ORGANISERS_ONLY)
        return view(request, *args, **kwargs)

    # Lets a test find every organiser page from the URL configuration.
    wrapper.organiser_only = True  # type: ignore[attr-defined]
    return cast(View, wrapper)


class IsOrganiser(BasePermission):
    """The same check for a DRF endpoint (DRF answers 401/403 in JSON itself)."""

    message = "organisers only"

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_organiser(request.user)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The site's 403 page (Django's handler403): the reason, and the navigation of every other page."""
    reason = str(exception) if exception is not None and str(exception) else ""
    template = loader.get_template("403.html")
    return HttpResponseForbidden(template.render({"reason": reason}, request))
