"""DRF's token authentication, its user read by one prepared statement instead of an ORM query; and, for
views whose work statement checks the token itself, its user taken from memory.

A script sends its token on every request, and for the assessor endpoints (one or two requests per
judgment) building and compiling DRF's `Token.objects.select_related("user").get(key=...)` cost more
server CPU than the grade itself. The statement reads the same row; the answers are DRF's: 401 "Invalid
token." for an unknown key, "User inactive or deleted." for an inactive user.

`RecheckedTokenAuthentication` goes one step further for the views whose one statement does their work
(annotation/relevance/grade_sql.py): the user of a key this process has read in the last minute is taken
from memory, and the statement checks in the same round trip that the key still names that user and the
user is active, writing nothing otherwise. Then `token_recheck` tells a revoked key (401) from work that
is not the user's (404). That saves a round trip on each of a script's requests, and a key revoked or a
user deactivated is refused from the next request on, as without the memory.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token


@functools.cache
def _statement() -> tuple[str, list[str]]:
    user_model = get_user_model()
    quote = connection.ops.quote_name
    fields = [f for f in user_model._meta.concrete_fields]
    columns = ", ".join(f"u.{quote(f.column)}" for f in fields)
    sql = (
        f"SELECT {columns} FROM {quote(Token._meta.db_table)} t "
        f"JOIN {quote(user_model._meta.db_table)} u ON u.{quote(user_model._meta.pk.column)} = t.user_id "
        "WHERE t.key = %s"
    )
    return sql, [f.attname for f in fields]


def _user_row(key: str) -> tuple | None:
    sql, _names = _statement()
    with connection.cursor() as cursor:
        cursor.execute(sql, [key])
        return cursor.fetchone()


def _refusal(row: tuple | None) -> str | None:
    """DRF's reason to refuse a key whose user's row this is (None: the key is good)."""
    if row is None:
        return str(_("Invalid token."))
    user = get_user_model().from_db(connection.alias, _statement()[1], row)
    return None if user.is_active else str(_("User inactive or deleted."))


class FastTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[AbstractBaseUser, Token]:
        return self._authenticated(key, _user_row(key))

    def _authenticated(self, key: str, row: tuple | None) -> tuple[AbstractBaseUser, Token]:
        refusal = _refusal(row)
        if refusal is not None:
            raise exceptions.AuthenticationFailed(refusal)
        assert row is not None
        user = get_user_model().from_db(connection.alias, _statement()[1], row)
        token = Token(key=key, user=user)
        token._state.adding = False
        return user, token


class TokenRefused(Exception):
    """The key a view's statement was given no longer names an active user: DRF's 401, with its words."""


class _Seen:
    """Users' rows by the keys this process read them for, the last minute's, at most `size` of them."""

    TTL = 60.0

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.rows: OrderedDict[str, tuple[tuple, float]] = OrderedDict()

    def get(self, key: str) -> tuple | None:
        with self.lock:
            found = self.rows.get(key)
            if found is None or found[1] < time.monotonic():
                return None
            self.rows.move_to_end(key)
            return found[0]

    def keep(self, key: str, row: tuple) -> None:
        with self.lock:
            self.rows[key] = (row, time.monotonic() + self.TTL)
            self.rows.move_to_end(key)
            while len(self.rows) > self.size:
                self.rows.popitem(last=False)

    def forget(self, key: str) -> None:
        with self.lock:
            self.rows.pop(key, None)


_SEEN = _Seen()


class RecheckedTokenAuthentication(FastTokenAuthentication):
    """Only for views that give the key (`request.auth.key`) to a statement that checks it, and call
    `token_recheck` before any work outside such a statement and when they refuse a request."""

    def authenticate_credentials(self, key: str) -> tuple[AbstractBaseUser, Token]:
        row = _SEEN.get(key)
        if row is None:
            row = _user_row(key)
            authenticated = self._authenticated(key, row)
            assert row is not None
            _SEEN.keep(key, row)
            return authenticated
        return self._authenticated(key, row)


def token_recheck(key: str) -> None:
    """Read the key's user again: raises TokenRefused if the key is unknown or its user inactive now."""
    row = _user_row(key)
    refusal = _refusal(row)
    if refusal is not None:
        _SEEN.forget(key)
        raise TokenRefused(refusal)
    assert row is not None
    _SEEN.keep(key, row)


def token_check_sql(*, key: str, user: str) -> str:
    """A SQL condition: the key (a placeholder or expression) names the user (one too), who is active."""
    user_model = get_user_model()
    quote = connection.ops.quote_name
    active = quote(user_model._meta.get_field("is_active").column)
    return (
        f"EXISTS (SELECT 1 FROM {quote(Token._meta.db_table)} tk "
        f"JOIN {quote(user_model._meta.db_table)} tu ON tu.{quote(user_model._meta.pk.column)} = tk.user_id "
        f"WHERE tk.key = {key} AND tk.user_id = {user} AND tu.{active})"
    )
