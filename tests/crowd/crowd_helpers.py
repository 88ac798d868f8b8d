"""Builders shared by the crowd tests: a small campaign from the factories, and a simulated worker."""

from __future__ import annotations

import re
from html import unescape

from annotation.models import Judge
from crowd.models import CrowdCampaign
from crowd.services.campaigns import batches_compose, campaign_create, test_question_create
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
