"""Writes of the organiser's console that no other feature owns: collections, support work for many topics
at once. Pools, relevance assignments, imports (console.uploads) and accounts (console.people) use their
own services."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import Collection, Judge, Topic, TopicWork
from annotation.support.services import support_assignment_set
from core.names import collection_name_problem


class ConsoleError(Exception):
    """The request cannot be carried out as asked; the message says why."""


@transaction.atomic
def collection_create(*, name: str, description: str = "") -> Collection:
    if Collection.objects.filter(name=name).exists():
        raise ConsoleError(f"a collection named {name!r} already exists")
    problem = collection_name_problem(name)
    if problem:
        raise ConsoleError(problem)
    return Collection.objects.create(name=name, description=description)


@transaction.atomic
def support_work_assign(
    *,
    topics: Iterable[Topic],
    users: Iterable[User],
    condition: str,
    machine_judge: Judge | None = None,
    max_citations: int | None = None,
    switch: bool = False,
) -> list[TopicWork]:
    """Assign every (topic, assessor) pair in one condition, as `assign_support` does per assessor; all
    or nothing, so a conflict on one topic assigns none. An assessor's topic in the other condition is
    switched only when `switch` confirms it."""
    assigned: list[TopicWork] = []
    topics, users = list(topics), list(users)
    if not topics:
        raise ConsoleError("the collection has no topics to assign")
    for user in users:
        for topic in topics:
            assigned.append(
                support_assignment_set(
                    topic=topic,
                    user=user,
                    condition=condition,
                    machine_judge=machine_judge,
                    max_citations=max_citations,
                    switch=switch,
                )
            )
    return assigned
