"""Selectors: the units a judge labelled on a task, and the labels two or more judges gave the same units.

Each task names its unit and its label scale once (`TASKS`), so agreement on any task is the same computation
(`judging.agreement.metrics`) over what these selectors read. Every unit carries the number of its topic (the
conversation or information need), for per-topic figures and the bootstrap over topics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db.models import QuerySet

from annotation.models import (
    NUGGET_LABEL_FAILED,
    Collection,
    Judge,
    LabelCondition,
    NtnJudgment,
    NtrJudgment,
    NuggetAssignment,
    NuggetImportanceJudgment,
    NuggetSupport,
    PtkbJudgment,
    RelevanceGrade,
    RelevanceJudgment,
    SupportJudgment,
    SupportLabel,
    Turn,
)
from judging.agreement.metrics import AlphaLevel, Pairs, encode_pairs

if TYPE_CHECKING:
    from judging.support.metrics import SupportMeasure

Unit = tuple[Any, Any]
LabelsByJudge = dict[int, dict[Unit, tuple[str, Any]]]


@dataclass(frozen=True)
class TaskSpec:
    """A task's label scale: `labels` in scale order; `ordinal` enables weighted kappa."""

    name: str
    unit: str
    labels: tuple[Any, ...]
    label_names: tuple[str, ...]
    ordinal: bool
    alpha_level: AlphaLevel
    binarisable: bool = False


_ASSIGNMENT = (NuggetSupport.NONE.value, NuggetSupport.PARTIAL.value, NuggetSupport.SUPPORT.value)

TASKS: dict[str, TaskSpec] = {
    "relevance": TaskSpec(
        name="relevance",
        unit="(turn, passage)",
        labels=tuple(int(g) for g in RelevanceGrade.values),
        label_names=tuple(str(label) for label in RelevanceGrade.labels),
        ordinal=True,
        alpha_level="ordinal",
        binarisable=True,
    ),
    "ptkb": TaskSpec(
        "ptkb", "(turn, PTKB statement)", (0, 1), ("not relevant", "relevant"), False, "nominal"
    ),
    "ntr": TaskSpec("ntr", "(response, gold nugget)", (0, 1), ("not matched", "matched"), False, "nominal"),
    "ntn": TaskSpec(
        "ntn", "(response nugget, gold nugget)", (0, 1), ("not entailed", "entailed"), False, "nominal"
    ),
    # Support is ordered NS < PS < FS (weights 0, 0.5, 1), so weighted kappa is meaningful; the papers
    # report alpha on it as nominal categories.
    "support": TaskSpec(
        "support",
        "(answer sentence, citation)",
        (SupportLabel.NONE.value, SupportLabel.PARTIAL.value, SupportLabel.FULL.value),
        (str(SupportLabel.NONE.label), str(SupportLabel.PARTIAL.label), str(SupportLabel.FULL.label)),
        True,
        "nominal",
    ),
    # TREC RAG nugget evaluation: vital/okay of a nugget, and the three-level assignment of (answer,
    # nugget), ordered like support (not_support 0, partial 0.5, support 1).
    "nugget-importance": TaskSpec(
        "nugget-importance", "nugget", ("okay", "vital"), ("Okay", "Vital"), False, "nominal"
    ),
    "nugget-assignment": TaskSpec(
        "nugget-assignment",
        "(answer, nugget)",
        _ASSIGNMENT,
        tuple(NuggetSupport(v).label for v in _ASSIGNMENT),
        True,
        "nominal",
    ),
}

# Tasks whose human labels were given in a condition (from scratch, post-editing a machine's label, or
# blind), and those conditions; a comparison may keep one of them.
HUMAN_CONDITIONS: dict[str, set[str]] = {
    "support": {
        SupportJudgment.Condition.SCRATCH,
        SupportJudgment.Condition.POST_EDIT,
        SupportJudgment.Condition.BLIND,
    },
    "nugget-importance": {LabelCondition.SCRATCH, LabelCondition.POST_EDIT},
    "nugget-assignment": {LabelCondition.SCRATCH, LabelCondition.POST_EDIT},
}


