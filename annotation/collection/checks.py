"""What the import of a run accepted with warnings: the run's validation report, kept on the run.

A run file that breaks the format rules, ranks a document twice for a turn or names a turn the collection
lacks is refused whole, its problems named by line (annotation.formats.runs, annotation.collection.rankings). What a
file that passed may still get wrong, and evaluation would take as it is, is told here: turns of the
collection it does not rank, rankings shallower than its others, ranks that disagree with the scores
(evaluation orders a ranking by score, as trec_eval does; pooling and judged@k by rank), tied scores, and the passages an iKAT
JSON response gives twice (the first is kept). TREC RAG answers create the topics they name: their count is
told too.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, TypedDict

from django.db import transaction
from django.db.models import QuerySet
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from annotation.models import Ranking, Response, Run, Turn
from core.ordering import natural_key
from core.wording import plural

# The version of the report's shape; a stored report of another version is built again when read.
REPORT_VERSION = 1
# Turn ids a check lists at most (the counts are whole).
LISTED = 50


class RunCheck(TypedDict):
    name: str
    ok: bool
    detail: str


class RunReport(TypedDict):
    version: int
    checked_at: str
    format: str
    topics_in_collection: int
    topics_ranked: int
    topics_answered: int
    missing_topics: list[str]
    missing_count: int
    depth: dict[str, float]
    depth_by_topic: dict[str, int]
    short_topics: list[str]
    short_count: int
    score_order_topics: list[str]
    score_order_count: int
    tied_topics_count: int
    duplicates_dropped: dict[str, int]
    topics_created: int
    checks: list[RunCheck]
    warnings: list[str]


def _listed(turn_ids: list[str]) -> str:
    shown = ", ".join(turn_ids[:10])
    return shown + (f" and {len(turn_ids) - 10} more" if len(turn_ids) > 10 else "")


def run_report_build(
    *, run: Run, duplicates: dict[str, int] | None = None, topics_created: int = 0
) -> RunReport:
    """The validation report of `run` as stored now; `duplicates` (passages given twice per turn, dropped)
    and `topics_created` come from the import, which alone saw the file."""
    depth_by_topic: dict[str, int] = {}
    score_order: list[str] = []
    tied = 0
    rows = Ranking.objects.filter(run=run).values_list("turn__turn_id", "scores")
    for turn_id, scores in rows.iterator(chunk_size=200):
        depth_by_topic[turn_id] = len(scores)
        if any(later > earlier for earlier, later in zip(scores, scores[1:], strict=False)):
            score_order.append(turn_id)
        if len(set(scores)) < len(scores):
            tied += 1
    answered = set(Response.objects.filter(run=run).values_list("turn__turn_id", flat=True).distinct())
    collection_turns = list(
        Turn.objects.filter(collection_id=run.collection_id).values_list("turn_id", flat=True)
    )
    covered = set(depth_by_topic) | answered
    missing = sorted((t for t in collection_turns if t not in covered), key=natural_key)
    depths = list(depth_by_topic.values())
    deepest = max(depths, default=0)
    short = sorted((t for t, d in depth_by_topic.items() if d < deepest), key=natural_key)
    score_order.sort(key=natural_key)
    dropped = {
        t: n for t, n in sorted((duplicates or {}).items(), key=lambda item: natural_key(item[0])) if n
    }
    checks: list[RunCheck] = [
        {
            "name": "Format rules",
            "ok": True,
            "detail": "every line or record passed (a bad one refuses the file)",
        },
        {
            "name": "Duplicate documents per topic",
            "ok": not dropped,
            "detail": (
                f"{plural(sum(dropped.values()), 'passage')} given twice in a response of "
                f"{plural(len(dropped), 'topic')} ({_listed(list(dropped))}); the first was kept"
                if dropped
                else "none (a document ranked twice refuses a TREC run)"
            ),
        },
        {
            "name": "Unknown topics",
            "ok": True,
            "detail": (
                f"none; the answers created {plural(topics_created, 'topic')}"
                if topics_created
                else "none (a topic the collection lacks refuses the file)"
            ),
        },
        {
            "name": "Topics not covered",
            "ok": not missing,
            "detail": (
                f"{plural(len(missing), 'topic')} of the collection without a ranking or answer: "
                f"{_listed(missing)}"
                if missing
                else f"all {plural(len(collection_turns), 'topic')} of the collection"
            ),
        },
    ]
    if depths:
        checks += [
            {
                "name": "Ranking depth per topic",
                "ok": not short,
                "detail": (
                    f"{plural(len(short), 'topic')} ranked shallower than the run's {deepest}: {_listed(short)}"
                    if short
                    else f"{deepest} for every topic"
                ),
            },
            {
                "name": "Ranks against scores",
                "ok": not score_order,
                "detail": (
                    f"in {plural(len(score_order), 'topic')} a lower rank has a higher score "
                    f"({_listed(score_order)}): evaluation (ir_measures, as trec_eval) orders by score, "
                    "pooling and judged@k by rank"
                    if score_order
                    else "scores fall as ranks rise"
                ),
            },
            {
                "name": "Tied scores",
                "ok": True,
                "detail": (
                    f"{plural(tied, 'topic')} with tied scores (trec_eval breaks ties by document id)"
                    if tied
                    else "none"
                ),
            },
        ]
    return {
        "version": REPORT_VERSION,
        "checked_at": timezone.now().isoformat(),
        "format": run.source_format,
        "topics_in_collection": len(collection_turns),
        "topics_ranked": len(depth_by_topic),
        "topics_answered": len(answered),
        "missing_topics": missing[:LISTED],
        "missing_count": len(missing),
        "depth": (
            {"min": min(depths), "median": statistics.median(depths), "max": deepest} if depths else {}
        ),
        "depth_by_topic": {t: depth_by_topic[t] for t in sorted(depth_by_topic, key=natural_key)},
        "short_topics": short[:LISTED],
        "short_count": len(short),
        "score_order_topics": score_order[:LISTED],
        "score_order_count": len(score_order),
        "tied_topics_count": tied,
        "duplicates_dropped": dropped,
        "topics_created": topics_created,
        "checks": checks,
        "warnings": [f"{check['name']}: {check['detail']}" for check in checks if not check["ok"]],
    }


@transaction.atomic
def run_report_store(
    *, run: Run, duplicates: dict[str, int] | None = None, topics_created: int = 0
) -> RunReport:
    """Build `run`'s validation report and keep it on the run (each import of the run replaces it)."""
    report = run_report_build(run=run, duplicates=duplicates, topics_created=topics_created)
    run.report = dict(report)
    run.save(update_fields=["report"])
    return report


