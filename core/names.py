"""Rules for the names people and files give things, and the answer to a name that is not there.

These rules are app-agnostic; the services that create a collection or a judge apply them (with the rules
that need their models, such as whose labels a judge holds), so a command, a page, a job and the API
refuse the same names with the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db.models import Model, QuerySet

# An assessor's own labels are held by the judge "assessor:<username>", created on the assessor's first
# label; a file or machine writing as a new judge of that shape would take the name from the account.
ASSESSOR_PREFIX = "assessor:"


@dataclass(frozen=True)
class Reserved:
    """A judge name (or the names starting with a prefix) kept for the judges an app makes itself
    (`whose`): only a judge of `kind` may be created with it, and none when `kind` is empty (the
    assessor's judge is made with its account, never from a name)."""

    whose: str
    kind: str = ""


# Filled in by the apps that make such judges, from their AppConfig.ready: crowd's worker judges (by
# prefix) and its campaigns' aggregates (crowd-majority and the like, by name).
RESERVED_JUDGE_PREFIXES: dict[str, Reserved] = {ASSESSOR_PREFIX: Reserved(whose="assessors")}
RESERVED_JUDGE_NAMES: dict[str, Reserved] = {}


def judge_prefix_reserve(*, prefix: str, whose: str, kind: str) -> None:
    RESERVED_JUDGE_PREFIXES[prefix] = Reserved(whose=whose, kind=kind)


def judge_name_reserve(*, name: str, whose: str, kind: str) -> None:
    RESERVED_JUDGE_NAMES[name] = Reserved(whose=whose, kind=kind)


# What a spreadsheet reads as the start of a formula (core/csv_safe.py; tab and carriage return are
# control characters, which no name may hold). Downloads write such a cell as text, but a judge name also
# travels where Assay does not write it: pasted, typed into a formula bar, in another tool's export.
FORMULA_STARTS = ("=", "+", "-", "@")


# How many valid names a message lists: enough to spot a typo, few enough to read.
NAMES_SHOWN = 10


def assessor_judge_name(username: str) -> str:
    return f"{ASSESSOR_PREFIX}{username}"


def judge_name_problem(name: str, *, kind: str) -> str | None:
    """Why a new judge of `kind` may not be called `name` (None when it may): the name starts like a
    spreadsheet formula, or it (or its prefix) is kept for judges an app makes itself."""
    if name.startswith(FORMULA_STARTS):
        return (
            f"judge name {name!r} starts with {name[0]!r}, which a spreadsheet reads as a formula: "
            "start it with a letter or a digit"
        )
    reserved = RESERVED_JUDGE_NAMES.get(name)
    if reserved is not None and (not reserved.kind or reserved.kind != kind):
        return f"judge name {name!r} is kept for {reserved.whose}"
    for prefix, reserved in RESERVED_JUDGE_PREFIXES.items():
        if name.startswith(prefix) and (not reserved.kind or reserved.kind != kind):
            return f"judge names starting with {prefix!r} are kept for {reserved.whose}; {name!r} is not one"
    return None


def collection_name_problem(name: str) -> str | None:
    """Why `name` cannot name a new collection (None when it can): pages and the API address
    collections by name in URLs, so it must be a slug."""
    try:
        validate_slug(name)
    except ValidationError:
        return (
            f"collection name {name!r} is not a slug: use letters, digits, '-' and '_' only "
            "(e.g. 'ikat-2024')"
        )
    return None


M = TypeVar("M", bound=Model)


def named(queryset: QuerySet[M], name: str, *, field: str = "name") -> QuerySet[M]:
    """The rows of `queryset` called `name`, for a name a page reads from its address: one with a NUL
    character matches nothing (PostgreSQL's text cannot hold NUL, so no row has it) instead of failing
    in the database."""
    if "\x00" in name:
        return queryset.none()
    return queryset.filter(**{field: name})


def known_names(queryset: QuerySet[Any], *, kind: str, field: str = "name") -> str:
    """ "known <kind>s: a, b, ... (N in all)", or "no <kind>s yet": what a message about a bad name adds,
    for commands and jobs alike."""
    known = queryset.order_by(field).values_list(field, flat=True)
    names = [str(name) for name in known[:NAMES_SHOWN]]
    if not names:
        return f"no {kind}s yet"
    total = known.count() if len(names) == NAMES_SHOWN else len(names)
    more = f", ... ({total} in all)" if total > len(names) else ""
    return f"known {kind}s: {', '.join(names)}{more}"
