"""The quality, judges, run-report, support and live-agreement pages at real size: what their figures
cost in the request before they were stored, and what the pages answer in once stored, against a trivial
page; and the judge menus (annotation/judge_menus.py), read from the kept `JudgeLabels` beside the EXISTS
per judge over the label tables they were before (kept here only, as the baseline).

Builds the real-size collection (devtools/realsize.py) in a throwaway database; for each page the compute
function called directly (the in-request work of before, and the worker's now), the page's first view
(which queues the report), and the page once the report is done, best of BENCH_BEST_OF, through Django's
test client as an organiser. The baseline, read the same way, is the New collection page.

`--database NAME` reads an existing database of the cluster instead (say a copy of the scale-10 build,
`pg_dump -Fc | pg_restore` into a database of its own): it is migrated first (which builds the judges'
kept rows where they are new) and kept afterwards; `--menus-only` times only the menus.

    DEBUG=1 PG_PORT=.. .venv/bin/python bench/bench_judging_pages.py [--database s10 --menus-only]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import best_ms, database_url, django_with_temp_database  # noqa: E402

BEST_OF = int(os.environ.get("BENCH_BEST_OF", "3"))


def django_on(name: str) -> float:
    """Django on the cluster's existing database `name`, migrated; the seconds the migrate took."""
    os.environ["DATABASE_URL"] = database_url(name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    import django
    from django.core.management import call_command

    django.setup()
    start = time.perf_counter()
    call_command("migrate", verbosity=0)
    return time.perf_counter() - start


def exists_menus() -> dict[str, Callable[..., Any]]:
    """The judge menus as they were before the kept rows: an EXISTS per judge over each task's label table
    (the ranking form's, one flag a task), the hand-out's first label by the judge's index, and the
    judges' grade counts as a join and a count."""
    from django.db.models import Count, Exists, IntegerField, OuterRef, Q, Subquery
    from django.db.models.lookups import IsNull

    from annotation.families import label_task
    from annotation.models import Judge, NuggetAssignment, NuggetImportanceJudgment

    def has_labels(collection: Any, task: str) -> Exists:
        declared = label_task(task)
        return Exists(
            declared.model._default_manager.filter(judge=OuterRef("pk"), **{declared.collection: collection})
        )

    def names_by_task(*, collection: Any, tasks: list[str]) -> dict[str, list[str]]:
        flags = {f"has_{i}": has_labels(collection, task) for i, task in enumerate(tasks)}
        either = Q()
        for flag in flags:
            either |= Q(**{flag: True})
        rows = Judge.objects.annotate(**flags).filter(either).order_by("name").values_list("name", *flags)
        return {task: [row[0] for row in rows if row[i + 1]] for i, task in enumerate(tasks)}

    def one_task(*, collection: Any, task: str) -> list[Any]:
        return list(Judge.objects.filter(has_labels(collection, task)).order_by("name"))

    def first_label(labels: Any) -> IsNull:
        first = labels.filter(judge=OuterRef("pk")).order_by("judge").values("pk")[:1]
        return IsNull(Subquery(first, output_field=IntegerField()), False)

    def hand_out(*, collection: Any) -> list[Any]:
        labelled = first_label(
            NuggetImportanceJudgment.objects.filter(nugget__turn__collection=collection)
        ) | first_label(NuggetAssignment.objects.filter(nugget__turn__collection=collection))
        return list(Judge.objects.filter(labelled).exclude(kind=Judge.Kind.ASSESSOR).order_by("name"))

    def grade_counts(*, collection: Any) -> list[Any]:
        return list(
            Judge.objects.filter(relevancejudgments__turn__collection=collection)
            .annotate(n=Count("relevancejudgments"))
            .order_by("name")
        )

    return {
        "names_by_task": names_by_task,
        "one_task": one_task,
        "hand_out": hand_out,
        "counts": grade_counts,
    }


def menus(collection: Any, baseline: float) -> None:
    """Each menu read the old way and from the kept rows, best of BEST_OF, against the baseline page."""
    from annotation.judge_menus import judge_names_by_task, judges_with_label_counts, judges_with_labels
    from annotation.models import Judge
    from judging.agreement.selectors import TASKS

    old = exists_menus()
    tasks = list(TASKS)
    cases = [
        (
            f"agreement ranking form: {len(tasks)} tasks",
            lambda: old["names_by_task"](collection=collection, tasks=tasks),
            lambda: judge_names_by_task(collection=collection, tasks=tasks),
        ),
        (
            "nugget scores form: assignment judges",
            lambda: old["one_task"](collection=collection, task="nugget-assignment"),
            lambda: list(judges_with_labels(collection=collection, task="nugget-assignment")),
        ),
        (
            "RAG nugget hand-out: machine judges",
            lambda: old["hand_out"](collection=collection),
            lambda: list(
                judges_with_labels(
                    collection=collection, task=("nugget-importance", "nugget-assignment")
                ).exclude(kind=Judge.Kind.ASSESSOR)
            ),
        ),
        (
            "pool form, collection page: grade counts",
            lambda: old["counts"](collection=collection),
            lambda: list(judges_with_label_counts(collection=collection, task="relevance")),
        ),
    ]
    print(f"judge menus, best of {BEST_OF} (load {os.getloadavg()[0]:.1f}):")
    print(f"{'menu':42} {'EXISTS':>10} {'kept':>9} {'EXISTS ÷ kept':>14} {'kept ÷ baseline':>16}")
    for title, before, after in cases:
        then, now = best_ms(before, BEST_OF), best_ms(after, BEST_OF)
        print(f"{title:42} {then:8.1f}ms {now:7.2f}ms {then / now:13.0f}× {now / baseline:15.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="an existing database of the cluster, migrated and kept")
    parser.add_argument("--menus-only", action="store_true", help="time only the judge menus")
    args = parser.parse_args()
    if args.database:
        migrated = django_on(args.database)
        print(f"database {args.database} migrated in {migrated:.1f} s; load {os.getloadavg()[0]:.1f}")
    else:
        django_with_temp_database()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from annotation.judge_menus import judges_with_labels
    from annotation.models import Collection
    from devtools.realsize import REAL, realsize_build
    from judging.agreement.live import live_compute
    from judging.models import ReportResult
    from judging.quality.judges.stored import judges_compute
    from judging.quality.runs.stored import judged_compute, judged_params
    from judging.quality.selectors import QualitySettings
    from judging.quality.stored import quality_compute, quality_params
    from judging.reports.tasks import report_run
    from judging.support.stored import leaderboard_compute

    settings.ALLOWED_HOSTS = ["*"]
    if args.database:
        collection = Collection.objects.order_by("pk").first()
        assert collection is not None, f"no collection in {args.database}"
    else:
        started = time.perf_counter()
        collection = realsize_build(size=REAL).collection
        print(f"collection built in {time.perf_counter() - started:.0f} s; load {os.getloadavg()[0]:.1f}")
    client = Client()
    # Kept in a database given with --database, so made once there.
    organiser, _ = get_user_model().objects.get_or_create(
        username="bench-org", defaults={"is_staff": True, "is_superuser": True}
    )
    client.force_login(organiser)

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
    if args.menus_only:
        print(f"baseline page {baseline:.1f} ms (best of {BEST_OF})")
        menus(collection, baseline)
        return
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
    menus(collection, baseline)


main()
