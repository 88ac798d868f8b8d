"""Reads of topic work that are the same whatever its kind: one assessor's piece, and who has any."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db.models import QuerySet

from annotation.topic_work.models import TopicWork


def topic_work_get(*, work_id: int, user: User, kinds: Iterable[str]) -> TopicWork:
    """A piece of work of one of `kinds` reached through its assessor; anyone else gets DoesNotExist."""
    return TopicWork.objects.select_related("topic__collection", "source_judge", "machine_judge").get(
        id=work_id, user=user, kind__in=list(kinds)
    )


def topic_work_of(*, user: User, kinds: Iterable[str]) -> QuerySet[TopicWork]:
    """The assessor's work of `kinds`."""
    return TopicWork.objects.filter(user=user, kind__in=list(kinds))


def topic_work_has(*, user: User, kinds: Iterable[str]) -> bool:
    """Whether the assessor has any work of `kinds` (the login lands them on its pages)."""
    return topic_work_of(user=user, kinds=kinds).exists()
