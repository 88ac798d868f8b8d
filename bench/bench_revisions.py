"""What a trigger on the judgments table costs a grade: the one writer's statement
(relevance_judgment_submit, the upsert the assessor page's grade statement embeds) timed with the
trigger enabled and disabled, in alternating slices of one invocation, on a throwaway database. The
trigger is the table revision's (core/revisions.py; `--trigger revision`, the default) or the judges'
label counts' (annotation/labels/judge_labels.py; `--trigger judge-labels`: the table's four).

Each grade is its own transaction (autocommit), as on the assessor's path, so each pays the trigger's
UPDATE of one of the table's count rows and its commit. With `--writers N`, N clients grade at once, each
its own judge, and the figure is their grades per second with the trigger on against off: the lock a
trigger holds from the end of the statement to its commit (the log's flush included, on a server that
flushes it) is then contended, unless the counts are spread over enough rows (core/revisions.py SHARDS).
The embedded cluster of the tests and benches does not flush its log (fsync off), so the contention the
flush makes shows only on a server that does: point PG_PORT at one.

With `--one-judge`, the N clients grade as one judge: the judge-labels trigger's count row of that judge is
then what they contend for (an assessor is a judge of their own; a machine job's batches share one).

    DEBUG=1 PG_PORT=55432 .venv/bin/python bench/bench_revisions.py [--per-slice 400] [--slices 10] [--writers 1]
        [--trigger revision|judge-labels] [--one-judge]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DEBUG", "1")

from _setup import django_with_temp_database  # noqa: E402

django_with_temp_database()

import psycopg  # noqa: E402
from django.db import connection  # noqa: E402

from annotation.families import LABEL_TASKS  # noqa: E402
from annotation.labels.judge_labels import task_triggers  # noqa: E402
from annotation.models import Collection, Judge, RelevanceJudgment, Topic, Turn  # noqa: E402
from annotation.relevance.writer import relevance_judgment_submit, relevance_upsert_sql  # noqa: E402
from core.revisions import SHARDS, TRIGGER  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--per-slice", type=int, default=400, help="grades per slice (per writer)")
parser.add_argument("--slices", type=int, default=10, help="slices each way")
parser.add_argument("--writers", type=int, default=1, help="clients grading at once")
parser.add_argument("--trigger", choices=["revision", "judge-labels"], default="revision")
parser.add_argument("--one-judge", action="store_true", help="the clients grade as one judge")
ARGS = parser.parse_args()
PER_SLICE, SLICES = ARGS.per_slice, ARGS.slices
TRIGGERS = (
    [TRIGGER]
    if ARGS.trigger == "revision"
    else [trigger.name for trigger in task_triggers(LABEL_TASKS["relevance"]).triggers]
)
WHAT = f"{SHARDS} count rows a table" if ARGS.trigger == "revision" else "the judges' label counts"


def _trigger(on: bool) -> None:
    table = connection.ops.quote_name(RelevanceJudgment._meta.db_table)
    with connection.cursor() as cursor:
        for name in TRIGGERS:
            cursor.execute(
                f"ALTER TABLE {table} {'ENABLE' if on else 'DISABLE'} TRIGGER {connection.ops.quote_name(name)}"
            )


def concurrent(turn: Turn, writers: int) -> None:
    """Grades per second of `writers` clients at once, trigger on against off, in alternating slices. Each
    client is a psycopg connection of its own running the writer's one statement (relevance_upsert_sql),
    so that the clients' own Python work, which shares one interpreter here, is not what is measured."""
    judges = [Judge.objects.create(name=f"bench-{k}", kind=Judge.Kind.IMPORTED).pk for k in range(writers)]
    if ARGS.one_judge:
        # One judge, each client its own passages, so that they share the judge's count row, not a label.
        judges = [judges[0]] * writers
    table = connection.ops.quote_name(RelevanceJudgment._meta.db_table)
    sql = relevance_upsert_sql(table=table, rows="VALUES (%s, %s, %s, %s, NULL, now(), now(), NULL)")
    clients = [psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) for _ in judges]
    rates: dict[bool, list[float]] = {True: [], False: []}

    def grade(client: psycopg.Connection, judge: int, offset: int, who: int) -> None:
        for n in range(offset, offset + PER_SLICE):
            client.execute(sql, (judge, turn.pk, f"doc{n // 2}:{who}", n % 5))

    for slice_ in range(SLICES * 2):
        on = slice_ % 2 == 0
        _trigger(on)
        threads = [
            threading.Thread(target=grade, args=(client, judge, slice_ * PER_SLICE, who))
            for who, (client, judge) in enumerate(zip(clients, judges, strict=True))
        ]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rates[on].append(writers * PER_SLICE / (time.perf_counter() - start))
    for client in clients:
        client.close()
    _trigger(True)
    on, off = statistics.median(rates[True]), statistics.median(rates[False])
    print(
        f"{ARGS.trigger} trigger, {writers} writers{' as one judge' if ARGS.one_judge else ''}, {SLICES} slices"
        f" of {PER_SLICE} grades each way (load {os.getloadavg()[0]:.1f}):"
    )
    print(f"  trigger off: {off:8.0f} grades/s")
    print(f"  trigger on:  {on:8.0f} grades/s   ratio {on / off:.2f}  ({WHAT})")


def main() -> None:
    collection = Collection.objects.create(name="bench-revisions")
    topic = Topic.objects.create(collection=collection, number="1", title="t")
    turn = Turn.objects.create(collection=collection, topic=topic, turn_id="1_1", position=1, utterance="u")
    if ARGS.writers > 1:
        concurrent(turn, ARGS.writers)
        return
    judge = Judge.objects.create(name="bench", kind=Judge.Kind.IMPORTED)
    times: dict[bool, list[float]] = {True: [], False: []}
    n = 0
    for slice_ in range(SLICES * 2):
        on = slice_ % 2 == 0
        _trigger(on)
        start = time.perf_counter()
        for _ in range(PER_SLICE):
            # Half new rows, half revisions of earlier ones, as an assessor's grades and changes of mind.
            passage = f"doc{n // 2}:0"
            relevance_judgment_submit(judge=judge.pk, turn=turn.pk, passage_id=passage, grade=n % 5)
            n += 1
        times[on].append((time.perf_counter() - start) / PER_SLICE * 1e6)
    _trigger(True)
    on, off = statistics.median(times[True]), statistics.median(times[False])
    print(
        f"{ARGS.trigger} trigger, {SLICES} slices of {PER_SLICE} grades each way, median per grade"
        f" (load {os.getloadavg()[0]:.1f}):"
    )
    print(f"  trigger off: {off:7.1f} µs")
    print(f"  trigger on:  {on:7.1f} µs   ratio {on / off:.2f}  (+{on - off:.1f} µs a grade)")


main()
