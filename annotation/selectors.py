"""Reads of a test collection, shaped for exports, evaluation and pages."""

from __future__ import annotations

from collections.abc import Iterator

from annotation.models import Collection, Judge, Ranking, RelevanceJudgment, Run


def _natural_key(value: str) -> tuple:
    """Sort '10_2' after '9_12' the way people read turn ids."""
    parts: list[tuple[int, int | str]] = []
    for chunk in value.replace("-", "_").split("_"):
        parts.append((0, int(chunk)) if chunk.isdigit() else (1, chunk))
    return tuple(parts)


def qrels_lines(*, collection: Collection, judge: Judge) -> Iterator[str]:
    """TREC qrels lines of a judge in a stable order: turn (natural order), then passage id."""
    rows = list(
        RelevanceJudgment.objects.filter(judge=judge, turn__collection=collection).values_list(
            "turn__turn_id", "passage_id", "grade"
        )
    )
    rows.sort(key=lambda row: (_natural_key(row[0]), row[1]))
    for turn_id, passage_id, grade in rows:
        yield f"{turn_id} 0 {passage_id} {grade}\n"


def qrels_dict(*, collection: Collection, judge: Judge) -> dict[str, dict[str, int]]:
    """{turn id: {passage id: grade}}, the shape ir_measures and pytrec_eval take."""
    qrels: dict[str, dict[str, int]] = {}
    for turn_id, passage_id, grade in RelevanceJudgment.objects.filter(
        judge=judge, turn__collection=collection
    ).values_list("turn__turn_id", "passage_id", "grade"):
        qrels.setdefault(turn_id, {})[passage_id] = grade
    return qrels


def run_dict(*, run: Run, depth: int | None = None) -> dict[str, dict[str, float]]:
    """{turn id: {passage id: score}} of a run, optionally cut at `depth`."""
    result: dict[str, dict[str, float]] = {}
    for turn_id, passage_ids, scores in Ranking.objects.filter(run=run).values_list(
        "turn__turn_id", "passage_ids", "scores"
    ):
        if depth is not None:
            passage_ids, scores = passage_ids[:depth], scores[:depth]
        result[turn_id] = dict(zip(passage_ids, (float(s) for s in scores), strict=True))
    return result
