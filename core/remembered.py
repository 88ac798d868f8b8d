"""Users remembered between requests by the views whose one statement checks them again.

Authentication reads the user's row on every request: for the assessor endpoints (one or two requests
per judgment) that read is a round trip of its own beside the statement that does the work. So the two
authentications those views use (RecheckedTokenAuthentication for scripts, RecheckedSessionAuthentication
for the assessor page: DRF's own two, which they fall back on) take the user they read in the last minute
from this process's memory, and hand the view a `Remembered`: what the work statement must find still
true, in the same round trip, before it reads or writes anything (`remembered_sql`):

- a script's key still names the user, who is active;
- a session's user is active and their password hash is the one remembered (Django voids a user's
  sessions when the password changes; the session's own hash was checked against the remembered row).

When the statement finds nothing, `Remembered.recheck` reads the row again and tells a credential no
longer good (RememberRefused: 401 as without the memory) from work that is not the user's. A key revoked,
a user deactivated or a password changed is therefore refused from the next request on, as without it.

docs/performance.md gives the figure that keeps this: judgments per second with and without the memory,
measured by bench/bench_assessors.py in one invocation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache.backends.locmem import LocMemCache
from django.db import connection
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare
from django.utils.functional import empty
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.request import Request


class RememberRefused(Exception):
    """The remembered credential is no longer good: `detail` in DRF's words, `token` for a script's."""

    def __init__(self, detail: str, *, token: bool) -> None:
        super().__init__(detail)
        self.token = token


@dataclass(frozen=True)
class Remembered:
    """A request's user as remembered, and how to check it again: a script's key, or a session's
    remembered password hash (exactly one of the two)."""

    user_pk: int
    recheck: Callable[[], None]  # reads the row again: raises RememberRefused when it no longer holds
    token: str | None = None
    password: str | None = None


# The users, by "token:<key>" or "user:<pk>": Django's in-memory cache, one store per process shared by its
# threads, each kept a minute; past 10,000 the least recently used third is dropped.
SEEN = LocMemCache("assay-remembered-users", {"TIMEOUT": 60, "OPTIONS": {"MAX_ENTRIES": 10_000}})


def remembered_sql(*, user: str, token: str, password: str) -> str:
    """A SQL condition: what a Remembered asks still holds for the user (each argument a placeholder or an
    expression; `token` and `password` NULL when not asked)."""
    user_model = get_user_model()
    quote = connection.ops.quote_name
    users, pk = quote(user_model._meta.db_table), quote(user_model._meta.pk.column)
    active = quote(user_model._meta.get_field("is_active").column)
    hashed = quote(user_model._meta.get_field("password").column)
    return (
        f"({token}::text IS NULL OR EXISTS (SELECT 1 FROM {quote(Token._meta.db_table)} tk "
        f"JOIN {users} tu ON tu.{pk} = tk.user_id WHERE tk.key = {token} AND tk.user_id = {user} "
        f"AND tu.{active})) AND ({password}::text IS NULL OR EXISTS (SELECT 1 FROM {users} pu "
        f"WHERE pu.{pk} = {user} AND pu.{hashed} = {password} AND pu.{active}))"
    )


class RecheckedTokenAuthentication(TokenAuthentication):
    """DRF's token authentication whose user, read in the last minute, comes from memory: for views that
    hand `remembered` to a statement that checks it, and call its `recheck` before they refuse a request."""

    remembered: Remembered | None = None  # set when the user came from memory (one instance a request)

    def authenticate_credentials(self, key: str) -> tuple[AbstractBaseUser, Token]:
        user = SEEN.get(f"token:{key}")
        if user is None:
            user, token = super().authenticate_credentials(key)
            SEEN.set(f"token:{key}", user)
            return user, token
        self.remembered = Remembered(user_pk=user.pk, token=key, recheck=lambda: token_recheck(key))
        token = Token(key=key, user=user)
        token._state.adding = False
        return user, token


def token_recheck(key: str) -> None:
    """Read the key's user again: RememberRefused if the key is unknown or its user inactive now."""
    try:
        user, _token = TokenAuthentication().authenticate_credentials(key)
    except exceptions.AuthenticationFailed as refused:
        SEEN.delete(f"token:{key}")
        raise RememberRefused(str(refused.detail), token=True) from refused
    SEEN.set(f"token:{key}", user)


class RecheckedSessionAuthentication(SessionAuthentication):
    """DRF's session authentication whose user, read in the last minute, comes from memory when the session
    still matches them (Django's own test: the session's hash of the password, the user active). The
    session itself is read on every request, so a signed-out one is refused."""

    remembered: Remembered | None = None

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        django_request = request._request
        lazy = getattr(django_request, "user", None)
        # Only while Django has not read the user yet (AuthenticationMiddleware's lazy user).
        if getattr(lazy, "_wrapped", None) is empty and hasattr(django_request, "session"):
            claims = _session_claims(django_request)
            user = SEEN.get(f"user:{claims[0]}") if claims is not None else None
            if claims is not None and user is not None and _session_matches(user, claims[1]):
                user_pk, session_hash = claims
                django_request.user = user
                self.remembered = Remembered(
                    user_pk=user_pk,
                    password=user.password,
                    recheck=lambda: _session_recheck(user_pk, session_hash),
                )
                return super().authenticate(request)
        authenticated = super().authenticate(request)
        if authenticated is not None:
            SEEN.set(f"user:{authenticated[0].pk}", authenticated[0])
        return authenticated


def _session_claims(request: HttpRequest) -> tuple[int, str] | None:
    """The user pk and password hash a signed-in session names (None when it names none, or was signed in by
    a backend no longer configured, which Django's get_user refuses too)."""
    user_id = request.session.get(SESSION_KEY)
    session_hash = request.session.get(HASH_SESSION_KEY)
    backend = request.session.get(BACKEND_SESSION_KEY)
    if user_id is None or not session_hash or backend not in settings.AUTHENTICATION_BACKENDS:
        return None
    return get_user_model()._meta.pk.to_python(user_id), session_hash


def _session_matches(user: AbstractBaseUser, session_hash: str) -> bool:
    # What Django's get_user requires of a session's user with the model backend. A hash made under a key
    # of SECRET_KEY_FALLBACKS does not match here: Django's own reading (below) checks and rotates it.
    return bool(user.is_active) and constant_time_compare(session_hash, user.get_session_auth_hash())


def _session_recheck(user_pk: int, session_hash: str) -> None:
    user = get_user_model()._default_manager.filter(pk=user_pk).first()
    if user is None or not _session_matches(user, session_hash):
        SEEN.delete(f"user:{user_pk}")
        raise RememberRefused(str(exceptions.NotAuthenticated.default_detail), token=False)
    SEEN.set(f"user:{user_pk}", user)
