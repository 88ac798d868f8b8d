"""Builders shared by the crowd tests: a small campaign from the factories, and a simulated worker."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from typing import Any

from annotation.models import Collection, Judge
from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.campaigns.services import batches_compose, campaign_create, test_question_create
from crowd.models import BatchItem, CrowdAssignment, CrowdBatch, CrowdCampaign
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    ResponseFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)


def build_campaign(
    *,
    provider: str = CrowdCampaign.Provider.MTURK,
    batch_size: int = 5,
    seed: int = 7,
    n_tests: int = 4,
    assignments: int = 3,
    nuggets: tuple[int, ...] = (3, 2),
) -> CrowdCampaign:
    """Two conversations, two runs, five gold nuggets: 2x3 + 2x2 = 10 pairs (one conversation per entry
    of `nuggets`, with that many gold nuggets)."""
    collection = CollectionFactory()
    nugget_judge = JudgeFactory(name=f"gold-{collection.name}", kind=Judge.Kind.IMPORTED)
    runs = [RunFactory(collection=collection, name=f"run-{c}") for c in "ab"]
    turns = []
    for n_nuggets in nuggets:
        topic = TopicFactory(collection=collection)
        turn = TurnFactory(topic=topic, collection=collection)
        turns.append(turn)
        for run in runs:
            ResponseFactory(run=run, turn=turn)
        for _ in range(n_nuggets):
            NuggetFactory(judge=nugget_judge, turn=turn)
    for i in range(n_tests):
        test_question_create(
            collection=collection,
            response_text=f"Paris is the capital of France; it has {i} bridges.",
            nugget_text="Paris is the capital of France."
            if i % 2 == 0
            else "Berlin hosts the 2050 Olympics.",
            answer=i % 2 == 0,
        )
    campaign = campaign_create(
        collection=collection,
        name=f"campaign-{collection.name}",
        nugget_judge=nugget_judge,
        turns=turns,
        runs=runs,
        provider=provider,
        seed=seed,
        batch_size=batch_size,
        assignments_per_batch=assignments,
    )
    batches_compose(campaign=campaign)
    return campaign


def hidden_form(html: str) -> tuple[str, dict[str, str]]:
    """The action and hidden fields of the first form of a page, as a browser would post them."""
    action = unescape(re.search(r'<form[^>]*action="([^"]*)"', html).group(1))
    fields = {
        unescape(name): unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html)
    }
    return action, fields


# --- Nugget-support campaigns: three-way questions and a synthetic crowd ------------------------------

SUPPORT_LABELS = ("support", "partial_support", "not_support")


def build_nugget_campaign(
    *,
    topics: int = 4,
    runs: int = 3,
    nuggets: int = 5,
    n_tests: int = 30,
    batch_size: int = 5,
    tests_per_batch: int = 3,
    assignments: int = 5,
    seed: int = 11,
    provider: str = CrowdCampaign.Provider.PLATFORM,
) -> CrowdCampaign:
    """A TREC-RAG-shaped campaign: `topics` questions, `runs` answers each, `nuggets` nuggets per question
    (so topics x runs x nuggets pairs), and `n_tests` three-way test questions, a third of each label."""
    collection = CollectionFactory()
    nugget_judge = JudgeFactory(name=f"nuggets-{collection.name}", kind=Judge.Kind.IMPORTED)
    run_rows = [RunFactory(collection=collection, name=f"run-{i}") for i in range(runs)]
    turns = []
    for _ in range(topics):
        turn = TurnFactory(topic=TopicFactory(collection=collection), collection=collection)
        turns.append(turn)
        for run in run_rows:
            ResponseFactory(run=run, turn=turn)
        for position in range(nuggets):
            NuggetFactory(judge=nugget_judge, turn=turn, position=position)
    for i in range(n_tests):
        test_question_create(
            collection=collection,
            response_text=f"Test answer {i}: Paris is the capital of France.",
            nugget_text=f"Test fact {i}.",
            support=SUPPORT_LABELS[i % 3],
        )
    campaign = campaign_create(
        collection=collection,
        name=f"nuggets-{collection.name}",
        nugget_judge=nugget_judge,
        turns=turns,
        runs=run_rows,
        provider=provider,
        kind=CrowdCampaign.Kind.NUGGET_SUPPORT,
        seed=seed,
        batch_size=batch_size,
        tests_per_batch=tests_per_batch,
        assignments_per_batch=assignments,
    )
    batches_compose(campaign=campaign)
    return campaign


def synthetic_crowd_answer(
    campaign: CrowdCampaign, *, workers: dict[str, float | str], seed: int = 5
) -> dict[tuple[int, int], str]:
    """Every batch answered by `assignments_per_batch` workers drawn (seeded) from `workers`: a worker's value
    is their accuracy (right with that chance, otherwise one of the two wrong labels at random) or a
    label they always give (a spammer). Pairs get seeded true labels; returns them."""
    import random

    from crowd.answers.services import assignment_submit, worker_get_or_create

    rng = random.Random(seed)
    truth: dict[tuple[int, int], str] = {}
    names = sorted(workers)
    for batch in campaign.batches.order_by("index"):
        items = list(batch.items.select_related("test_question").order_by("position"))
        for item in items:
            if not item.is_test:
                truth.setdefault((item.response_id, item.nugget_id), rng.choice(SUPPORT_LABELS))
        for name in rng.sample(names, batch.max_assignments):
            skill = workers[name]
            answers = {}
            for item in items:
                right = (
                    item.test_question.support if item.is_test else truth[(item.response_id, item.nugget_id)]
                )
                if isinstance(skill, str):
                    answers[item.position] = skill
                elif rng.random() < skill:
                    answers[item.position] = right
                else:
                    answers[item.position] = rng.choice([x for x in SUPPORT_LABELS if x != right])
            assignment_submit(batch=batch, worker=worker_get_or_create(worker_id=name), answers=answers)
    return truth


def batch_answer(batch: CrowdBatch, worker_id: str, pick: Callable[[BatchItem], Any]) -> CrowdAssignment:
    """One worker's confirmed answers to every question of a batch, `pick(item)` giving each answer."""
    items = list(batch.items.select_related("test_question"))
    return assignment_submit(
        batch=batch,
        worker=worker_get_or_create(worker_id=worker_id),
        answers={i.position: pick(i) for i in items},
    )


def compose_collection() -> tuple[Collection, Judge]:
    """Collection "demo" with two runs, two turns and gold nuggets by "demo-gold", plus judges the compose form
    must not offer: one without nuggets, one whose nuggets are in another collection."""
    collection = CollectionFactory(name="demo")
    gold = JudgeFactory(name="demo-gold", kind=Judge.Kind.IMPORTED)
    JudgeFactory(name="no-nuggets-here", kind=Judge.Kind.IMPORTED)
    elsewhere = JudgeFactory(name="other-collection-gold")
    NuggetFactory(judge=elsewhere, turn=TurnFactory(topic=TopicFactory()))
    runs = [RunFactory(collection=collection, name=f"run-{c}") for c in "ab"]
    for _ in range(2):
        turn = TurnFactory(topic=TopicFactory(collection=collection), collection=collection)
        for run in runs:
            ResponseFactory(run=run, turn=turn)
        for _ in range(2):
            NuggetFactory(judge=gold, turn=turn)
    return collection, gold
