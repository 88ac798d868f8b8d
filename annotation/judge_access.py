"""Whose labels a user may read: one rule for the nugget pages, the collection API and anything else.

Organisers (staff) read every judge. An assessor reads the organiser-owned judges, that is machines (LLM,
NLI) and imported files (the official qrels, a published nugget set), which only organisers create,
through commands, jobs and the admin; and their own assessor judge. Never another assessor's judge, nor a
crowd aggregate: those are people's labels, and seeing them would let one assessor copy another.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from annotation.models import Judge
from annotation.permissions import is_organiser

SHARED_KINDS = (Judge.Kind.LLM, Judge.Kind.NLI, Judge.Kind.IMPORTED)
NOT_SHARED = (
    "assessors may choose machine (LLM, NLI) and imported-file judges, and their own; "
    "other assessors' and crowd judges are for organisers"
)


def judges_readable(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Judge]:
    """The judges whose labels `user` may read (nothing for an anonymous user)."""
    if not user.is_authenticated:
        return Judge.objects.none()
    if is_organiser(user):
        return Judge.objects.all()
    return Judge.objects.filter(Q(kind__in=SHARED_KINDS) | Q(user=user))


def judge_readable(*, user: AbstractBaseUser | AnonymousUser, judge: Judge) -> bool:
    if getattr(user, "is_staff", False) and user.is_authenticated:
        return True
    return user.is_authenticated and (judge.kind in SHARED_KINDS or judge.user_id == user.pk)
