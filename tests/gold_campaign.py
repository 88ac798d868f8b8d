"""A relevance campaign with gold planted from a reference judge, and assessors who walk it by the API."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, GoldPair, Judge
from annotation.relevance.assignments import assignment_create
from annotation.relevance.pooling import pool_build
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    PassageFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)


@dataclass
class GoldCampaign:
    assignment: Assignment
    reference: Judge
    reference_grades: dict[tuple[int, str], int]  # (turn pk, passage id) -> grade, pooled pairs included


def gold_campaign(
    *,
    assessors,
    n_turns: int = 10,
    n_passages: int = 9,
    n_spare: int = 2,
    share: float = 0.1,
    redundancy: int = 2,
    seed: int = 7,
) -> GoldCampaign:
    """One conversation of `n_turns` turns, each pooling `n_passages` passages of one run; the reference
    judge graded each turn's pooled passages and `n_spare` passages beyond the pool (the gold candidates)."""
    rng = random.Random(seed)
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection)
    run = RunFactory(collection=collection)
    reference = JudgeFactory(name=f"nist-{collection.name}")
    grades: dict[tuple[int, str], int] = {}
    for position in range(1, n_turns + 1):
        turn = TurnFactory(topic=topic, position=position)
        ids = [PassageFactory(collection=collection).passage_id for _ in range(n_passages)]
        RankingFactory(run=run, turn=turn, passage_ids=ids)
        spare = [PassageFactory(collection=collection).passage_id for _ in range(n_spare)]
        for passage_id in ids + spare:
            grade = rng.randrange(5)
            RelevanceJudgmentFactory(judge=reference, turn=turn, passage_id=passage_id, grade=grade)
            grades[(turn.pk, passage_id)] = grade
    pool = pool_build(collection=collection, name="pool", depth=n_passages).pool
    assignment = assignment_create(
        pool=pool,
        name=f"assign-{collection.name}",
        assessors=assessors,
        redundancy=redundancy,
        with_ptkb=False,
        gold_judge=reference,
        gold_share=share,
    )
    return GoldCampaign(assignment, reference, grades)


def gold_pairs(assignment: Assignment) -> dict[tuple[int, str], int]:
    return {
        (turn_pk, passage_id): grade
        for turn_pk, passage_id, grade in GoldPair.objects.filter(unit__assignment=assignment).values_list(
            "turn_id", "passage_id", "grade"
        )
    }


@dataclass
class Walk:
    """What an assessor was shown and what they answered, in order."""

    shown: list[dict] = field(default_factory=list)
    given: dict[tuple[int, str], int] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)


def api_client(user) -> Client:
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.get_or_create(user=user)[0].key}"
    return client


def walk(user, assignment: Assignment, grade_of, *, time_spent_ms: int = 10_000) -> Walk:
    """Grade everything the API hands `user` (next, then grade with next), answering `grade_of(pair)`."""
    client = api_client(user)
    done = Walk()
    step = client.post(reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json")
    while step.status_code == 200:
        payload = step.json()
        done.shown.append(payload)
        pair = (payload["turn_pk"], payload["passage_id"])
        done.given[pair] = grade_of(pair)
        done.seconds.append(time_spent_ms / 1000)
        graded = client.post(
            reverse("relevance-api-grade", args=[payload["slot"]]),
            {
                "turn_pk": payload["turn_pk"],
                "passage_id": payload["passage_id"],
                "grade": done.given[pair],
                "time_spent_ms": time_spent_ms,
            },
            content_type="application/json",
        )
        assert graded.status_code == 201, graded.content
        step = client.post(
            reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json"
        )
    assert step.status_code == 204, step.content
    return done
