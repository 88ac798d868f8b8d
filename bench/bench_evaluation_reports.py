"""The evaluation, estimate and nugget score pages on a collection of real size: what a view costs now that
their figures are stored reports, against what computing them in the request cost, beside a baseline page.

Builds the real-size collection (devtools/realsize.py, as bench_pages.py does: the iKAT 2024 conversations
and official qrels when ../shared/data is present, 45 runs, 5 machine judges) and a TREC RAG nugget
evaluation beside it (--nugget-runs x --nugget-topics answers, --nuggets per topic, one assignment label
per answer and nugget: 90 x 300 x 30 is the 810,000 of a TREC RAG track) in a throwaway PostgreSQL
database. For each page with its choices made, through Django's test client:

- `compute`: the page's compute function called directly, what the request used to do (best of 3);
- `first view`: the view that finds no stored figures, queues their computation and answers "computing";
- `worker`: the task a worker runs for it (judging.reports.tasks.report_run);
- `stored view`: the view that shows the stored figures (best of BENCH_BEST_OF), its queries, and its
  time over the baseline's.

The baseline, read the same way in the same invocation, is the organiser's New collection page (a signed-in
page through every middleware whose work does not depend on the data). Goal: every view a few ms over the
baseline, whatever the data's size.

Run: DEBUG=1 PG_PORT=.. .venv/bin/python bench/bench_evaluation_reports.py [--nugget-runs 90 --nugget-topics 300 --nuggets 30]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_with_temp_database  # noqa: E402

BEST_OF = int(os.environ.get("BENCH_BEST_OF", "5"))
LABELS = ("support", "partial_support", "not_support")


def rag_evaluation(scratch: Path, *, runs: int, topics: int, nuggets: int) -> tuple[object, object, int]:
    """A collection of RAG answers with one judge's nugget lists, vital/okay labels and assignments."""
    import json

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

    rng = random.Random(0)
    path = scratch / "answers.jsonl"
    with open(path, "w") as out:
        for r in range(runs):
            for t in range(topics):
                answer = [
                    {"text": f"Sentence {i} of run {r} on topic {t}.", "citations": [0]} for i in range(4)
                ]
                record = {"run_id": f"rag{r:02d}", "topic_id": f"{t}", "topic": f"question {t}"}
                out.write(
                    json.dumps(record | {"references": ["d0"], "response_length": 32, "answer": answer})
                    + "\n"
                )
    collection = Collection.objects.create(name="rag-bench")
    run_import(path=path, collection=collection)
    judge = Judge.objects.create(name="rag-bench-gpt-4o", kind=Judge.Kind.LLM)
    for turn in Turn.objects.filter(collection=collection):
        nugget_list_replace(
            judge=judge, turn=turn, nuggets=[NuggetDraft(str(k + 1), f"nugget {k}") for k in range(nuggets)]
        )
    by_turn: dict[int, list[int]] = {}
    for pk, turn_pk in Nugget.objects.filter(judge=judge).values_list("pk", "turn_id"):
        by_turn.setdefault(turn_pk, []).append(pk)
    importance_judgments_upsert(
        judge=judge,
        collection=collection,
        rows=[ImportanceRow(pk, rng.choice(("vital", "okay"))) for pks in by_turn.values() for pk in pks],
        condition="machine",
    )
    by_run: dict[int, list[AssignmentRow]] = {}
    for response_pk, turn_pk, run_pk in Response.objects.filter(run__collection=collection).values_list(
        "pk", "turn_id", "run_id"
    ):
        by_run.setdefault(run_pk, []).extend(
            AssignmentRow(response_pk, pk, rng.choice(LABELS)) for pk in by_turn[turn_pk]
        )
    for rows in by_run.values():
        nugget_assignments_upsert(judge=judge, collection=collection, rows=rows, condition="machine")
    return collection, judge, sum(len(rows) for rows in by_run.values())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nugget-runs", type=int, default=90)
    parser.add_argument("--nugget-topics", type=int, default=300)
    parser.add_argument("--nuggets", type=int, default=30)
    parser.add_argument("--smoke", action="store_true", help="a tiny collection, to check the bench runs")
    args = parser.parse_args()
    scratch = django_with_temp_database()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from annotation.models import Judge
    from devtools.realsize import REAL, Size, realsize_build
    from judging.evaluation import reports as evaluation_reports
    from judging.hybrid import reports as hybrid_reports
    from judging.models import ReportResult
    from judging.rag_nuggets import reports as nugget_reports
    from judging.reports.tasks import report_run

    settings.ALLOWED_HOSTS = ["*"]
    shared = ROOT.parent / "shared" / "data" / "ikat2024"
    topics, qrels = shared / "2024_test_topics.json", shared / "2024_test_qrels.trec"
    started = time.perf_counter()
    built = realsize_build(
        size=Size(
            topics=2,
            turns_per_topic=6,
            ranked_runs=3,
            answer_runs=1,
            depth=6,
            candidates=10,
            pools=1,
            assessors=2,
            campaigns=1,
            campaign_topics=1,
        )
        if args.smoke
        else REAL,
        topics_path=topics if topics.is_file() else None,
        qrels_path=qrels if qrels.is_file() else None,
    )
    rag, rag_judge, assignments = rag_evaluation(
        scratch, runs=args.nugget_runs, topics=args.nugget_topics, nuggets=args.nuggets
    )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(
        "collection: "
        + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in built.counts.items())
        + f"; nugget evaluation: {args.nugget_runs} runs x {args.nugget_topics} topics, {assignments:,} "
        f"assignments (built in {time.perf_counter() - started:.0f} s)"
    )
    name = built.collection.name
    human = Judge.objects.filter(name=f"{name}-nist-qrels").first() or Judge.objects.get(
        name=f"{name}-llama-3"
    )
    machine = f"{name}-gpt-4o"
    run = built.collection.runs.order_by("name").first().name  # type: ignore[union-attr]
    evaluation = {"judge": human.name, "rel": 2}
    estimate = {
        "task": "relevance",
        "measure": "nDCG@5",
        "unit": "turn",
        "method": "ppi++",
        "alpha": 0.05,
        "fpc": False,
        "rel_threshold": 2,
        "machine_judge": machine,
        "gold_judge": None,
        "sample": None,
        "human_judge": [human.name],
    }
    panel = {
        "measure": "nDCG@5",
        "method": "ppi++",
        "human_judge": [human.name],
        "machine_judge": machine,
        "sample": None,
    }
    nuggets = {
        "judge": rag_judge.name,
        "importance_judge": None,
        "nuggets_judge": None,
        "answered_only": False,
    }
    pages = [
        (
            "evaluation-runs",
            reverse("judging:evaluation-runs", args=[name]),
            {"judge": human.name},
            built.collection,
            evaluation_reports.evaluation_runs_compute,
            evaluation,
        ),
        (
            "evaluation-run",
            reverse("judging:evaluation-run", args=[name, run]),
            {"judge": human.name},
            built.collection,
            evaluation_reports.evaluation_run_compute,
            {**evaluation, "run": run},
        ),
        (
            "evaluation-runs (estimate panel)",
            reverse("judging:evaluation-runs", args=[name]),
            {
                "hybrid-human_judge": human.name,
                "hybrid-machine_judge": machine,
                "hybrid-method": "ppi++",
                "hybrid-measure": "nDCG@5",
            },
            built.collection,
            hybrid_reports.evaluation_estimate_compute,
            panel,
        ),
        (
            "hybrid-estimate",
            reverse("judging:hybrid-estimate", args=[name]),
            {"task": "relevance", "human_judge": human.name, "machine_judge": machine},
            built.collection,
            hybrid_reports.hybrid_estimate_compute,
            estimate,
        ),
        (
            "nugget-scores",
            reverse("judging:nugget-scores", args=["rag-bench"]),
            {"judge": rag_judge.name},
            rag,
            nugget_reports.nugget_scores_compute,
            nuggets,
        ),
        (
            "nugget-scores-run",
            reverse("judging:nugget-scores-run", args=["rag-bench", "rag00"]),
            {"judge": rag_judge.name},
            rag,
            nugget_reports.nugget_scores_run_compute,
            {**nuggets, "run": "rag00"},
        ),
    ]

    organiser = get_user_model().objects.create_user(
        username="bench-organiser", is_staff=True, is_superuser=True
    )
    client = Client()
    client.force_login(organiser)

    def view(url: str, query: dict[str, str]) -> tuple[float, int, int]:
        # The build's queries fill DEBUG's query log (9,000 kept): emptied first, each view's are all counted.
        reset_queries()
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url, query)
            elapsed = (time.perf_counter() - start) * 1000
        return elapsed, len(queries), response.status_code

    def best_view(url: str, query: dict[str, str]) -> tuple[float, int, int]:
        view(url, query)
        return min((view(url, query) for _ in range(BEST_OF)), key=lambda r: r[0])

    baselines = [best_view(reverse("console-collection-new"), {})[0]]
    rows = []
    for label, url, query, collection, compute, params in pages:
        computed = []
        for _ in range(3):
            start = time.perf_counter()
            compute(collection=collection, params=params, progress=lambda *a: None)
            computed.append((time.perf_counter() - start) * 1000)
        first_ms, _queries, first_status = view(url, query)
        pending = list(
            ReportResult.objects.exclude(status=ReportResult.Status.DONE).values_list("pk", flat=True)
        )
        start = time.perf_counter()
        for pk in pending:
            report_run(report_id=pk)
        worker_ms = (time.perf_counter() - start) * 1000
        stored_ms, stored_queries, status = best_view(url, query)
        assert first_status == status == 200, (label, first_status, status)
        rows.append((label, min(computed), first_ms, worker_ms, stored_ms, stored_queries))
    baselines.append(best_view(reverse("console-collection-new"), {})[0])
    baseline = min(baselines)
    print(f"baseline (New collection page, best of the reads before and after): {baseline:.1f} ms\n")
    print(
        f"{'page':34} {'compute ms':>10} {'first view':>10} {'worker ms':>10} {'stored view':>11} "
        f"{'queries':>7} {'x base':>6} {'compute/view':>12}"
    )
    for label, compute_ms, first_ms, worker_ms, stored_ms, queries in rows:
        print(
            f"{label:34} {compute_ms:10.1f} {first_ms:10.1f} {worker_ms:10.1f} {stored_ms:11.1f} "
            f"{queries:7d} {stored_ms / baseline:6.2f} {compute_ms / stored_ms:12.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
