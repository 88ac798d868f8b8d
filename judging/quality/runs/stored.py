"""judged@k of every run as a stored report (judging/reports): what it reads, its code version, and the
function a task worker runs to compute it. The page asks `judging.reports.store.report_for` with these
and draws its table from the JSON returned; the CSV download serves the stored figures when they are
current, or computes them in the request when they are not, so it is never stale either.

The choices are the judge (by name; empty: the judge with most grades) and the depth (None: the deepest
pool's); the compute function resolves both, so a grade or a pool written after changes the fingerprint.
"""

from __future__ import annotations

from typing import Any

from annotation.models import Collection, Judge, Pool, Ranking, RelevanceJudgment, Run, Topic, Turn
from judging.quality.runs.selectors import JudgedRow, cutoffs, judged_at_k, pool_depth, relevance_judges

# Raise the version whenever the figures or their shape change: rows of an older version are then
# never found again.
JUDGED = ("quality-judged", 1)
JUDGED_READS = (RelevanceJudgment, Ranking, Run, Pool, Judge, Turn, Topic)


def _noop(done: int, total: int, word: str = "") -> None:
    """The progress of a computation made in the request: nobody follows it."""


def judged_params(*, judge: str, depth: int | None, every: bool = False) -> dict[str, Any]:
    """The page's choices as stored: the judge by name ("" for the default), the depth, and whether a
    missing judge means every judge (the download) rather than the one with most grades (the page)."""
    return {"judge": judge, "depth": depth, "every": every}


def judged_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """{"depth", "cutoffs", "judges": [names], "rows": [{run, judge, topics, topics_judged, depth,
    judged: [[k, share]...], ranked_within_depth, unjudged_within_depth}]}: judged@k of every run under
    the chosen judge (or, with none, the one with most grades or every judge)."""
    depth = params["depth"] or pool_depth(collection=collection)
    graders = relevance_judges(collection=collection)
    if params["judge"]:
        chosen = [g for g in graders if g.name == params["judge"]]
    else:
        chosen = graders if params["every"] else graders[:1]
    rows: list[dict[str, Any]] = []
    for i, judge in enumerate(chosen, start=1):
        for row in judged_at_k(collection=collection, judge_id=judge.id, judge_name=judge.name, depth=depth):
            rows.append(
                {
                    "run": row.run,
                    "judge": row.judge,
                    "topics": row.topics,
                    "topics_judged": row.topics_judged,
                    "depth": row.depth,
                    "judged": [[k, share] for k, share in row.judged.items()],
                    "ranked_within_depth": row.ranked_within_depth,
                    "unjudged_within_depth": row.unjudged_within_depth,
                }
            )
        progress(i, len(chosen), "judges")
    return {"depth": depth, "cutoffs": cutoffs(depth), "judges": [j.name for j in chosen], "rows": rows}


def judged_rows(result: dict[str, Any]) -> list[JudgedRow]:
    """The rows of a stored result as the CSV writes them."""
    return [
        JudgedRow(
            run=row["run"],
            judge=row["judge"],
            topics=row["topics"],
            topics_judged=row["topics_judged"],
            depth=row["depth"],
            judged={int(k): share for k, share in row["judged"]},
            ranked_within_depth=row["ranked_within_depth"],
            unjudged_within_depth=row["unjudged_within_depth"],
        )
        for row in result["rows"]
    ]