@dataclass(frozen=True)
class RunValidation:
    """What the pages show of a run's validation report: its checks, its warnings and the span of its
    ranking depths (empty for a run imported before runs were checked)."""

    name: str
    checks: list[RunCheck]
    warnings: list[str]
    depth: dict[str, float]


def run_validations(*, runs: QuerySet[Run]) -> list[RunValidation]:
    """The validation of each run, by name, in one query that reads only those parts of the reports: the
    rest (the depth of every topic, the duplicates of every topic) grows with the topics, and the pages
    would read it for each of up to 90 runs."""
    rows = (
        runs.order_by("name")
        .annotate(
            checks=KeyTransform("checks", "report"),
            warnings=KeyTransform("warnings", "report"),
            depth=KeyTransform("depth", "report"),
        )
        .values_list("name", "checks", "warnings", "depth")
    )
    return [
        RunValidation(name=name, checks=checks or [], warnings=warnings or [], depth=depth or {})
        for name, checks, warnings, depth in rows
    ]


def run_report_get(*, run: Run) -> dict[str, Any]:
    """The report kept on `run`; one built now (not kept) for a run imported before the checks existed,
    whose duplicates the file alone could tell."""
    if run.report.get("version") == REPORT_VERSION:
        return run.report
    return dict(run_report_build(run=run))
