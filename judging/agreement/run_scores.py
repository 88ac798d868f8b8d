"""Run scores for system-level agreement: each measure that ranks runs under one judge's labels (nDCG@5
from relevance grades, support precision and recall, NtR recall, the TREC RAG nugget scores), by name in
`RUN_MEASURES`, so that rank correlations between two judges read every measure the same way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from annotation.models import Collection, Judge, NtrJudgment, Turn
from judging.agreement.selectors import LabelsByJudge
from judging.measures.nuggets import NuggetMetricsError
from judging.measures.rag_nuggets import vital_unlabelled
from judging.measures.support import SupportMeasure
from judging.scores.nuggets import nugget_metrics
from judging.scores.rag_nuggets import nugget_scores
from judging.scores.relevance import runs_evaluate_judges
from judging.scores.support import support_scores, support_scores_by_judge

NO_RANKING = "without a ranking"


@dataclass(frozen=True)
class RunScores:
    """{run: score} of the runs a measure scores under one judge, {run: reason} of those it cannot rank at
    all (left out of rank correlations, not tied at 0), and {run: {turn: score}} where a score is a mean."""

    scores: dict[str, float]
    left_out: dict[str, str] = field(default_factory=dict)
    per_turn: dict[str, dict[str, float]] = field(default_factory=dict)


MeasureFunction = Callable[[Collection, Judge], RunScores | dict[str, float]]


def _qrels_of(collection: Collection, labels: LabelsByJudge) -> dict[int, dict[str, dict[str, int]]]:
    """The judges' relevance labels (as `labels_by_judge` reads them) as qrels, named by turn id."""
    turn_ids = dict(Turn.objects.filter(collection=collection).values_list("id", "turn_id"))
    qrels: dict[int, dict[str, dict[str, int]]] = {}
    for judge_id, units in labels.items():
        judge_qrels = qrels[judge_id] = {}
        for (turn, passage), (_topic, grade) in units.items():
            judge_qrels.setdefault(turn_ids[turn], {})[passage] = int(grade)
    return qrels


def _ndcg5_by_judge(
    collection: Collection, judges: Sequence[Judge], labels: LabelsByJudge | None
) -> dict[int, RunScores]:
    from ir_measures import nDCG

    evaluations = runs_evaluate_judges(
        collection=collection,
        judges=judges,
        measures=[nDCG @ 5],
        qrels=_qrels_of(collection, labels) if labels is not None else None,
        head=5,
    )
    result = {}
    for judge in judges:
        evaluation = evaluations.get(judge.id)
        if evaluation is None:
            result[judge.id] = RunScores(scores={})
            continue
        # A run that ranks no passage on any turn the judge assessed (a response-only run) scores 0 by
        # the trec_eval -c convention; that 0 is no place in a ranking, so it is named instead of scored.
        unranked = {r for r, missing in evaluation.missing.items() if len(missing) == len(evaluation.turns)}
        result[judge.id] = RunScores(
            scores={run: values["nDCG@5"] for run, values in evaluation.runs.items() if run not in unranked},
            left_out=dict.fromkeys(sorted(unranked), NO_RANKING),
            per_turn={r: {t: v["nDCG@5"] for t, v in ts.items()} for r, ts in evaluation.per_turn.items()},
        )
    return result


def _ndcg5(collection: Collection, judge: Judge) -> RunScores:
    return _ndcg5_by_judge(collection, [judge], None)[judge.id]


def _support(measure: SupportMeasure) -> MeasureFunction:
    def scores(collection: Collection, judge: Judge) -> dict[str, float]:

        return {
            run: values[measure]
            for run, values in support_scores(collection=collection, judge=judge)["runs"].items()
        }

    return scores


def _support_by_judge(
    measure: SupportMeasure,
) -> Callable[[Collection, Sequence[Judge], LabelsByJudge | None], dict[int, RunScores]]:
    def scores(
        collection: Collection, judges: Sequence[Judge], _labels: LabelsByJudge | None
    ) -> dict[int, RunScores]:

        # The labels a caller holds may be one condition's only, and a run's support counts them all.
        return {
            judge_id: RunScores(scores={run: values[measure] for run, values in judge_scores["runs"].items()})
            for judge_id, judge_scores in support_scores_by_judge(
                collection=collection, judges=judges
            ).items()
        }

    return scores


def _ntr_recall(collection: Collection, judge: Judge) -> dict[str, float]:
    """Nugget recall (NtR) of each run with `judge` as the matcher, against the gold nuggets it matched."""
    from django.db.models import Count

    gold = (
        NtrJudgment.objects.filter(judge=judge, response__run__collection=collection)
        .values("nugget__judge")
        .annotate(n=Count("id"))
        .order_by("-n")
        .first()
    )
    if gold is None:
        return {}
    try:
        report = nugget_metrics(
            collection=collection, gold_judge=Judge.objects.get(id=gold["nugget__judge"]), ntr_judge=judge
        )
    except NuggetMetricsError:
        return {}
    return {run.run: run.all.recall for run in report.runs if run.all.recall is not None}


