"""Users remembered between requests by the views whose one statement checks them again.

Authentication reads the user's row on every request: for the assessor endpoints (one or two requests
per judgment) that read is a round trip of its own beside the statement that does the work. So the two
authentications those views use (core.token_auth.RecheckedTokenAuthentication for scripts,
core.lean_api.RecheckedSessionAuthentication for the assessor page) take the row of a user they read in
the last minute from this process's memory, and hand the view a `Remembered`: what the work statement
must find still true, in the same round trip, before it reads or writes anything (`remembered_sql`):

- a script's key still names the user, who is active;
- a session's user is active and their password hash is the one remembered (Django voids a user's
  sessions when the password changes; the session's own hash was checked against the remembered row).

When the statement finds nothing, `Remembered.recheck` reads the row again and tells a credential no
longer good (RememberRefused: 401 as without the memory) from work that is not the user's. A key revoked,
a user deactivated or a password changed is therefore refused from the next request on, as without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.cache.backends.locmem import LocMemCache
from django.db import connection
from rest_framework.authtoken.models import Token


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


# The rows, by "token:<key>" or "user:<pk>": Django's in-memory cache, one store per process shared by its
# threads, each row kept a minute; past 10,000 rows the least recently used third is dropped.
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
