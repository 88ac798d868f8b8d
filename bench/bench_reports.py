"""The agreement reports at real size: what they cost in the request before they were stored, what the
task worker spends on them now, and what their pages answer in once stored, against a trivial page.

Builds the real-size collection (devtools/realsize.py, as bench_pages.py does) in a throwaway database,
then for the comparison of two judges (with its ranking beside it), the run ranking and the campaign
report: the compute function called directly (today's in-request work, and the worker's), the page's
first view (which queues the report), and the page once the report is done, best of BENCH_BEST_OF, through
Django's test client as an organiser. The baseline, read the same way, is the New collection page.

    DEBUG=1 PG_PORT=.. .venv/bin/python bench/bench_reports.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_with_temp_database  # noqa: E402

BEST_OF = int(os.environ.get("BENCH_BEST_OF", "3"))


def main() -> None:
    django_with_temp_database()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from annotation.judge_menus import judges_with_labels
    from annotation.models import Judge
    from devtools.realsize import REAL, realsize_build
    from judging.agreement import stored
    from judging.models import ReportResult
    from judging.reports.tasks import report_run

    settings.ALLOWED_HOSTS = ["*"]
    shared = ROOT.parent / "shared" / "data" / "ikat2024"
    topics, qrels = shared / "2024_test_topics.json", shared / "2024_test_qrels.trec"
    started = time.perf_counter()
    built = realsize_build(
        size=REAL,
        topics_path=topics if topics.is_file() else None,
        qrels_path=qrels if qrels.is_file() else None,
    )
    print(f"collection built in {time.perf_counter() - started:.0f} s; load {os.getloadavg()[0]:.1f}")
    collection = built.collection
    judges = list(judges_with_labels(collection=collection, task="relevance"))
    human = next(j for j in judges if j.kind != Judge.Kind.LLM)
    machine = next(j for j in judges if j.kind == Judge.Kind.LLM)
    client = Client()
    client.force_login(
        get_user_model().objects.create_user(username="bench-org", is_staff=True, is_superuser=True)
    )

    def get_ms(url: str, query: dict[str, str]) -> float:
        start = time.perf_counter()
        response = client.get(url, query)
        assert response.status_code in (200, 400), (url, response.status_code)
        return (time.perf_counter() - start) * 1000

    def best(url: str, query: dict[str, str]) -> float:
        return min(get_ms(url, query) for _ in range(BEST_OF + 1))

    name = collection.name
    baseline = best(reverse("console-collection-new"), {})
    pair = {"a": human.name, "b": machine.name}
    reports = [
        (
            "comparison (relevance, with the ranking beside)",
            reverse("judging:agreement-report", args=[name]),
            {"task": "relevance", **pair},
            stored.comparison_compute,
            {
                "task": "relevance",
                "a": human.pk,
                "b": machine.pk,
                "topics": [],
                "condition": None,
                "threshold": None,
            },
        ),
        (
            "run ranking (ndcg@5)",
            reverse("judging:agreement-ranking", args=[name]),
            {"measure": "ndcg@5", **pair},
            stored.ranking_compute,
            {"measure": "ndcg@5", "a": human.pk, "b": machine.pk, "importance_judge": None},
        ),
        (
            "campaign report",
            reverse("judging:agreement-campaign", args=[name]),
            {},
            stored.campaign_compute,
            {},
        ),
    ]
    print(f"judges {human.name} and {machine.name}; baseline page {baseline:.1f} ms (best of {BEST_OF})")
    print(
        f"{'report':50} {'in request':>11} {'first view':>11} {'worker':>9} {'stored view':>12} {'÷ baseline':>11}"
    )
    for title, url, query, compute, params in reports:
        start = time.perf_counter()
        compute(collection=collection, params=params)
        in_request = (time.perf_counter() - start) * 1000
        first = get_ms(url, query)
        row = ReportResult.objects.exclude(status=ReportResult.Status.DONE).latest("created_at")
        start = time.perf_counter()
        assert report_run(report_id=row.pk).status == ReportResult.Status.DONE
        worker = (time.perf_counter() - start) * 1000
        shown = best(url, query)
        print(
            f"{title:50} {in_request:9.0f}ms {first:9.1f}ms {worker:7.0f}ms {shown:10.1f}ms {shown / baseline:10.2f}×"
        )
        with CaptureQueriesContext(connection) as queries:
            client.get(url, query)
        slowest = sorted(queries.captured_queries, key=lambda q: -float(q["time"]))[:2]
        for q in slowest:
            print(f"    {len(queries)} queries; slowest {float(q['time']) * 1000:.1f} ms: {q['sql'][:300]}")


main()