def _rag_nuggets(score: str) -> MeasureFunction:
    def scores(collection: Collection, judge: Judge, importance_judge: Judge | None = None) -> RunScores:

        found = nugget_scores(collection=collection, judge=judge, importance_judge=importance_judge)
        if "vital" in score and vital_unlabelled(found):
            return RunScores(scores={})
        per_turn: dict[str, dict[str, float]] = {}
        for answer in found["answers"]:
            per_turn.setdefault(answer["run_id"], {})[answer["qid"]] = answer[score]  # type: ignore[literal-required]
        return RunScores(
            scores={r: v[score] for r, v in found["runs"].items()},  # type: ignore[literal-required]
            per_turn=per_turn,
        )

    return scores


# Measures a run can be ranked by under a judge, each `(collection, judge) -> {run: score}`. Another
# measure (nugget recall, ...) joins by `run_measure_register`; rank agreement needs nothing else.
RUN_MEASURES: dict[str, tuple[str, MeasureFunction]] = {
    "ndcg@5": ("relevance", _ndcg5),
    "support-weighted-precision": ("support", _support("weighted_precision")),
    "support-weighted-recall": ("support", _support("weighted_recall")),
    "nugget-recall-ntr": ("ntr", _ntr_recall),
    # TREC RAG nugget scores under each judge's assignments (importance: `IMPORTANCE_MEASURES`).
    **{
        f"nugget-{score.removesuffix('_score').replace('_', '-')}": ("nugget-assignment", _rag_nuggets(score))
        for score in ("strict_vital_score", "strict_all_score", "vital_score", "all_score")
    },
}


# Measures whose scores depend on whose vital/okay labels count: `run_scores` passes them an importance
# judge (default: annotation.rag_nuggets.importance.IMPORTANCE_DEFAULT).
IMPORTANCE_MEASURES = frozenset(
    name for name in RUN_MEASURES if name.startswith("nugget-") and name != "nugget-recall-ntr"
)


# Measures that score several judges at once from shared reads, by name; a measure re-registered by
# `run_measure_register` is scored one judge at a time again.
RUN_MEASURES_BY_JUDGE: dict[
    str, Callable[[Collection, Sequence[Judge], LabelsByJudge | None], dict[int, RunScores]]
] = {
    "ndcg@5": _ndcg5_by_judge,
    "support-weighted-precision": _support_by_judge("weighted_precision"),
    "support-weighted-recall": _support_by_judge("weighted_recall"),
}


def run_measure_register(name: str, task: str, function: MeasureFunction) -> None:
    """Make a measure available to `rank_agreement` (the command, the pages and the campaign report)."""
    RUN_MEASURES[name] = (task, function)
    RUN_MEASURES_BY_JUDGE.pop(name, None)


def run_scores_by_judge(
    *,
    collection: Collection,
    measure: str,
    judges: Sequence[Judge],
    labels: LabelsByJudge | None = None,
    importance_judge: Judge | None = None,
) -> dict[int, RunScores]:
    """{judge id: `run_scores`} for several judges, each read shared where the measure allows (nDCG@5
    reads every run's rankings once, not once per judge). `labels` are the judges' labels on the
    measure's task as `labels_by_judge` read them, when the caller holds them already."""
    if measure in RUN_MEASURES_BY_JUDGE and importance_judge is None:
        return RUN_MEASURES_BY_JUDGE[measure](collection, judges, labels)
    return {
        judge.id: run_scores(
            collection=collection, measure=measure, judge=judge, importance_judge=importance_judge
        )
        for judge in judges
    }


def run_scores(
    *, collection: Collection, measure: str, judge: Judge, importance_judge: Judge | None = None
) -> RunScores:
    """The mean score of every run of the collection the measure can rank under one judge's labels, and
    the runs it cannot (see `RunScores`). `importance_judge` says whose vital/okay labels count for the
    TREC RAG nugget measures (`IMPORTANCE_MEASURES`); no other measure takes one."""
    try:
        _task, function = RUN_MEASURES[measure]
    except KeyError:
        raise ValueError(f"unknown measure {measure!r}; choose one of {', '.join(RUN_MEASURES)}") from None
    if importance_judge is not None:
        if measure not in IMPORTANCE_MEASURES:
            raise ValueError(
                f"an importance judge applies to the {', '.join(sorted(IMPORTANCE_MEASURES))} measures only"
            )
        scores = function(collection, judge, importance_judge=importance_judge)  # type: ignore[call-arg]
    else:
        scores = function(collection, judge)
    return scores if isinstance(scores, RunScores) else RunScores(scores=dict(scores))
