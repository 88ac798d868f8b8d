"""Pausing an assessor's relevance work in a collection: they finish the copy they hold, then get no new
unit (annotation.relevance.services' lease leaves them out) until an organiser resumes them."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import Collection
from annotation.relevance.quality.models import AssessorPause


@transaction.atomic
def assessor_pause(*, collection: Collection, user: User, by: User | None, reason: str = "") -> AssessorPause:
    """Pause `user` in `collection`; pausing a paused assessor keeps the first pause."""
    pause, _ = AssessorPause.objects.get_or_create(
        collection=collection, user=user, defaults={"paused_by": by, "reason": reason}
    )
    return pause


@transaction.atomic
def assessor_resume(*, collection: Collection, user: User) -> bool:
    """Resume `user` in `collection`; False when they were not paused."""
    deleted, _ = AssessorPause.objects.filter(collection=collection, user=user).delete()
    return bool(deleted)
