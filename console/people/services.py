"""Accounts of the people page: an assessor or organiser made, invited, their invitation renewed or
revoked, a log-in lock lifted."""

from __future__ import annotations

from typing import Literal

from axes.handlers.proxy import AxesProxyHandler
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotation.judge_access import assessor_judge_refusal
from console.services import ConsoleError


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
