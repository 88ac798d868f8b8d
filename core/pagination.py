"""The API's pagination: DRF's limit and offset, with a largest page.

DRF's LimitOffsetPagination takes any `limit` a client sends and slices the query with it; a limit past
the database's integers (`limit=10**30`) failed in the database, a 500. A limit over MAX_LIMIT now gives a
page of MAX_LIMIT rows, with the `next` link to the rest, as DRF does for its own `max_limit`. A large
offset needs nothing: past the last row DRF answers an empty page without asking the database.
"""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000


class CappedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT
    limit_query_description = f"Number of results to return per page (at most {MAX_LIMIT})."
