"""Writes of the organiser's console that no other feature owns: collections, accounts, API tokens,
support work for many topics at once. Pools, relevance assignments and imports use their own services."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from axes.handlers.proxy import AxesProxyHandler
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from rest_framework.authtoken.models import Token

from annotation.judge_access import assessor_judge_refusal
from annotation.models import Collection, Judge, Topic, TopicWork
from annotation.support.services import support_assignment_set
from core.names import collection_name_problem


class ConsoleError(Exception):
    """The request cannot be carried out as asked; the message says why."""


@transaction.atomic
def collection_create(*, name: str, description: str = "") -> Collection:
    if Collection.objects.filter(name=name).exists():
        raise ConsoleError(f"a collection named {name!r} already exists")
    problem = collection_name_problem(name)
    if problem:
        raise ConsoleError(problem)
    return Collection.objects.create(name=name, description=description)


@transaction.atomic
def person_create(
    *, username: str, email: str = "", organiser: bool = False, password: str | None = None
) -> User:
    """An assessor or organiser account. Without a password it is an invitation: the account cannot log
    in until its owner sets a password through the link `invitation_path` gives."""
    users = get_user_model()
    if users.objects.filter(username=username).exists():
        raise ConsoleError(f"an account named {username!r} already exists")
    taken = assessor_judge_refusal(username=username)
    if taken:
        raise ConsoleError(taken)
    user = users(username=username, email=email, is_staff=organiser)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    return user


def invitation_path(*, user: User) -> tuple[str, str]:
    """The (uidb64, token) of the one-time set-password link; it stops working once a password is set."""
    return urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)


@transaction.atomic
def invitation_renew(*, user: User) -> tuple[str, str]:
    """A new set-password link for an account that has no password yet, also one whose invitation was
    revoked. The link's token is made from the password hash: a new unusable password makes every earlier
    link stop working, so only the newest one can be used."""
    user = get_user_model().objects.select_for_update().get(pk=user.pk)
    if user.has_usable_password():
        raise ConsoleError(
            f"{user.get_username()} has chosen a password already: there is no invitation to renew"
        )
    user.set_unusable_password()
    user.is_active = True
    user.save(update_fields=["password", "is_active"])
    return invitation_path(user=user)


@transaction.atomic
def invitation_revoke(*, user: User) -> None:
    """Withdraw a pending invitation: its links stop working (a new unusable password) and the account is
    inactive, so no link activates it until an organiser renews the invitation."""
    user = get_user_model().objects.select_for_update().get(pk=user.pk)
    if user.has_usable_password():
        raise ConsoleError(
            f"{user.get_username()} has chosen a password already: there is no invitation to revoke"
        )
    if not user.is_active:
        raise ConsoleError(f"{user.get_username()}'s invitation is revoked already")
    user.set_unusable_password()
    user.is_active = False
    user.save(update_fields=["password", "is_active"])


def api_token_get(*, user: User) -> Token:
    token, _ = Token.objects.get_or_create(user=user)
    return token


@transaction.atomic
def api_token_reset(*, user: User) -> Token:
    """A new API token for the user; scripts holding the old one are refused from now on."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


@transaction.atomic
def login_unlock(*, kind: Literal["name", "address"], value: str) -> int:
    """Lift a log-in lock before its window ends, for someone an organiser vouches for: forget the recent
    failed log-ins of a user name (from every address) or of an address (under every name). Returns how
    many records went."""
    if not value:
        # axes reads an empty name or address as no filter at all, which would forget every failure.
        raise ConsoleError("say which user name or address to unlock")
    if kind == "name":
        return int(AxesProxyHandler.reset_attempts(username=value))
    return int(AxesProxyHandler.reset_attempts(ip_address=value))


@transaction.atomic
def support_work_assign(
    *,
    topics: Iterable[Topic],
    users: Iterable[User],
    condition: str,
    machine_judge: Judge | None = None,
    max_citations: int | None = None,
    switch: bool = False,
) -> list[TopicWork]:
    """Assign every (topic, assessor) pair in one condition, as `assign_support` does per assessor; all
    or nothing, so a conflict on one topic assigns none. An assessor's topic in the other condition is
    switched only when `switch` confirms it."""
    assigned: list[TopicWork] = []
    topics, users = list(topics), list(users)
    if not topics:
        raise ConsoleError("the collection has no topics to assign")
    for user in users:
        for topic in topics:
            assigned.append(
                support_assignment_set(
                    topic=topic,
                    user=user,
                    condition=condition,
                    machine_judge=machine_judge,
                    max_citations=max_citations,
                    switch=switch,
                )
            )
    return assigned


def options_of(data: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """The chosen options of an upload form, as the JSON an ImportJob keeps."""
    return {name: data[name] for name in names if data.get(name) not in (None, "", [])}
