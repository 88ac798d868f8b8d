"""How deep each run's rankings are judged: judged@k and the unjudged pairs within the pool depth.

Judged@k of a run for one turn is the share of its top k passages (of its whole ranking when shorter) that
the judge graded, whatever the grade; a run's figure is the mean over the turns it ranks that the judge
graded at all, as ir_measures' `Judged@k` computes it. One statement per judge covers every run and turn of
the collection: each ranking's head is unnested in the database and joined to the judge's grades along
their unique index, so a report costs the same number of queries whatever the runs and topics.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection
from django.db.models import Max

from annotation.judge_menus import judges_with_label_counts
from annotation.models import Collection, Pool, Ranking, RelevanceJudgment, Run
from core.csv_safe import csv_writer

# The cutoffs every report gives, besides the pool depth.
CUTOFFS = (5, 10, 20)
CSV_COLUMNS = (
    "run",
    "judge",
    "topics",
    "topics_judged",
    "depth",
    "judged_at_5",
    "judged_at_10",
    "judged_at_20",
    "judged_at_depth",
    "ranked_within_depth",
    "unjudged_within_depth",
)


@dataclass(frozen=True)
class JudgedRow:
    """One run under one judge. `judged` maps each cutoff to the mean judged share (None: no turn of the
    run was graded by the judge); the counts within the depth cover the graded turns."""

    run: str
    judge: str
    topics: int
    topics_judged: int
    depth: int
    judged: dict[int, float | None]
    ranked_within_depth: int
    unjudged_within_depth: int

    def csv_row(self) -> list[object]:
        shares = [self.judged[k] for k in (*CUTOFFS, self.depth)]
        return [
            self.run,
            self.judge,
            self.topics,
            self.topics_judged,
            self.depth,
            *("" if share is None else round(share, 6) for share in shares),
            self.ranked_within_depth,
            self.unjudged_within_depth,
        ]


def pool_depth(*, collection: Collection) -> int:
    """The depth of the collection's deepest pool (the depth its judgments were asked to), else the
    deepest of the fixed cutoffs."""
    depth = Pool.objects.filter(collection=collection).aggregate(depth=Max("depth"))["depth"]
    return int(depth) if depth else max(CUTOFFS)


def cutoffs(depth: int) -> list[int]:
    return sorted({*CUTOFFS, depth})


@dataclass(frozen=True)
class GradingJudge:
    id: int
    name: str
    grades: int


def relevance_judges(*, collection: Collection) -> list[GradingJudge]:
    """The judges with relevance grades in the collection and how many, most first (one query of the
    kept counts)."""
    judges = judges_with_label_counts(collection=collection, task="relevance").order_by("-labels", "name")
    return [GradingJudge(*row) for row in judges.values_list("pk", "name", "labels")]


def _judged_sql(ks: list[int]) -> str:
    ranking = connection.ops.quote_name(Ranking._meta.db_table)
    run = connection.ops.quote_name(Run._meta.db_table)
    grades = connection.ops.quote_name(RelevanceJudgment._meta.db_table)
    counts = ", ".join(f"COUNT(j.id) FILTER (WHERE g.i < {int(k)})" for k in ks)
    return (
        f"SELECT run.name, r.turn_id, jsonb_array_length(r.passage_ids), "
        f"EXISTS (SELECT 1 FROM {grades} t WHERE t.judge_id = %(judge)s AND t.turn_id = r.turn_id), {counts} "
        f"FROM {ranking} r JOIN {run} run ON run.id = r.run_id "
        f"LEFT JOIN LATERAL generate_series(0, LEAST(jsonb_array_length(r.passage_ids), %(deepest)s) - 1) "
        f"AS g(i) ON TRUE "
        f"LEFT JOIN {grades} j ON j.judge_id = %(judge)s AND j.turn_id = r.turn_id "
        f"AND j.passage_id = (r.passage_ids ->> g.i) "
        f"WHERE run.collection_id = %(collection)s "
        f"GROUP BY run.name, r.id ORDER BY run.name"
    )


def judged_at_k(*, collection: Collection, judge_id: int, judge_name: str, depth: int) -> list[JudgedRow]:
    """Judged@5, 10, 20 and @depth of every run of the collection that ranks passages, under one judge,
    and its ranked and unjudged pairs within `depth`: one statement."""
    ks = cutoffs(depth)
    with connection.cursor() as cursor:
        cursor.execute(_judged_sql(ks), {"judge": judge_id, "deepest": max(ks), "collection": collection.pk})
        rows = cursor.fetchall()
    by_run: dict[str, list[tuple]] = {}
    for row in rows:
        by_run.setdefault(row[0], []).append(row)
    return [_row(run, turns, judge_name, ks, depth) for run, turns in by_run.items()]


def _row(run: str, turns: list[tuple], judge: str, ks: list[int], depth: int) -> JudgedRow:
    graded = [t for t in turns if t[3] and t[2] > 0]
    judged: dict[int, float | None] = {}
    for index, k in enumerate(ks):
        shares = [t[4 + index] / min(k, t[2]) for t in graded]
        judged[k] = sum(shares) / len(shares) if shares else None
    within = sum(min(depth, t[2]) for t in graded)
    judged_within = sum(t[4 + ks.index(depth)] for t in graded)
    return JudgedRow(
        run=run,
        judge=judge,
        topics=len(turns),
        topics_judged=len(graded),
        depth=depth,
        judged=judged,
        ranked_within_depth=within,
        unjudged_within_depth=within - judged_within,
    )


def judged_csv(rows: Iterable[JudgedRow]) -> str:
    out = io.StringIO()
    writer = csv_writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(CSV_COLUMNS)
    writer.writerows(row.csv_row() for row in rows)
    return out.getvalue()
