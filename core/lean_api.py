"""Per-request savings for the API views that answer most requests (the assessor endpoints).

Each piece keeps DRF's answer and cuts only the machinery around it, which for a JSON request of a few
fields cost more server CPU than the statement that does the work:

- `JsonNegotiation`: the one renderer such a view has is used without parsing the Accept header
  (parsers are still chosen by Content-Type, so a body DRF cannot read is still a 415).
- `LeanSerializer`: a serializer's fields are copied shallowly per instance instead of deep-copied
  (DRF rebuilds each field from its constructor arguments for every request); for flat input of plain
  fields nothing of a field is changed while validating, so nothing is shared that could leak.
- `SessionUserAuthentication`: DRF's session authentication whose user, when Django's model backend
  signed the session in, is read by one prepared statement (like core/token_auth.py) instead of the
  ORM query built and compiled per request. It accepts only what Django would accept (the session's
  hash matches the user's); anything else is left to Django's own `get_user`.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.db import connection
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare
from django.utils.functional import empty
from drf_spectacular.authentication import SessionScheme
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotAuthenticated
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from core.remembered import SEEN, Remembered, RememberRefused

_MODEL_BACKEND = f"{ModelBackend.__module__}.{ModelBackend.__qualname__}"


class JsonNegotiation(DefaultContentNegotiation):
    """The view's first renderer whatever the client accepts: its views answer JSON only."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class LeanSerializer(serializers.Serializer):
    """For flat input of plain fields only (no nested serializers: those keep state per instance)."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {name: copy.copy(field) for name, field in self._declared_fields.items()}


@functools.cache
def _user_by_pk() -> tuple[str, list[str]]:
    user_model = get_user_model()
    quote = connection.ops.quote_name
    fields = list(user_model._meta.concrete_fields)
    columns = ", ".join(quote(f.column) for f in fields)
    sql = f"SELECT {columns} FROM {quote(user_model._meta.db_table)} WHERE {quote(user_model._meta.pk.column)} = %s"
    return sql, [f.attname for f in fields]


def _session_claims(request: HttpRequest) -> tuple[int, str] | None:
    """The user pk and hash of a session Django's model backend signed in (None: leave it to Django)."""
    session = request.session
    user_id = session.get(SESSION_KEY)
    session_hash = session.get(HASH_SESSION_KEY)
    backend = session.get(BACKEND_SESSION_KEY)
    if user_id is None or not session_hash or backend != _MODEL_BACKEND:
        return None
    if backend not in settings.AUTHENTICATION_BACKENDS:
        return None
    return get_user_model()._meta.pk.to_python(user_id), session_hash


def _user_row(user_pk: int) -> tuple | None:
    sql, _names = _user_by_pk()
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_pk])
        return cursor.fetchone()


def _accepted(row: tuple | None, session_hash: str) -> User | None:
    """The row's user if Django would accept the session's hash for them."""
    if row is None:
        return None
    user: User = get_user_model().from_db(connection.alias, _user_by_pk()[1], row)
    # ModelBackend.get_user refuses inactive users; a hash that does not match the current password may
    # still match under SECRET_KEY_FALLBACKS, which Django checks (and rotates) itself.
    if not user.is_active or not constant_time_compare(session_hash, user.get_session_auth_hash()):
        return None
    return user


def _session_user(request: HttpRequest) -> User | None:
    """The signed-in user of a session Django's model backend signed in, if Django would accept it."""
    claims = _session_claims(request)
    return None if claims is None else _accepted(_user_row(claims[0]), claims[1])


class SessionUserAuthentication(SessionAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        django_request = request._request
        lazy = getattr(django_request, "user", None)
        if getattr(lazy, "_wrapped", None) is empty and hasattr(django_request, "session"):
            user = self.session_user(django_request)
            if user is not None:
                django_request.user = user  # what AuthenticationMiddleware's lazy user would have become
        return super().authenticate(request)

    def session_user(self, request: HttpRequest) -> User | None:
        return _session_user(request)


class RecheckedSessionAuthentication(SessionUserAuthentication):
    """SessionUserAuthentication whose user's row, read in the last minute, comes from memory: for views
    that hand `remembered` to a statement that checks it (core.remembered), and call its `recheck` before
    they refuse a request. The session itself is read on every request, so a signed-out one is refused."""

    remembered: Remembered | None = None

    def session_user(self, request: HttpRequest) -> User | None:
        claims = _session_claims(request)
        if claims is None:
            return None
        user_pk, session_hash = claims
        row = SEEN.get(f"user:{user_pk}")
        user = _accepted(row, session_hash) if row is not None else None
        if user is not None:
            self.remembered = Remembered(
                user_pk=user_pk,
                password=user.password,
                recheck=lambda: _session_recheck(user_pk, session_hash),
            )
            return user
        # Not remembered, or remembered before a change this session may have followed (a new password
        # signs in anew): read the row.
        row = _user_row(user_pk)
        user = _accepted(row, session_hash)
        if user is not None:
            assert row is not None
            SEEN.set(f"user:{user_pk}", row)
        return user


def _session_recheck(user_pk: int, session_hash: str) -> None:
    row = _user_row(user_pk)
    if _accepted(row, session_hash) is None:
        SEEN.delete(f"user:{user_pk}")
        raise RememberRefused(str(NotAuthenticated.default_detail), token=False)
    assert row is not None
    SEEN.set(f"user:{user_pk}", row)


class SessionUserScheme(SessionScheme):
    """The schema names this authentication as what it is to a client: Django's session cookie (under a
    name of its own, since drf-spectacular keeps one class per security scheme name)."""

    target_class = "core.lean_api.SessionUserAuthentication"
    name = "sessionCookieAuth"
