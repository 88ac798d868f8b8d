"""What every app's management commands share: looking up what a name names (their progress display is
core.progress.CommandProgress)."""

from __future__ import annotations

from typing import TypeVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ObjectDoesNotExist
from django.core.management.base import CommandError
from django.db import models

from core.names import known_names

M = TypeVar("M", bound=models.Model)


def named(queryset: models.QuerySet[M], value: str, *, kind: str, field: str = "name", where: str = "") -> M:
    """The object of `queryset` whose `field` is `value`, or a CommandError naming the value and the valid ones.

    Every command that takes a name (collection, judge, run, pool, assignment, campaign, user) looks it up
    through here, so a typo is answered with the names the user could have meant rather than Django's
    "matching query does not exist". `where` says where it was looked for (" in collection demo").
    """
    try:
        return queryset.get(**{field: value})
    except ObjectDoesNotExist:
        raise CommandError(
            f"no {kind} named {value!r}{where}; {known_names(queryset, kind=kind, field=field)}"
        ) from None


def active_users() -> models.QuerySet[User]:
    return get_user_model().objects.filter(is_active=True)


def user_named(username: str) -> User:
    """An active account by username, or a CommandError listing the active usernames."""
    return named(active_users(), username, kind="user", field=get_user_model().USERNAME_FIELD)
