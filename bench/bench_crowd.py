"""Crowd campaign at the size of the iKAT 2024 study: compose batches, store 3 answers per batch, aggregate.

116 turns x 5 runs x 20 gold nuggets = 11,600 pairs -> 1,160 batches of 10 pairs + 1 test question, each
answered by 3 of 60 simulated workers (seeded; about 1 in 10 fails the test question). Prints the time of
`batches_compose`, of storing every answer through `assignment_submit` (which also writes each worker's
votes as judgments of their own crowd judge), and of `labels_aggregate`, the majority vote that writes
the `mturk-majority` labels; the last is set against a plain-Python baseline doing the same majority vote
in the same invocation: one raw SQL read of the counted votes, a dict tally, and one executemany of the
labels. The baseline's labels must equal ours. Own throwaway PostgreSQL database; about a minute.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database  # noqa: E402

django_with_temp_database()

from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from annotation.models import (  # noqa: E402
    Collection,
    Judge,
    NtrJudgment,
    Nugget,
    Response,
    Run,
    Topic,
    Turn,
)
from crowd.aggregation.services import labels_aggregate  # noqa: E402
from crowd.answers.services import assignment_submit, worker_get_or_create  # noqa: E402
from crowd.campaigns.services import batches_compose, campaign_create, test_question_create  # noqa: E402
from crowd.models import VOTING_STATUSES, BatchItem, CrowdAnswer, CrowdBatch  # noqa: E402

TOPICS, TURNS, RUNS, NUGGETS, WORKERS, PER_BATCH = 17, 116, 5, 20, 60, 3
FAIL_RATE, ACCURACY = 0.1, 0.85


def build() -> tuple[Collection, Judge, list[Turn], list[Run]]:
    collection = Collection.objects.create(name="ikat-crowd-bench")
    topics = Topic.objects.bulk_create(
        [Topic(collection=collection, number=str(n), title=f"topic {n}") for n in range(TOPICS)]
    )
    turns = Turn.objects.bulk_create(
        [
            Turn(
                collection=collection,
                topic=topics[i % TOPICS],
                turn_id=f"{i % TOPICS}_{i // TOPICS + 1}",
                position=i // TOPICS + 1,
                utterance=f"question {i}",
            )
            for i in range(TURNS)
        ]
    )
    runs = Run.objects.bulk_create(
        [Run(collection=collection, name=f"run-{r}", kind=Run.Kind.GENERATION_ONLY) for r in range(RUNS)]
    )
    Response.objects.bulk_create(
        [
            Response(run=run, turn=turn, text=f"{run.name} answers {turn.turn_id} " * 20)
            for run in runs
            for turn in turns
        ]
    )
    gold = Judge.objects.create(name="gold-bench", kind=Judge.Kind.IMPORTED)
    Nugget.objects.bulk_create(
        [
            Nugget(judge=gold, turn=turn, key=f"[{k + 1}]", text=f"fact {k + 1} of {turn.turn_id}")
            for turn in turns
            for k in range(NUGGETS)
        ],
        batch_size=2000,
    )
    for i in range(20):
        test_question_create(
            collection=collection,
            response_text=f"Paris is the capital of France; it has {i} bridges.",
            nugget_text="Paris is the capital of France."
            if i % 2 == 0
            else "Berlin hosts the 2050 Olympics.",
            answer=i % 2 == 0,
        )
    return collection, gold, turns, runs


def answer_all(batches: list[CrowdBatch]) -> int:
    rng = random.Random(0)
    workers = [worker_get_or_create(worker_id=f"W{n:03d}") for n in range(WORKERS)]
    submitted = 0
    for batch in batches:
        items = list(batch.items.select_related("test_question").order_by("position"))
        for worker in rng.sample(workers, PER_BATCH):
            careless = rng.random() < FAIL_RATE
            answers = {}
            for item in items:
                if item.is_test:
                    answers[item.position] = item.test_question.answer != careless
                else:
                    truth = (item.response_id + item.nugget_id) % 4 == 0
                    answers[item.position] = truth if rng.random() < ACCURACY else not truth
            assignment_submit(
                batch=batch, worker=worker, answers=answers, assignment_id=f"{worker.worker_id}-{batch.id}"
            )
            submitted += 1
    return submitted


def baseline_majority(*, campaign_id: int, judge_id: int) -> int:
    """The same majority vote in plain Python over raw SQL: read counted votes, tally, insert labels."""
    statuses = [str(s) for s in VOTING_STATUSES]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT i.response_id, i.nugget_id, a.matched
            FROM {CrowdAnswer._meta.db_table} a
            JOIN crowd_crowdassignment s ON a.assignment_id = s.id
            JOIN {BatchItem._meta.db_table} i ON a.item_id = i.id
            JOIN crowd_crowdbatch b ON i.batch_id = b.id
            WHERE b.campaign_id = %s AND i.test_question_id IS NULL AND s.passed_tests
              AND s.status IN ({", ".join(["%s"] * len(statuses))})
            """,
            [campaign_id, *statuses],
        )
        tally: dict[tuple[int, int], Counter] = {}
        for response_id, nugget_id, matched in cursor.fetchall():
            tally.setdefault((response_id, nugget_id), Counter())[bool(matched)] += 1
        now = timezone.now()
        rows = [
            (judge_id, r, n, votes[True] > votes[False], now, now)
            for (r, n), votes in tally.items()
            if votes[True] != votes[False]
        ]
        cursor.executemany(
            f"INSERT INTO {NtrJudgment._meta.db_table} "
            "(judge_id, response_id, nugget_id, matched, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s)",
            rows,
        )
    return len(rows)


