"""Every page's server time and query count on a collection of real size, against a trivial page.

Builds the real-size collection (devtools/realsize.py: the iKAT 2024 conversations and official qrels
when ../shared/data is present, 45 runs, 3 pools of 17-25k pairs, 5 machine judges, 10 assessors with
work in progress, support work and 2 crowd campaigns) in a throwaway PostgreSQL database, then reads every
page of the URL configuration as an organiser and as an assessor through Django's test client: the
request a browser sends, through every middleware, with the session and the permission checks.

Each page is read BEST_OF times (BENCH_BEST_OF) and its fastest time kept. The baseline, read the same
way in the same invocation, is the organiser's New collection page: a signed-in page through every
middleware, the session and the base template, whose work does not depend on the data (this machine is
shared, so compare ratios). Goals: every page under 300 ms of server time, the home page and a
collection's Files page under 100 ms.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_with_temp_database  # noqa: E402

BEST_OF = int(os.environ.get("BENCH_BEST_OF", "3"))
GOAL_MS, FAST_GOAL_MS = 300.0, 100.0
FAST_PAGES = ("home", "console-collection")


def main() -> int:
    django_with_temp_database()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from devtools.pagewalk import PageResult, World, page_get, pages
    from devtools.realsize import REAL, realsize_build

    settings.ALLOWED_HOSTS = ["*"]
    shared = ROOT.parent / "shared" / "data" / "ikat2024"
    topics, qrels = shared / "2024_test_topics.json", shared / "2024_test_qrels.trec"
    started = time.perf_counter()
    built = realsize_build(
        size=REAL,
        topics_path=topics if topics.is_file() else None,
        qrels_path=qrels if qrels.is_file() else None,
    )
    print(
        "collection: "
        + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in built.counts.items())
        + f" (built in {time.perf_counter() - started:.0f} s)"
    )
    User = get_user_model()
    organiser = User.objects.create_user(username="bench-organiser", is_staff=True, is_superuser=True)
    assessor = User.objects.get(username=f"{built.collection.name}-assessor-01")
    world = World.of(built.collection, assessor)

    def best(client: Client, url: str, route: str, who: str) -> PageResult:
        results = [page_get(client, url, route=route, who=who) for _ in range(BEST_OF + 1)][1:]
        return min(results, key=lambda r: r.ms)

    rows: list[PageResult] = []
    baselines: list[float] = []
    organiser_client = Client()
    organiser_client.force_login(organiser)
    for who, user in (("organiser", organiser), ("assessor", assessor)):
        client = Client()
        client.force_login(user)
        if who == "organiser":
            baselines.append(best(client, reverse("console-collection-new"), "baseline", who).ms)
        for route, url in pages(world):
            result = best(client, url, route.name, who)
            if result.status == 200:
                rows.append(result)
    baselines.append(best(organiser_client, reverse("console-collection-new"), "baseline", "organiser").ms)
    baseline = min(baselines)
    print(f"baseline (New collection page, best of the reads before and after): {baseline:.1f} ms\n")
    print(f"{'page':42} {'who':9} {'queries':>7} {'ms':>8} {'x base':>7}")
    slow = []
    for row in sorted(rows, key=lambda r: -r.ms):
        goal = FAST_GOAL_MS if row.route in FAST_PAGES else GOAL_MS
        mark = "" if row.ms <= goal else f"  over {goal:.0f} ms"
        if mark:
            slow.append(row)
        print(f"{row.route:42} {row.who:9} {row.queries:7d} {row.ms:8.1f} {row.ms / baseline:7.1f}{mark}")
    print(
        f"\n{len(rows)} pages read; {len(rows) - len(slow)} within their goal, {len(slow)} over; "
        f"slowest {rows and max(r.ms for r in rows):.0f} ms; most queries {max(r.queries for r in rows)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
