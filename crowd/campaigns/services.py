"""Writes for crowd campaigns: compose campaigns, their test questions and batches, and extend batches.

Each service is one transaction. Answers are taken by crowd/answers/services.py and aggregated into labels
by crowd/aggregation/services.py; the MTurk side (publish, sync, review, bonus, expire) is
crowd/providers/mturk/services.py, over the one MTurk client in crowd/providers/mturk/client.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from annotation.judge_access import ImportJudgeRefused
from annotation.models import Collection, Judge, Nugget, NuggetSupport, Run, Turn
from annotation.services import judge_get_or_create
from crowd.campaigns.models import LABEL_JUDGE_BY_PROVIDER, NUGGET_LABEL_JUDGE_BY_PROVIDER
from crowd.campaigns.selectors import campaign_pairs
from crowd.errors import CrowdError
from crowd.models import (
    BatchItem,
    CrowdBatch,
    CrowdCampaign,
    TestQuestion,
)
from crowd.providers.mturk.client import MTurkClient

# --- campaigns and batches -----------------------------------------------------------------------

# What a worker is asked, by kind, unless the campaign sets its own HIT title and description.
NUGGET_SUPPORT_HIT = {
    "title": "Does the answer support this fact?",
    "description": "Read a short answer and a fact; say whether the answer supports the fact, "
    "partly supports it, or not.",
}
CAMPAIGN_NAME_MAX = CrowdCampaign._meta.get_field("name").max_length or 100
# /crowd/campaigns/new/ is the compose page.
RESERVED_CAMPAIGN_NAMES = frozenset({"new"})


def campaign_name_check(name: str) -> None:
    """A campaign name is a slug: it is part of page addresses and printed in commands and CSV files."""
    try:
        validate_slug(name)
    except ValidationError:
        raise CrowdError(
            f"campaign name {name!r} must be letters, digits, '-' and '_' only (such as demo-crowd)"
        ) from None
    if name in RESERVED_CAMPAIGN_NAMES:
        raise CrowdError(f"campaign name {name!r} is taken by a page address: choose another")
    if len(name) > CAMPAIGN_NAME_MAX:
        raise CrowdError(f"campaign name {name[:20]!r}... is longer than {CAMPAIGN_NAME_MAX} characters")


@transaction.atomic
def campaign_create(
    *,
    collection: Collection,
    name: str,
    nugget_judge: Judge,
    turns: Iterable[Turn],
    runs: Iterable[Run],
    provider: str = CrowdCampaign.Provider.PLATFORM,
    kind: str = CrowdCampaign.Kind.NTR,
    label_judge_name: str | None = None,
    seed: int = 0,
    batch_size: int = 10,
    tests_per_batch: int = 1,
    assignments_per_batch: int = 3,
    skip_duplicates: bool = True,
    **hit_settings: Any,
) -> CrowdCampaign:
    """A campaign over chosen turns and runs, labelled as the crowd judge `label_judge_name` (by default
    the provider's: crowd-majority in the platform, mturk-majority on MTurk; crowd-nuggets and
    mturk-nuggets for a nugget-support campaign, whose questions are three-way)."""
    campaign_name_check(name)
    if provider not in CrowdCampaign.Provider.values:
        raise CrowdError(f"provider {provider!r} is not one of {', '.join(CrowdCampaign.Provider.values)}")
    if kind not in CrowdCampaign.Kind.values:
        raise CrowdError(f"kind {kind!r} is not one of {', '.join(CrowdCampaign.Kind.values)}")
    by_provider = (
        NUGGET_LABEL_JUDGE_BY_PROVIDER
        if kind == CrowdCampaign.Kind.NUGGET_SUPPORT
        else LABEL_JUDGE_BY_PROVIDER
    )
    label_judge_name = label_judge_name or by_provider[provider]
    if kind == CrowdCampaign.Kind.NUGGET_SUPPORT:
        hit_settings = {**NUGGET_SUPPORT_HIT, **hit_settings}
    if CrowdCampaign.objects.filter(name=name).exists():
        raise CrowdError(f"a campaign named {name!r} exists")
    if batch_size < 1 or assignments_per_batch < 1 or tests_per_batch < 0:
        raise CrowdError(
            "batch size and assignments per batch must be at least 1, tests per batch at least 0"
        )
    if "reward" in hit_settings:
        try:
            hit_settings["reward"] = Decimal(str(hit_settings["reward"])).quantize(Decimal("0.01"))
        except InvalidOperation:
            raise CrowdError(f"reward {hit_settings['reward']!r} is not an amount in USD") from None
    try:
        label_judge = judge_get_or_create(
            name=label_judge_name,
            kind=Judge.Kind.CROWD,
            description="Majority vote of crowd workers who passed the batch's test questions.",
        )
    except ImportJudgeRefused as exc:
        raise CrowdError(str(exc)) from None
    if label_judge.kind != Judge.Kind.CROWD:
        raise CrowdError(f"judge {label_judge_name!r} exists and is not a crowd judge")
    campaign = CrowdCampaign.objects.create(
        collection=collection,
        name=name,
        provider=provider,
        kind=kind,
        nugget_judge=nugget_judge,
        label_judge=label_judge,
        seed=seed,
        batch_size=batch_size,
        tests_per_batch=tests_per_batch,
        assignments_per_batch=assignments_per_batch,
        skip_duplicates=skip_duplicates,
        **hit_settings,
    )
    turns, runs = list(turns), list(runs)
    if any(t.collection_id != collection.id for t in turns) or any(
        r.collection_id != collection.id for r in runs
    ):
        raise CrowdError("turns and runs must belong to the campaign's collection")
    campaign.turns.set(turns)
    campaign.runs.set(runs)
    return campaign


@transaction.atomic
def test_question_create(
    *,
    collection: Collection,
    response_text: str,
    nugget_text: str,
    answer: bool | None = None,
    support: str = "",
    origin: Nugget | None = None,
) -> TestQuestion:
    """An organiser-written test question (or a generated one when `origin` is given): yes/no (`answer`)
    for nugget matching, or three-way (`support`, a NuggetSupport value) for nugget-support campaigns."""
    if not response_text.strip() or not nugget_text.strip():
        raise CrowdError("a test question needs a response text and a nugget text")
    if support and support not in NuggetSupport.values:
        raise CrowdError(f"support must be one of {', '.join(NuggetSupport.values)}, not {support!r}")
    if (answer is None) == (not support):
        raise CrowdError("a test question has a yes/no answer or a three-way support answer, one of them")
    if support:
        answer = support != NuggetSupport.NONE
    question, _ = TestQuestion.objects.get_or_create(
        collection=collection,
        response_text=response_text,
        nugget_text=nugget_text,
        defaults={
            "answer": answer,
            "support": support,
            "origin": origin,
            "source": TestQuestion.Source.GENERATED if origin else TestQuestion.Source.ORGANISER,
        },
    )
    return question


# A generated partial-support question states the first half of a nugget's words: only nuggets this
# long have a half that is a fact of its own and leaves one out, so the right answer stays obvious.
PARTIAL_MIN_WORDS = 6


def nugget_part(text: str) -> str:
    """The first half of a nugget's words (rounded up), for a response that states it only in part; ""
    for a nugget shorter than PARTIAL_MIN_WORDS words."""
    words = text.rstrip(".").split()
    if len(words) < PARTIAL_MIN_WORDS:
        return ""
    return " ".join(words[: (len(words) + 1) // 2]).rstrip(",;:")


@transaction.atomic
def test_questions_generate(*, campaign: CrowdCampaign, count: int) -> list[TestQuestion]:
    """Test questions with an obvious answer made from the campaign's nuggets: in a yes/no campaign half
    yes and half no, in a nugget-support campaign a third each of support, partial support and not support
    (so a worker who always gives one answer fails most of them).

    Yes / support: a response that states the nugget word for word (among another turn's response text).
    Partial support: the same with only the first half of the nugget's words (`nugget_part`), from nuggets
    of at least PARTIAL_MIN_WORDS words; with none that long, that third is support and not support.
    No / not support: a nugget of one conversation against a response of a different conversation.
    """
    three_way = campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT
    rng = random.Random(campaign.seed)
    pairs = campaign_pairs(campaign=campaign)
    nuggets = sorted({n.id: n for _, n in pairs}.values(), key=lambda n: n.id)
    responses = sorted({r.id: r for r, _ in pairs}.values(), key=lambda r: r.id)
    topics = {n.turn.topic_id for n in nuggets}
    if len(nuggets) < 1 or len(topics) < 2:
        raise CrowdError("generating test questions needs nuggets from at least two conversations")
    long_nuggets = [n for n in nuggets if nugget_part(n.text)]
    kinds: tuple[NuggetSupport, ...] = (NuggetSupport.SUPPORT, NuggetSupport.NONE)
    if three_way and long_nuggets:
        kinds = (NuggetSupport.SUPPORT, NuggetSupport.PARTIAL, NuggetSupport.NONE)
    made: list[TestQuestion] = []
    for i in range(count):
        kind = kinds[i % len(kinds)]
        choices = long_nuggets if kind == NuggetSupport.PARTIAL else nuggets
        nugget = choices[rng.randrange(len(choices))]
        others = [r for r in responses if r.turn.topic_id != nugget.turn.topic_id]
        filler = others[rng.randrange(len(others))].text if others else ""
        if kind == NuggetSupport.NONE:
            text = filler
        else:
            stated = nugget.text.rstrip(".") if kind == NuggetSupport.SUPPORT else nugget_part(nugget.text)
            sentences = [s for s in filler.split(". ") if s][:2]
            text = ". ".join([*sentences[:1], stated, *sentences[1:2]]).strip() + "."
        if not text.strip():
            continue
        made.append(
            test_question_create(
                collection=campaign.collection,
                response_text=text,
                nugget_text=nugget.text,
                answer=None if three_way else kind == NuggetSupport.SUPPORT,
                support=kind if three_way else "",
                origin=nugget,
            )
        )
    return made


@transaction.atomic
def batches_compose(*, campaign: CrowdCampaign) -> list[CrowdBatch]:
    """Shuffle the pairs with the campaign's seed, cut them into batches, and put test questions in.

    Each batch gets `tests_per_batch` test questions at seeded random positions, drawn so that yes and
    no answers alternate across the campaign (support, not support and, when there are any, partial support
    in a nugget-support campaign, which takes only three-way questions). The same seed and the same data
    give the same batches.
    """
    if campaign.batches.exists():
        raise CrowdError(f"campaign {campaign.name} already has batches")
    pairs = campaign_pairs(campaign=campaign)
    if not pairs:
        raise CrowdError("no pairs: the chosen turns have no responses of the chosen runs or no nuggets")
    pool = list(TestQuestion.objects.filter(collection=campaign.collection).order_by("id"))
    if campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT:
        groups = [[q for q in pool if q.support == label] for label in NuggetSupport.values]
        yes, no, partial = groups[0], groups[2], groups[1]
        if campaign.tests_per_batch and (not yes or not no):
            raise CrowdError("the test question pool needs at least one support and one not_support question")
    else:
        yes = [q for q in pool if not q.support and q.answer]
        no = [q for q in pool if not q.support and not q.answer]
        partial = []
        if campaign.tests_per_batch and (not yes or not no):
            raise CrowdError("the test question pool needs at least one yes and one no question")
    rng = random.Random(campaign.seed)
    rng.shuffle(pairs)
    rng.shuffle(yes)
    rng.shuffle(no)
    rng.shuffle(partial)
    sources = [group for group in (yes, no, partial) if group]
    batches: list[CrowdBatch] = []
    items: list[BatchItem] = []
    test_count = 0
    for index, start in enumerate(range(0, len(pairs), campaign.batch_size)):
        chunk: list[Any] = list(pairs[start : start + campaign.batch_size])
        for _ in range(campaign.tests_per_batch):
            source = sources[test_count % len(sources)]
            question = source[(test_count // len(sources)) % len(source)]
            test_count += 1
            chunk.insert(rng.randrange(len(chunk) + 1), question)
        batch = CrowdBatch.objects.create(
            campaign=campaign, index=index, max_assignments=campaign.assignments_per_batch
        )
        batches.append(batch)
        for position, entry in enumerate(chunk):
            if isinstance(entry, TestQuestion):
                items.append(BatchItem(batch=batch, position=position, test_question=entry))
            else:
                response, nugget = entry
                items.append(BatchItem(batch=batch, position=position, response=response, nugget=nugget))
    BatchItem.objects.bulk_create(items)
    return batches


@transaction.atomic
def campaign_compose(
    *,
    collection: Collection,
    name: str,
    nugget_judge: Judge,
    turns: Iterable[Turn],
    runs: Iterable[Run],
    generate_tests: int = 0,
    **settings: Any,
) -> tuple[CrowdCampaign, list[CrowdBatch]]:
    """Create a campaign, generate `generate_tests` test questions from its nuggets, and cut its batches:
    all or nothing, so a campaign without batches is never left behind. The compose page and
    `crowd_compose` both call this."""
    campaign = campaign_create(
        collection=collection, name=name, nugget_judge=nugget_judge, turns=turns, runs=runs, **settings
    )
    if generate_tests:
        test_questions_generate(campaign=campaign, count=generate_tests)
    return campaign, batches_compose(campaign=campaign)


def batches_extend(
    *, campaign: CrowdCampaign, items: Iterable[BatchItem], extra: int, client: MTurkClient | None
) -> int:
    """Give the batches of unresolved pairs `extra` more assignments (on MTurk too when published)."""
    batch_ids = sorted({item.batch_id for item in items})
    for batch in CrowdBatch.objects.filter(id__in=batch_ids, campaign=campaign):
        if batch.hit_id and client is not None:
            client.hit_add_assignments(
                hit_id=batch.hit_id,
                count=extra,
                unique_token=f"assay-more-{batch.id}-{batch.max_assignments}",
            )
        with transaction.atomic():
            batch.max_assignments += extra
            batch.save(update_fields=["max_assignments"])
    return len(batch_ids)