def timed(function, **kwargs):
    start = time.perf_counter()
    value = function(**kwargs)
    return time.perf_counter() - start, value


def main() -> None:
    collection, gold, turns, runs = build()
    campaign = campaign_create(
        collection=collection, name="ikat-crowd", nugget_judge=gold, turns=turns, runs=runs, provider="mturk"
    )
    compose_time, batches = timed(batches_compose, campaign=campaign)
    pairs = BatchItem.objects.filter(batch__campaign=campaign, test_question__isnull=True).count()
    print(
        f"crowd campaign: {TURNS} turns x {RUNS} runs x {NUGGETS} nuggets = {pairs:,} pairs, "
        f"{len(batches):,} batches of 10 + 1 test question"
    )
    print(f"  batches_compose        {compose_time:8.2f} s  ({pairs / compose_time:,.0f} pairs/s)")

    submit_time, submitted = timed(answer_all, batches=batches)
    print(
        f"  assignment_submit      {submit_time:8.2f} s  for {submitted:,} assignments "
        f"({1000 * submit_time / submitted:.1f} ms each, answers and per-worker judgments)"
    )
    worker_rows = NtrJudgment.objects.filter(judge__name__startswith="mturk-worker:").count()
    assert worker_rows == pairs * PER_BATCH, (worker_rows, pairs * PER_BATCH)

    ours_time, result = timed(labels_aggregate, campaign=campaign)
    again_time, again = timed(labels_aggregate, campaign=campaign)
    assert (again.labelled, len(again.unresolved)) == (result.labelled, len(result.unresolved))
    baseline_judge = Judge.objects.create(name="baseline-majority", kind=Judge.Kind.CROWD)
    base_time, base_count = timed(baseline_majority, campaign_id=campaign.id, judge_id=baseline_judge.id)

    def labels(judge_id: int) -> set[tuple[int, int, bool]]:
        return set(
            NtrJudgment.objects.filter(judge_id=judge_id).values_list("response_id", "nugget_id", "matched")
        )

    assert labels(campaign.label_judge_id) == labels(baseline_judge.id), "baseline and service disagree"
    assert base_count == result.labelled
    print(
        f"  labels_aggregate       {ours_time:8.2f} s  {result.labelled:,} labels ({result.yes:,} yes), "
        f"{len(result.unresolved):,} unresolved, {result.discarded_assignments:,} assignments discarded"
    )
    print(f"  labels_aggregate again {again_time:8.2f} s  (nothing to change)")
    print(f"  plain-Python baseline  {base_time:8.2f} s  (raw SQL read, dict tally, executemany)")
    print(f"  ratio service / baseline: {ours_time / base_time:.1f}x")


if __name__ == "__main__":
    main()
