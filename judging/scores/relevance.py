"""Retrieval evaluation of a collection's runs against judges' relevance labels, read from the database
and scored by `judging.measures.ir` (whose docstring gives the conventions)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ir_measures import AP, Judged, P, R, nDCG

from annotation.models import Collection, Judge, Ranking, RelevanceGrade, Response, Run
from annotation.selectors import qrels_by_judge, qrels_dict, runs_dict
from judging.measures.ir import Evaluation, EvaluationError, qrels_evaluate, ranking_head

DEFAULT_REL_THRESHOLD = 2


def evaluation_measures(*, rel_threshold: int = DEFAULT_REL_THRESHOLD) -> list[Any]:
    """The ir_measures measures in display order; `rel_threshold` is the lowest grade counted relevant
    by the binary measures (P, R, AP). nDCG uses the grades themselves and Judged any label at all."""
    if isinstance(rel_threshold, bool) or not isinstance(rel_threshold, int):
        raise EvaluationError(f"relevance threshold must be an integer, not {rel_threshold!r}")
    lowest, highest = RelevanceGrade.SLIGHTLY.value, RelevanceGrade.FULLY.value
    if not lowest <= rel_threshold <= highest:
        # 0 would count passages judged "fails to meet" as relevant.
        raise EvaluationError(
            f"relevance threshold must be between {lowest} and {highest}, not {rel_threshold}"
        )
    t = rel_threshold
    return [nDCG @ 5, P(rel=t) @ 20, R(rel=t) @ 20, R(rel=t) @ 1000, AP(rel=t), Judged @ 10]


def runs_evaluate(
    *,
    collection: Collection,
    judge: Judge,
    runs: Iterable[Run] | None = None,
    rel_threshold: int = DEFAULT_REL_THRESHOLD,
    measures: list[Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """Score runs of `collection` (all of them unless `runs` is given) against `judge`'s relevance labels.

    Only turns the judge assessed count; a run without a ranking for one of them scores 0 there
    (trec_eval -c). Raises EvaluationError if the judge has no relevance labels on the collection.
    `progress(done, total)` is told after each run is scored.
    """
    # `measures` narrows the evaluation to what a caller needs (the primary measure, nDCG@5, must stay
    # among them for ranked_runs): ir_measures spends most of an evaluation on each per-turn value.
    measures = measures or evaluation_measures(rel_threshold=rel_threshold)
    qrels = qrels_dict(collection=collection, judge=judge)
    if not qrels:
        raise EvaluationError(
            f"judge {judge.name} has no relevance judgments on collection {collection.name}"
        )
    selected = _runs_of(collection, runs)
    return _evaluate(
        collection=collection,
        judge=judge,
        qrels=qrels,
        runs=selected,
        rankings=runs_dict(runs=selected, turn_ids=qrels),
        rel_threshold=rel_threshold,
        measures=measures,
        progress=progress,
    )


def runs_evaluate_judges(
    *,
    collection: Collection,
    judges: Sequence[Judge],
    rel_threshold: int = DEFAULT_REL_THRESHOLD,
    measures: list[Any] | None = None,
    qrels: dict[int, dict[str, dict[str, int]]] | None = None,
    head: int | None = None,
) -> dict[int, Evaluation]:
    """{judge id: `runs_evaluate` of every run of the collection} for several judges, reading the runs'
    rankings once and every judge's labels in one query: a report that ranks runs under each of some
    fifteen judges spent most of its time re-reading the same rankings. Judges without relevance labels
    on the collection are left out. `qrels` ({judge id: qrels}) spares reading labels the caller holds.

    `head`, for measures that look no deeper than a cutoff (nDCG@5 looks at 5), keeps of each ranking
    only the passages that can reach its first `head` places: those scoring at least its head-th best
    score, ties included, so the passages a run puts first are the same and so are the numbers, while
    ir_measures handles a few passages per ranking instead of hundreds."""
    measures = measures or evaluation_measures(rel_threshold=rel_threshold)
    if qrels is None:
        qrels = qrels_by_judge(collection=collection, judges=judges)
    selected = _runs_of(collection, None)
    assessed: set[str] = set().union(*qrels.values())
    rankings = runs_dict(runs=selected, turn_ids=assessed) if assessed else {}
    if head is not None:
        rankings = {
            run: {turn: ranking_head(docs, head) for turn, docs in turns.items()}
            for run, turns in rankings.items()
        }
    return {
        judge.id: _evaluate(
            collection=collection,
            judge=judge,
            qrels=qrels[judge.id],
            runs=selected,
            rankings=rankings,
            rel_threshold=rel_threshold,
            measures=measures,
        )
        for judge in judges
        if qrels.get(judge.id)
    }


def answer_only_runs(collection: Collection) -> list[str]:
    """The runs of `collection` with responses and no ranking (a RAG run that submitted answers only):
    ranked-run measures have nothing to score for them, so they are listed rather than scored 0."""
    ranked = Ranking.objects.filter(run__collection=collection).values("run_id")
    answered = Response.objects.filter(run__collection=collection).values("run_id")
    return list(
        collection.runs.filter(id__in=answered)
        .exclude(id__in=ranked)
        .order_by("name")
        .values_list("name", flat=True)
    )


def _runs_of(collection: Collection, runs: Iterable[Run] | None) -> list[Run]:
    if runs is None:
        # Answer-only runs are left out of every ranked-run measure; callers list them (`answer_only_runs`).
        selected = list(collection.runs.exclude(name__in=answer_only_runs(collection)))
    else:
        selected = list(runs)
    for run in selected:
        if run.collection_id != collection.id:
            raise EvaluationError(f"run {run.name} is not a run of collection {collection.name}")
    return selected


def _evaluate(
    *,
    collection: Collection,
    judge: Judge,
    qrels: dict[str, dict[str, int]],
    runs: list[Run],
    rankings: dict[int, dict[str, dict[str, float]]],
    rel_threshold: int,
    measures: list[Any],
    progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """The evaluation of `runs` against `qrels`; `rankings` ({run id: ...}) may hold turns the judge did
    not assess."""
    return qrels_evaluate(
        collection=collection.name,
        judge=judge.name,
        qrels=qrels,
        rankings={run.name: rankings.get(run.pk, {}) for run in runs},
        rel_threshold=rel_threshold,
        measures=measures,
        progress=progress,
    )
