"""The demo collection and accounts that `make run` loads, so a new user has something to click through."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.collection.io import passages_import, run_import, topics_import
from annotation.models import Assignment, Collection, Condition, Judge, Passage, Pool, TopicWork
from annotation.nuggets.writer import nugget_upsert
from annotation.relevance.assignments import assignment_create
from annotation.relevance.io import qrels_import
from annotation.relevance.pooling import pool_build
from annotation.services import collection_get_or_create, judge_for_assessor, judge_get_or_create
from annotation.support.io import support_labels_import
from annotation.support.services import support_assignment_set

DEMO_DIR = Path(settings.BASE_DIR) / "fixtures" / "demo"
DEMO_COLLECTION = "demo"
RUNS = {"bm25-baseline": "demo-group-a", "dense-rerank": "demo-group-b", "rag-llm": "demo-group-b"}


@dataclass(frozen=True)
class DemoAccount:
    username: str
    password: str
    organiser: bool


# Passwords for a local demo only; `make run` prints them. Production accounts are made with createsuperuser.
DEMO_ACCOUNTS = (
    DemoAccount("organiser", "organiser-demo", True),
    DemoAccount("alice", "alice-demo", False),
    DemoAccount("bob", "bob-demo", False),
)


@transaction.atomic
def demo_load(*, directory: Path = DEMO_DIR) -> Collection:
    """Load (or refresh) the demo collection, runs, organiser qrels, LLM labels, gold nuggets and accounts."""
    collection = collection_get_or_create(
        name=DEMO_COLLECTION,
        description="Two personalised conversations written for the Assay demo, with three runs.",
    )
    topics_import(path=directory / "topics.json", collection=collection)
    passages_import(path=directory / "passages.jsonl", collection=collection)
    for run, group in RUNS.items():
        run_import(path=directory / f"run-{run}.trec", collection=collection, group=group)
        run_import(path=directory / f"answers-{run}.jsonl", collection=collection, group=group)
    qrels_import(
        path=directory / "qrels-organiser.txt",
        collection=collection,
        judge=judge_get_or_create(
            name="demo-organiser-qrels", description="Relevance labels written for the demo"
        ),
    )
    qrels_import(
        path=directory / "qrels-llm.txt",
        collection=collection,
        judge=judge_get_or_create(
            name="demo-llm-relevance",
            kind=Judge.Kind.LLM,
            model="demo",
            description="Stand-in LLM relevance labels for ranks 6-15: the filter of adaptive pooling",
        ),
    )
    support_labels_import(
        path=directory / "support-llm.jsonl",
        collection=collection,
        judge=judge_get_or_create(
            name="demo-llm-support",
            kind=Judge.Kind.LLM,
            model="demo",
            description="Stand-in LLM support labels for the post-editing condition",
        ),
    )
    _nuggets_load(collection, directory / "nuggets.json")
    User = get_user_model()
    assessors = []
    for account in DEMO_ACCOUNTS:
        user, created = User.objects.get_or_create(username=account.username)
        if created:
            user.set_password(account.password)
        user.is_staff = user.is_superuser = account.organiser
        user.save()
        if not account.organiser:
            judge_for_assessor(user=user)
            assessors.append(user)
    _work_hand_out(collection, assessors)
    return collection


def _work_hand_out(collection: Collection, assessors: list) -> None:
    """An adaptive pool both assessors judge (redundancy 2, for agreement), and support work in both conditions."""
    if not Pool.objects.filter(collection=collection, name="demo-adaptive").exists():
        pool_build(
            collection=collection,
            name="demo-adaptive",
            depth=15,
            always_depth=5,
            adaptive=True,
            filter_judge=Judge.objects.get(name="demo-llm-relevance"),
            min_grade=2,
        )
    if not Assignment.objects.filter(name="demo-round-1").exists():
        assignment_create(
            pool=Pool.objects.get(collection=collection, name="demo-adaptive"),
            name="demo-round-1",
            assessors=assessors,
            redundancy=2,
            lease_minutes=60,
        )
    machine = Judge.objects.get(name="demo-llm-support")
    topics = list(collection.topics.order_by("number"))
    for i, user in enumerate(assessors):
        for j, topic in enumerate(topics):
            if TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, topic=topic, user=user).exists():
                continue
            post_edit = (i + j) % 2 == 1
            support_assignment_set(
                topic=topic,
                user=user,
                condition=Condition.POST_EDIT if post_edit else Condition.SCRATCH,
                machine_judge=machine if post_edit else None,
            )


def _nuggets_load(collection: Collection, path: Path) -> None:
    judge = judge_get_or_create(
        name="demo-gold-nuggets", kind=Judge.Kind.IMPORTED, description="Demo gold nuggets"
    )
    texts = dict(Passage.objects.filter(collection=collection).values_list("passage_id", "text"))
    turns = {t.turn_id: t for t in collection.turns.all()}
    keys: dict[str, int] = {}
    for item in json.loads(path.read_text(encoding="utf-8")):
        start = texts[item["passage_id"]].index(item["text"])
        keys[item["turn"]] = keys.get(item["turn"], 0) + 1
        nugget_upsert(
            judge=judge,
            turn=turns[item["turn"]],
            key=f"[{keys[item['turn']]}]",
            text=item["text"],
            passage_id=item["passage_id"],
            start=start,
            end=start + len(item["text"]),
        )
