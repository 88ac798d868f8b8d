"""Pagination: DRF's limit and offset for the API, with a largest page; and the pages' own pager.

DRF's LimitOffsetPagination takes any `limit` a client sends and slices the query with it; a limit past
the database's integers (`limit=10**30`) failed in the database, a 500. A limit over MAX_LIMIT now gives a
page of MAX_LIMIT rows, with the `next` link to the rest, as DRF does for its own `max_limit`. A large
offset needs nothing: past the last row DRF answers an empty page without asking the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000


class CappedLimitOffsetPagination(LimitOffsetPagination):
    """DRF's limit and offset with a largest page. A list whose rows are counted elsewhere (a count kept
    beside the rows) gives that count from its view's `kept_count()` (None: count the rows), so that its
    `count` costs the same whatever the rows."""

    max_limit = MAX_LIMIT
    limit_query_description = f"Number of results to return per page (at most {MAX_LIMIT})."

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> list[Any] | None:
        self.view = view
        return super().paginate_queryset(queryset, request, view)

    def get_count(self, queryset: Any) -> int:
        kept = getattr(getattr(self, "view", None), "kept_count", None)
        counted = kept() if kept is not None else None
        return super().get_count(queryset) if counted is None else counted


@dataclass
class Pager:
    """One page of a table of a page, and the addresses of its neighbours ('' at either end). Each table
    has its own page parameter; the links keep the others'. templates/_pager.html shows it."""

    page: Page[Any]
    first: str = ""
    previous: str = ""
    next: str = ""
    last: str = ""


def page_of(
    request: HttpRequest,
    rows: Sequence[Any] | QuerySet[Any, Any],
    *,
    param: str,
    anchor: str,
    per_page: int,
) -> Pager:
    """The page of `rows` that `param` of the request names (the last one past the end, the first on
    anything else), so that a page lists a table of any length at the cost of one page of it."""
    page = Paginator(rows, per_page).get_page(request.GET.get(param))

    def url(number: int) -> str:
        query = request.GET.copy()
        query[param] = str(number)
        return f"?{query.urlencode()}#{anchor}"

    pager = Pager(page)
    if page.has_previous():
        pager.first, pager.previous = url(1), url(page.previous_page_number())
    if page.has_next():
        pager.next, pager.last = url(page.next_page_number()), url(page.paginator.num_pages)
    return pager


def positions_of(pager: Pager) -> range:
    """The positions (from 0) of the rows on a pager's page, for rows counted and read elsewhere (a list
    in a stored report's JSON), paged as `page_of(request, range(total), ...)`."""
    positions = pager.page.object_list
    if not isinstance(positions, range):
        raise TypeError(f"a pager of range(total) has positions, not {type(positions).__name__}")
    return positions
