"""What the table revisions cost a grade: the one writer's statement (relevance_judgment_submit, the
upsert the assessor page's grade statement embeds) timed with the revision trigger of the judgments
table enabled and disabled, in alternating slices of one invocation, on a throwaway database.

Each grade is its own transaction (autocommit), as on the assessor's path, so each pays the trigger's
UPDATE of the table's revision row and its commit. One client: the lock the trigger holds from the end of
the statement to its commit is not contended here.

    DEBUG=1 PG_PORT=55432 .venv/bin/python bench/bench_revisions.py [grades per slice] [slices]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DEBUG", "1")

from _setup import django_with_temp_database  # noqa: E402

django_with_temp_database()

from django.db import connection  # noqa: E402

from annotation.models import Collection, Judge, RelevanceJudgment, Topic, Turn  # noqa: E402
from annotation.relevance.writer import relevance_judgment_submit  # noqa: E402
from core.revisions import TRIGGER  # noqa: E402

PER_SLICE = int(sys.argv[1]) if len(sys.argv) > 1 else 400
SLICES = int(sys.argv[2]) if len(sys.argv) > 2 else 10


def _trigger(on: bool) -> None:
    table = connection.ops.quote_name(RelevanceJudgment._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} {'ENABLE' if on else 'DISABLE'} TRIGGER {TRIGGER}")


def main() -> None:
    collection = Collection.objects.create(name="bench-revisions")
    topic = Topic.objects.create(collection=collection, number="1", title="t")
    turn = Turn.objects.create(collection=collection, topic=topic, turn_id="1_1", position=1, utterance="u")
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
        f"{SLICES} slices of {PER_SLICE} grades each way, median per grade (load {os.getloadavg()[0]:.1f}):"
    )
    print(f"  trigger off: {off:7.1f} µs")
    print(f"  trigger on:  {on:7.1f} µs   ratio {on / off:.2f}  (+{on - off:.1f} µs a grade)")


main()