def task_spec(task: str) -> TaskSpec:
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}") from None


# Per task: the judgment rows of a collection, and the columns (unit part 1, unit part 2, topic number, label).
_ROWS: dict[str, tuple[Callable[[Collection], QuerySet], str, tuple[str, str, str, str]]] = {
    "relevance": (
        lambda c: RelevanceJudgment.objects.filter(turn__collection=c),
        "turn__topic__number",
        ("turn_id", "passage_id", "turn__topic__number", "grade"),
    ),
    "ptkb": (
        lambda c: PtkbJudgment.objects.filter(turn__collection=c),
        "turn__topic__number",
        ("turn_id", "statement_id", "turn__topic__number", "relevant"),
    ),
    "ntr": (
        lambda c: NtrJudgment.objects.filter(response__run__collection=c),
        "response__turn__topic__number",
        ("response_id", "nugget_id", "response__turn__topic__number", "matched"),
    ),
    "ntn": (
        lambda c: NtnJudgment.objects.filter(gold_nugget__turn__collection=c),
        "gold_nugget__turn__topic__number",
        ("response_nugget_id", "gold_nugget_id", "gold_nugget__turn__topic__number", "entails"),
    ),
    "support": (
        lambda c: SupportJudgment.objects.filter(sentence__response__run__collection=c),
        "sentence__response__turn__topic__number",
        ("sentence_id", "citation_index", "sentence__response__turn__topic__number", "label"),
    ),
    "nugget-importance": (
        # nuggetizer's "failed" (its LLM gave no readable label) is no judgment to agree or disagree with.
        lambda c: NuggetImportanceJudgment.objects.filter(nugget__turn__collection=c).exclude(
            importance=NUGGET_LABEL_FAILED
        ),
        "nugget__turn__topic__number",
        ("nugget_id", "nugget__turn_id", "nugget__turn__topic__number", "importance"),
    ),
    "nugget-assignment": (
        lambda c: NuggetAssignment.objects.filter(response__run__collection=c).exclude(
            label=NUGGET_LABEL_FAILED
        ),
        "response__turn__topic__number",
        ("response_id", "nugget_id", "response__turn__topic__number", "label"),
    ),
}


def _rows(
    *,
    collection: Collection,
    task: str,
    judges: Sequence[Judge],
    topics: Sequence[str] | None,
    condition: str | None,
) -> QuerySet:
    task_spec(task)
    base, topic_field, columns = _ROWS[task]
    rows = base(collection).filter(judge__in=list(judges))
    if topics:
        rows = rows.filter(**{f"{topic_field}__in": list(topics)})
    if condition:
        if task not in HUMAN_CONDITIONS:
            raise ValueError(f"a condition applies to the {', '.join(HUMAN_CONDITIONS)} tasks only")
        # The condition picks which human rows count; rows labelled outside any human condition (machine
        # judges, imported files) are the other side of the comparison and always count.
        human = HUMAN_CONDITIONS[task]
        if condition not in human:
            raise ValueError(f"unknown condition {condition!r}; choose one of {', '.join(sorted(human))}")
        rows = rows.exclude(condition__in=[c for c in human if c != condition])
    return rows.values_list("judge_id", *columns)


def _label(value: Any) -> Any:
    # Yes/no tasks are stored as booleans and compared on a 0/1 scale.
    return int(value) if isinstance(value, bool) else value


def judge_labels(
    *,
    collection: Collection,
    task: str,
    judge: Judge,
    topics: Sequence[str] | None = None,
    condition: str | None = None,
) -> dict[Unit, tuple[str, Any]]:
    """{unit: (topic number, label)} of one judge on a task in a collection."""
    return {
        (u1, u2): (topic, _label(label))
        for _judge, u1, u2, topic, label in _rows(
            collection=collection, task=task, judges=[judge], topics=topics, condition=condition
        ).iterator(chunk_size=5000)
    }


