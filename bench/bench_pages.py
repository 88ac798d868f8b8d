"""Every page's server time and query count at today's real size and at ten times it, side by side.

`bench/bench_pages.py [--scale 1 10]` (the default) builds, for each scale in turn, the real-size
collection that many times over (devtools/realsize.py, `load_real_size --scale N`: the iKAT 2024
conversations and official qrels when ../shared/data is present, then generated conversations of the
same shape; at scale 1 45 runs, 3 pools, 5 machine judges, 10 assessors with work in progress, support
work, 2 crowd campaigns and a nugget evaluation of the answer runs; at scale 10 2,180 turns, 90 runs and
50 assessors) in a database of its own, and reads every page of the URL configuration as an organiser
and as an assessor through Django's test client: the request a browser sends, through every middleware,
with the session and the permission checks.

Each scale runs in a process of its own, on a database of its own that is dropped before the next is
built, so that the scale-1 pages read a scale-1 database (and no cache or connection carries over). In
each, after the build:
  1. the baseline, the organiser's New collection page (a signed-in page whose work does not depend on the
     data), is read, as it is again at the end; the phase's baseline is the faster of the two;
  2. every page is read once: a first view of a report may queue its computation on the task worker and
     answer "computing";
  3. the queued tasks are run to completion (the project's task worker, in batch mode: with nothing
     queued, nothing happens);
  4. every page is read BEST_OF more times (BENCH_BEST_OF, 3) and its fastest time kept; a page slower
     than SLOW_S on a read is not read again (it is far over its goal whatever the next read gives).

Then, for each larger scale against the smallest (`--scale 1 5 10` prints two tables), per page: ms at
both, their ratio, the query counts and marks where the larger scale's time is over 1.5x the smaller's,
over 300 ms, or its query count differs.
The machine is shared: compare ratios, and the baselines, which are printed with the load average.

A scale-10 build takes about three minutes; to measure a page against one already built, name the databases
instead: `bench/bench_pages.py --database s1 s10 [--only console-dashboard judging:quality-runs]` walks
the collection `load_real_size` built in each (`--collection`, its `--name`; the databases on the cluster
at PG_PORT, migrated, smallest first), each in a process of its own, the steps above but the build, and
reports them side by side the same way. The walk writes there (its organiser, its job rows, the stored
reports it computes): walk copies, never a database someone else is reading. `--only` walks only the
routes named (and the baseline), with or without `--database`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_with_database, django_with_temp_database  # noqa: E402

if TYPE_CHECKING:
    from annotation.models import Collection  # imported in the phase, once Django is set up

BEST_OF = int(os.environ.get("BENCH_BEST_OF", "3"))
SLOW_S = 2.0
GOAL_MS = 300.0
# Pages opened all day long, with a goal of their own.
FAST_GOAL_MS, FAST_PAGES = 100.0, ("home", "console-collection")
RATIO_GOAL = 1.5


def phase(
    label: str, out: Path, *, scale: int, base: str, database: str | None, name: str, only: list[str]
) -> None:
    """Build at `scale` (or open the built `database`), walk, drain the task queue, walk again measuring;
    write the figures to `out` under `label`."""
    if database is None:
        django_with_temp_database()
    else:
        django_with_database(database)
    # The walk reads pages its reader may not (an assessor on an organiser's page): not news here.
    logging.getLogger("django.request").setLevel(logging.ERROR)
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse
    from django_tasks_db.models import DBTaskResult

    from devtools.pagewalk import PageResult, World, page_get, pages
    from devtools.realsize import SIZES, realsize_build, realsize_counts

    settings.ALLOWED_HOSTS = ["*"]
    started = time.perf_counter()
    if database is None:
        shared = ROOT.parent / "shared" / "data" / "ikat2024"
        topics, qrels = shared / "2024_test_topics.json", shared / "2024_test_qrels.trec"
        collection = realsize_build(
            name=name or "ikat-real-size",
            size=SIZES[base].scaled(scale),
            topics_path=topics if topics.is_file() else None,
            qrels_path=qrels if qrels.is_file() else None,
            say=lambda message: print(f"  scale {scale}: {message}", flush=True),
        ).collection
    else:
        collection = _built_collection(name)
    build_s = time.perf_counter() - started if database is None else None
    counts = realsize_counts(collection)
    title = f"scale {scale}" if database is None else f"database {database}"
    listed = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())
    built = "" if build_s is None else f" (built in {build_s:.0f} s)"
    print(f"{title}: {listed}{built}", flush=True)
    User = get_user_model()
    organiser, _ = User.objects.get_or_create(
        username="bench-organiser", defaults={"is_staff": True, "is_superuser": True}
    )
    assessor = User.objects.get(username=f"{collection.name}-assessor-01")
    world = World.of(collection, assessor)
    clients = {}
    for who, user in (("organiser", organiser), ("assessor", assessor)):
        clients[who] = Client()
        clients[who].force_login(user)
    walked = [(route, url) for route, url in pages(world) if not only or route.name in only]
    missing = set(only) - {route.name for route, _ in walked}
    if missing:
        raise SystemExit(f"no such page in the walk: {', '.join(sorted(missing))}")

    def best(who: str, url: str, route: str) -> PageResult:
        results: list[PageResult] = []
        for _ in range(BEST_OF):
            results.append(page_get(clients[who], url, route=route, who=who))
            if results[-1].ms > SLOW_S * 1000:
                break
        return min(results, key=lambda r: r.ms)

    baseline_url = reverse("console-collection-new")
    page_get(clients["organiser"], baseline_url, route="baseline", who="organiser")
    baselines = [best("organiser", baseline_url, "baseline").ms]

    started = time.perf_counter()
    for who in clients:
        for route, url in walked:
            page_get(clients[who], url, route=route.name, who=who)
    first_s = time.perf_counter() - started
    queued = DBTaskResult.objects.ready().count()
    started = time.perf_counter()
    call_command("task_worker", batch=True, startup_delay=False, verbosity=0)
    drain_s = time.perf_counter() - started
    print(f"{title}: first walk {first_s:.0f} s; {queued} tasks queued, run in {drain_s:.0f} s", flush=True)

    rows = [best(who, url, route.name) for who in clients for route, url in walked]
    baselines.append(best("organiser", baseline_url, "baseline").ms)
    left = DBTaskResult.objects.ready().count()
    out.write_text(
        json.dumps(
            {
                "label": label,
                "title": title,
                "counts": counts,
                "build_s": build_s,
                "baseline_ms": min(baselines),
                "queued": queued,
                "drain_s": drain_s,
                "queued_by_measured_walk": left,
                "load": os.getloadavg(),
                "pages": [
                    {"route": r.route, "who": r.who, "status": r.status, "queries": r.queries, "ms": r.ms}
                    for r in rows
                ],
            }
        ),
        encoding="utf-8",
    )


def _built_collection(name: str) -> Collection:
    """The collection `name`, or with none named the database's one collection load_real_size built
    (the one whose first assessor it made)."""
    from django.contrib.auth import get_user_model

    from annotation.models import Collection

    if name:
        return Collection.objects.get(name=name)
    users = set(
        get_user_model().objects.filter(username__endswith="-assessor-01").values_list("username", flat=True)
    )
    built = [c for c in Collection.objects.order_by("name") if f"{c.name}-assessor-01" in users]
    if len(built) != 1:
        raise SystemExit(f"say which collection to walk (--collection): found {[c.name for c in built]}")
    return built[0]


def report(phases: list[dict]) -> int:
    """The phases' figures, then a table of each larger scale against the smallest."""
    for p in phases:
        c = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in p["counts"].items())
        built = "" if p["build_s"] is None else f"; built in {p['build_s']:.0f} s"
        print(
            f"{p['title']}: {c}{built}; baseline (New collection page) "
            f"{p['baseline_ms']:.1f} ms; {p['queued']} tasks queued by the first walk, run in "
            f"{p['drain_s']:.0f} s, {p['queued_by_measured_walk']} left after the measured walk; "
            f"load at its end {' '.join(f'{x:.1f}' for x in p['load'])}"
        )
    for high in phases[1:]:
        _table(phases[0], high)
    print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def _table(low: dict, high: dict) -> None:
    """Each page at the smallest scale and at `high`, side by side with its marks, and how many missed each
    goal."""
    a, b = low["label"], high["label"]
    by_key = [{(r["route"], r["who"]): r for r in p["pages"]} for p in (low, high)]
    keys = sorted(set(by_key[0]) | set(by_key[1]), key=lambda k: -by_key[1].get(k, {"ms": 0})["ms"])
    print(
        f"\n{a} against {b}:\n{'page':40} {'who':9} {f'ms@{a}':>8} {f'ms@{b}':>8} {'ratio':>6} {f'q@{a}':>5} {f'q@{b}':>5}  marks"
    )
    over = {"ratio": 0, "ms": 0, "queries": 0}
    shown = 0
    for key in keys:
        one, ten = by_key[0].get(key), by_key[1].get(key)
        statuses = [(one or {}).get("status"), (ten or {}).get("status")]
        if statuses != [200, 200]:
            if 200 in statuses:
                print(
                    f"{key[0]:40} {key[1]:9} status {statuses[0]} / {statuses[1]}: answers in one phase only"
                )
            continue
        shown += 1
        ratio = ten["ms"] / one["ms"] if one["ms"] else float("inf")
        marks = []
        if ratio > RATIO_GOAL:
            marks.append(f">{RATIO_GOAL}x")
            over["ratio"] += 1
        goal = FAST_GOAL_MS if key[0] in FAST_PAGES else GOAL_MS
        if ten["ms"] > goal:
            marks.append(f">{goal:.0f} ms")
            over["ms"] += 1
        if ten["queries"] != one["queries"]:
            marks.append("queries")
            over["queries"] += 1
        print(
            f"{key[0]:40} {key[1]:9} {one['ms']:8.1f} {ten['ms']:8.1f} {ratio:6.2f} "
            f"{one['queries']:5d} {ten['queries']:5d}  {' '.join(marks)}"
        )
    print(
        f"\n{shown} pages answered in both; at {high['title']}: {over['ratio']} over {RATIO_GOAL}x their "
        f"time at {low['title']}, {over['ms']} over {GOAL_MS:.0f} ms, {over['queries']} with another query count; "
        f"baseline ratio {high['baseline_ms'] / low['baseline_ms']:.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, nargs="+", default=[1, 10], help="Scales to build (1 10).")
    parser.add_argument(
        "--base",
        default="real",
        help="The size the scales multiply: real, or small to try the bench quickly.",
    )
    parser.add_argument(
        "--database",
        nargs="+",
        metavar="NAME",
        help="Walk these databases on the cluster at PG_PORT, already built by load_real_size and migrated, "
        "smallest first, instead of building scales (the walk writes into them: its organiser, stored "
        "reports; use copies).",
    )
    parser.add_argument(
        "--collection",
        default="",
        help="The collection to build (ikat-real-size), or with --database the one load_real_size built "
        "there (its --name; by default the only one it built).",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        metavar="ROUTE",
        help="Walk only these routes (e.g. console-dashboard).",
    )
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is not None:
        database = args.phase if args.database else None
        phase(
            args.phase,
            args.out,
            scale=0 if database else int(args.phase),
            base=args.base,
            database=database,
            name=args.collection,
            only=args.only,
        )
        return 0
    labels = args.database or [str(scale) for scale in sorted(set(args.scale))]
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    phases = []
    with tempfile.TemporaryDirectory(prefix="assay-bench-pages-") as scratch:
        for i, label in enumerate(labels):
            out = Path(scratch) / f"phase-{i}.json"
            # A process (and database) per phase: nothing of one phase's data is cached for the next.
            command = [sys.executable, __file__, "--phase", label, "--base", args.base, "--out", str(out)]
            command += ["--collection", args.collection]
            if args.database:
                command += ["--database", *args.database]
            if args.only:
                command += ["--only", *args.only]
            subprocess.run(command, check=True)
            phases.append(json.loads(out.read_text(encoding="utf-8")))
    return report(phases)


if __name__ == "__main__":
    sys.exit(main())
