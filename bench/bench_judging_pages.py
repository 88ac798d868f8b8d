"""The quality, judges, run-report, support and live-agreement pages at real size: what their figures
cost in the request before they were stored, and what the pages answer in once stored, against a trivial
page; and the agreement ranking form's judge menu (annotation.judge_menus.judge_names_by_task).

Builds the real-size collection (devtools/realsize.py) in a throwaway database; for each page the compute
function called directly (the in-request work of before, and the worker's now), the page's first view
(which queues the report), and the page once the report is done, best of BENCH_BEST_OF, through Django's
test client as an organiser. The baseline, read the same way, is the New collection page.

    DEBUG=1 PG_PORT=.. .venv/bin/python bench/bench_judging_pages.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database  # noqa: E402

BEST_OF = int(os.environ.get("BENCH_BEST_OF", "3"))


def main() -> None:
    django_with_temp_database()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from annotation.judge_menus import judge_names_by_task, judges_with_labels
    from devtools.realsize import REAL, realsize_build
    from judging.agreement.live import live_compute
    from judging.agreement.selectors import TASKS
    from judging.models import ReportResult
    from judging.quality.judges.stored import judges_compute
    from judging.quality.runs.stored import judged_compute, judged_params
    from judging.quality.selectors import QualitySettings
    from judging.quality.stored import quality_compute, quality_params
    from judging.reports.tasks import report_run
    from judging.support.stored import leaderboard_compute

    settings.ALLOWED_HOSTS = ["*"]
    started = time.perf_counter()
    collection = realsize_build(size=REAL).collection
    print(f"collection built in {time.perf_counter() - started:.0f} s; load {os.getloadavg()[0]:.1f}")
    client = Client()
    client.force_login(
        get_user_model().objects.create_user(username="bench-org", is_staff=True, is_superuser=True)
    )

    def get_ms(url: str) -> float:
        start = time.perf_counter()
        response = client.get(url)
        assert response.status_code in (200, 400), (url, response.status_code)
        return (time.perf_counter() - start) * 1000

    def best(url: str) -> float:
        return min(get_ms(url) for _ in range(BEST_OF + 1))

    name = collection.name
    support = judges_with_labels(collection=collection, task="support").first()
    baseline = best(reverse("console-collection-new"))
    pages = [
        (
            "quality runs (judged@k)",
            reverse("judging:quality-runs", args=[name]),
            judged_compute,
            judged_params(judge="", depth=None),
        ),
        (
            "quality judges",
            reverse("judging:quality-judges", args=[name]),
            judges_compute,
            {"reference": None},
        ),
        (
            "quality dashboard",
            reverse("judging:quality-dashboard", args=[name]),
            quality_compute,
            quality_params(settings=QualitySettings(), adjudicated=None),
        ),
        (
            "support leaderboard",
            reverse("support-leaderboard", args=[name]),
            leaderboard_compute,
            {"judge": support.pk if support else None, "compare": None, "by": "weighted_recall"},
        ),
        (
            "live agreement JSON",
            reverse("judging:agreement-live-data", args=[name]),
            live_compute,
            {"task": "relevance"},
        ),
    ]
    print(f"baseline page {baseline:.1f} ms (best of {BEST_OF})")
    print(
        f"{'page':30} {'in request':>11} {'first view':>11} {'worker':>9} {'stored view':>12} {'÷ baseline':>11}"
    )
    for title, url, compute, params in pages:
        start = time.perf_counter()
        compute(collection=collection, params=params)
        in_request = (time.perf_counter() - start) * 1000
        first = get_ms(url)
        worker = 0.0
        for row in ReportResult.objects.exclude(status=ReportResult.Status.DONE):
            start = time.perf_counter()
            report_run(report_id=row.pk)
            worker += (time.perf_counter() - start) * 1000
        shown = best(url)
        print(
            f"{title:30} {in_request:9.0f}ms {first:9.1f}ms {worker:7.0f}ms {shown:10.1f}ms {shown / baseline:10.2f}×"
        )
    tasks = list(TASKS)
    start = time.perf_counter()
    for _ in range(BEST_OF):
        judge_names_by_task(collection=collection, tasks=tasks)
    menu = (time.perf_counter() - start) * 1000 / BEST_OF
    print(
        f"judge menu of {len(tasks)} tasks (judge_names_by_task): {menu:.1f} ms = {menu / baseline:.2f}× baseline"
    )


main()
