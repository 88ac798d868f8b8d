"""DRF's token authentication, its user read by one prepared statement instead of an ORM query; and, for
views whose work statement checks the token itself, its user taken from memory.

A script sends its token on every request, and for the assessor endpoints (one or two requests per
judgment) building and compiling DRF's `Token.objects.select_related("user").get(key=...)` cost more
server CPU than the grade itself. The statement reads the same row; the answers are DRF's: 401 "Invalid
token." for an unknown key, "User inactive or deleted." for an inactive user.

`RecheckedTokenAuthentication` goes one step further for the views whose one statement does their work:
the user of a key read in the last minute comes from memory, and the statement checks the key again in
the same round trip (core.remembered).
"""

from __future__ import annotations

import functools

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from core.remembered import SEEN, Remembered, RememberRefused


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
    return None if row[_statement()[1].index("is_active")] else str(_("User inactive or deleted."))


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


class RecheckedTokenAuthentication(FastTokenAuthentication):
    """For views that hand `remembered` (set when the user came from memory) to a statement that checks it
    (core.remembered), and call its `recheck` before they refuse a request."""

    remembered: Remembered | None = None  # set when the user came from memory (one instance a request)

    def authenticate_credentials(self, key: str) -> tuple[AbstractBaseUser, Token]:
        row = SEEN.get(f"token:{key}")
        remembered = row is not None
        if row is None:
            row = _user_row(key)
        authenticated = self._authenticated(key, row)  # refuses a key its row refuses
        if remembered:
            self.remembered = Remembered(
                user_pk=authenticated[0].pk, token=key, recheck=lambda: token_recheck(key)
            )
        else:
            assert row is not None
            SEEN.set(f"token:{key}", row)
        return authenticated


def token_recheck(key: str) -> None:
    """Read the key's user again: RememberRefused if the key is unknown or its user inactive now."""
    row = _user_row(key)
    refusal = _refusal(row)
    if refusal is not None:
        SEEN.delete(f"token:{key}")
        raise RememberRefused(refusal, token=True)
    assert row is not None
    SEEN.set(f"token:{key}", row)