def labels_by_judge(
    *,
    collection: Collection,
    task: str,
    judges: Sequence[Judge],
    topics: Sequence[str] | None = None,
    condition: str | None = None,
) -> dict[int, dict[Unit, tuple[str, Any]]]:
    """{judge id: {unit: (topic number, label)}} for several judges in one query."""
    result: dict[int, dict[Unit, tuple[str, Any]]] = {judge.id: {} for judge in judges}
    for judge_id, u1, u2, topic, label in _rows(
        collection=collection, task=task, judges=judges, topics=topics, condition=condition
    ).iterator(chunk_size=5000):
        result[judge_id][(u1, u2)] = (topic, _label(label))
    return result


def pairs_from_labels(
    task: str, labels_a: dict[Unit, tuple[str, Any]], labels_b: dict[Unit, tuple[str, Any]]
) -> Pairs:
    """The units both judges labelled, in a stable order, as coded pairs."""
    shared = sorted(labels_a.keys() & labels_b.keys(), key=lambda unit: (str(unit[0]), str(unit[1])))
    return encode_pairs(
        a=[labels_a[u][1] for u in shared],
        b=[labels_b[u][1] for u in shared],
        topics=np.array([labels_a[u][0] for u in shared], dtype=str),
        labels=task_spec(task).labels,
    )


def paired_labels(
    *,
    collection: Collection,
    task: str,
    judge_a: Judge,
    judge_b: Judge,
    topics: Sequence[str] | None = None,
    condition: str | None = None,
) -> Pairs:
    """Labels of judges A and B on the units both labelled."""
    by_judge = labels_by_judge(
        collection=collection, task=task, judges=[judge_a, judge_b], topics=topics, condition=condition
    )
    return pairs_from_labels(task, by_judge[judge_a.id], by_judge[judge_b.id])


def reliability_matrix(by_judge: dict[int, dict[Unit, tuple[str, Any]]], task: str) -> np.ndarray:
    """Judges x units of label positions on the task's scale, NaN where a judge gave no label (for
    Krippendorff's alpha over any number of judges)."""
    position = {label: i for i, label in enumerate(task_spec(task).labels)}
    units = sorted(
        set().union(*(labels.keys() for labels in by_judge.values())), key=lambda u: (str(u[0]), str(u[1]))
    )
    column = {unit: i for i, unit in enumerate(units)}
    matrix = np.full((len(by_judge), len(units)), np.nan)
    for row, labels in enumerate(by_judge.values()):
        for unit, (_topic, label) in labels.items():
            matrix[row, column[unit]] = position[label]
    return matrix


def judges_with_labels(*, collection: Collection, task: str, condition: str | None = None) -> QuerySet[Judge]:
    """Judges that gave at least one label on the task in the collection."""
    task_spec(task)
    rows = _ROWS[task][0](collection)
    if condition:
        rows = rows.filter(condition=condition)
    return Judge.objects.filter(id__in=rows.values("judge_id")).order_by("name")


# --- Run scores for system-level agreement -------------------------------------------------------

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
            judge_qrels.setdefault(turn_ids[turn], {})[passage] = grade
    return qrels


def _ndcg5_by_judge(
    collection: Collection, judges: Sequence[Judge], labels: LabelsByJudge | None
) -> dict[int, RunScores]:
    from ir_measures import nDCG

    from judging.evaluation.metrics import runs_evaluate_judges

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
        from judging.support.metrics import support_scores

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
        from judging.support.metrics import support_scores_by_judge

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

    from judging.nuggets.metrics import NuggetMetricsError, nugget_metrics

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
        from judging.rag_nuggets.metrics import nugget_scores

        found = nugget_scores(collection=collection, judge=judge, importance_judge=importance_judge)
        if "vital" in score and found["unlabelled_nuggets"] == found["nuggets"]:  # no vital/okay label
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
