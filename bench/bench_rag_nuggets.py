"""TREC RAG nugget scoring at the track's scale, beside two baselines timed in the same invocation.

Generates 90 runs x 300 topics of RAG answers, 30 nuggets per topic with vital/okay, and one assignment
label per (answer, nugget) (810,000: a TREC RAG-sized evaluation), all written through the bulk writers,
then times `nugget_scores` end to end (the database read included) against nuggetizer's pure-Python
`calculate_global_metrics` over the same records held in memory (no read at all) and against one raw SQL
aggregate of the same counts (the least any scoring from the database can cost); checks that Assay and
nuggetizer give the same numbers, and fails when Assay's scoring takes 5 s or more.

Usage: python bench/bench_rag_nuggets.py [--runs 90] [--topics 300] [--nuggets 30]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database  # noqa: E402

TARGET_S = 5.0
# Per answer: its nuggets, and how many are supported and partly supported, all and vital (the judge's own
# vital/okay): what every score is made of, summed by PostgreSQL alone.
RAW_SQL = """
SELECT a.response_id, count(*),
       count(*) FILTER (WHERE a.label = 'support'), count(*) FILTER (WHERE a.label = 'partial_support'),
       count(*) FILTER (WHERE i.importance = 'vital'),
       count(*) FILTER (WHERE i.importance = 'vital' AND a.label = 'support'),
       count(*) FILTER (WHERE i.importance = 'vital' AND a.label = 'partial_support')
FROM annotation_nuggetassignment a
JOIN annotation_response r ON r.id = a.response_id
JOIN annotation_run u ON u.id = r.run_id
LEFT JOIN annotation_nuggetimportancejudgment i ON i.nugget_id = a.nugget_id AND i.judge_id = a.judge_id
WHERE a.judge_id = %s AND u.collection_id = %s
GROUP BY a.response_id
"""
LABELS = ("support", "partial_support", "not_support")


def answers_file(scratch: Path, runs: int, topics: int) -> Path:
    path = scratch / "answers.jsonl"
    with open(path, "w") as out:
        for r in range(runs):
            for t in range(topics):
                answer = [
                    {"text": f"Sentence {i} of run {r} on topic {t}.", "citations": [0]} for i in range(4)
                ]
                record = {"run_id": f"run{r:02d}", "topic_id": f"{t}", "topic": f"question {t}"}
                out.write(
                    json.dumps(record | {"references": ["d0"], "response_length": 32, "answer": answer})
                    + "\n"
                )
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=90)
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--nuggets", type=int, default=30)
    args = parser.parse_args()
    scratch = django_with_temp_database()

    from django.db import connection
    from nuggetizer.core.metrics import calculate_global_metrics

    from annotation.collection.io import run_import
    from annotation.models import Collection, Judge, Nugget, Response, Turn
    from annotation.rag_nuggets.writer import (
        AssignmentRow,
        ImportanceRow,
        NuggetDraft,
        importance_judgments_upsert,
        nugget_assignments_upsert,
        nugget_list_replace,
    )
    from judging.measures.rag_nuggets import SCORE_NAMES
    from judging.scores.rag_nuggets import nugget_scores

    rng = random.Random(0)
    collection = Collection.objects.create(name="rag24-nuggets-bench")
    start = time.perf_counter()
    run_import(path=answers_file(scratch, args.runs, args.topics), collection=collection)
    judge = Judge.objects.create(name="gpt-4o", kind=Judge.Kind.LLM)
    importance: dict[int, str] = {}
    for turn in Turn.objects.filter(collection=collection):
        drafts = [NuggetDraft(str(k + 1), f"nugget {k} of {turn.turn_id}") for k in range(args.nuggets)]
        nugget_list_replace(judge=judge, turn=turn, nuggets=drafts)
    nuggets: dict[int, list[int]] = {}
    for pk, turn_pk in Nugget.objects.filter(judge=judge).values_list("pk", "turn_id"):
        nuggets.setdefault(turn_pk, []).append(pk)
        importance[pk] = rng.choice(("vital", "okay"))
    importance_judgments_upsert(
        judge=judge,
        collection=collection,
        rows=[ImportanceRow(pk, value) for pk, value in importance.items()],
        condition="machine",
    )
    records: dict[str, list[dict]] = {}
    by_run: dict[str, list[AssignmentRow]] = {}
    for response_pk, turn_pk, run, qid in Response.objects.filter(run__collection=collection).values_list(
        "pk", "turn_id", "run__name", "turn__turn_id"
    ):
        labelled = [(pk, rng.choice(LABELS)) for pk in nuggets[turn_pk]]
        by_run.setdefault(run, []).extend(AssignmentRow(response_pk, pk, label) for pk, label in labelled)
        records.setdefault(run, []).append(
            {
                "qid": qid,
                "nuggets": [{"importance": importance[pk], "assignment": label} for pk, label in labelled],
            }
        )
    # A run at a time, as a track loads one assignments file per run.
    for rows in by_run.values():
        nugget_assignments_upsert(judge=judge, collection=collection, rows=rows, condition="machine")
    assignments = sum(len(rows) for rows in by_run.values())
    print(
        f"setup: {args.runs} runs x {args.topics} topics x {args.nuggets} nuggets, {assignments:,} assignments "
        f"written through the bulk writers in {time.perf_counter() - start:.1f} s"
    )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")

    start = time.perf_counter()
    scores = nugget_scores(collection=collection, judge=judge)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    reference = {run: calculate_global_metrics(answers) for run, answers in records.items()}
    baseline = time.perf_counter() - start
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(RAW_SQL, [judge.pk, collection.pk])
        raw = cursor.fetchall()
    sql = time.perf_counter() - start
    assert len(raw) == args.runs * args.topics
    for run, values in reference.items():
        assert all(scores["runs"][run][name] == values[name] for name in SCORE_NAMES), run  # type: ignore[literal-required]
    verdict = "ok" if ours < TARGET_S else "TOO SLOW"
    print(
        f"nugget_scores, {assignments:,} assignments of {args.runs * args.topics:,} answers (DB read included): "
        f"{ours:.2f} s ({verdict}, target < {TARGET_S:.0f} s); nuggetizer's calculate_global_metrics on the same "
        f"records in memory {baseline:.2f} s (ratio {ours / baseline:.2f}x); one raw SQL aggregate of the "
        f"counts {sql:.2f} s (ratio {ours / sql:.2f}x)"
    )
    if ours >= TARGET_S:
        sys.exit(1)


if __name__ == "__main__":
    main()
