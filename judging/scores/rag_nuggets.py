"""The TREC RAG nugget scores read from the database: each answer's assigned nuggets counted by support
and importance in one query, scored by `judging.measures.rag_nuggets` (whose docstring gives the rules);
and nuggetizer's per-answer scores file."""

from __future__ import annotations

from django.db.models import Count, Q

from annotation.models import (
    Collection,
    Judge,
    Nugget,
    NuggetAssignment,
    NuggetImportance,
    NuggetSetTurn,
    NuggetSupport,
    Response,
    Run,
    Turn,
)
from annotation.rag_nuggets.formats import OVERALL_QID, scores_text
from annotation.rag_nuggets.formats import AnswerScores as FileScores
from annotation.rag_nuggets.importance import importance_labels, vital_nuggets
from core.ordering import natural_key
from judging.measures.rag_nuggets import SCORE_NAMES, AnswerScores, Counts, NuggetScores, mean_scores

ANSWERED_ONLY_NOTE = (
    "answered topics only: each run's mean is over the answers that have labels, not over every topic of "
    "the nugget set (nuggetizer scores a skipped topic or an empty nugget list as 0)"
)


def _topics(collection: Collection, owners: set[int], owned: set[int], labelled: set[int]) -> set[int]:
    """The topics the evaluation covers: those the judge labelled some answer of, and those whose nugget
    list (of the `owners`, whose nuggets lie on the `owned` turns) is empty, as a created-nuggets file
    keeps one. A topic of the set nobody has labelled yet (a person's work handed out topic by topic, a job
    still running) is not yet evaluated rather than 0 for every run."""
    listed = NuggetSetTurn.objects.filter(judge_id__in=owners, turn__collection=collection)
    return labelled | (set(listed.values_list("turn_id", flat=True)) - owned)


def nugget_scores(
    *,
    collection: Collection,
    judge: Judge,
    importance_judge: Judge | None = None,
    nuggets_judge: Judge | None = None,
    answered_only: bool = False,
) -> NuggetScores:
    """The four scores of every run's answer on every topic of the nugget set, and their mean per run.

    The runs are those the judge assigned nuggets to. `nuggets_judge` keeps only the nuggets of that
    judge's lists (a judge who assigned two judges' nuggets); `importance_judge` says whose vital/okay
    counts (default: `IMPORTANCE_DEFAULT`); `answered_only` scores only the answers that have labels.
    The counts are summed in the database, one row per answer, in a fixed number of queries.
    """
    assignments = NuggetAssignment.objects.filter(judge=judge, response__run__collection=collection)
    nuggets = Nugget.objects.filter(turn__collection=collection)
    if nuggets_judge is not None:
        assignments = assignments.filter(nugget__judge=nuggets_judge)
        nuggets = nuggets.filter(judge=nuggets_judge)
    scored = set(assignments.values_list("nugget_id", flat=True).distinct())
    owner_of: dict[int, tuple[int, int]] = {
        pk: (owner, turn) for pk, owner, turn in nuggets.values_list("pk", "judge_id", "turn_id")
    }
    labels = importance_labels(
        collection=collection, judge=judge, importance_judge=importance_judge, nuggets_judge=nuggets_judge
    )
    # Which nuggets are vital, as a subquery PostgreSQL hashes once, not a list of thousands of ids sent
    # with the query (a TREC RAG-sized evaluation has ~4,500 vital nuggets).
    is_vital = Q(
        nugget_id__in=vital_nuggets(
            collection=collection, judge=judge, importance_judge=importance_judge, nuggets_judge=nuggets_judge
        )
    )
    support, partial = Q(label=NuggetSupport.SUPPORT), Q(label=NuggetSupport.PARTIAL)
    counts: dict[tuple[int, int], Counts] = {}
    for run_pk, turn_pk, *numbers in (
        assignments.values("response_id")
        .annotate(
            total=Count("id"),
            n_vital=Count("id", filter=is_vital),
            supported=Count("id", filter=support),
            vital_supported=Count("id", filter=support & is_vital),
            partial=Count("id", filter=partial),
            vital_partial=Count("id", filter=partial & is_vital),
        )
        .values_list(
            "response__run_id",
            "response__turn_id",
            "total",
            "n_vital",
            "supported",
            "vital_supported",
            "partial",
            "vital_partial",
        )
        .order_by()
    ):
        counts[run_pk, turn_pk] = Counts(*numbers)
    run_pks = {run for run, _ in counts}
    if answered_only:
        topics = {turn for _, turn in counts}
        answered = set(counts)
    else:
        owners = {owner_of[pk][0] for pk in scored if pk in owner_of}
        topics = _topics(
            collection,
            owners,
            owned={turn for owner, turn in owner_of.values() if owner in owners},
            labelled={turn for _, turn in counts},
        )
        answered = set(
            Response.objects.filter(run_id__in=run_pks, turn_id__in=topics, rank=1).values_list(
                "run_id", "turn_id"
            )
        )
    run_names = dict(Run.objects.filter(pk__in=run_pks).values_list("pk", "name"))
    turn_ids = dict(Turn.objects.filter(pk__in=topics).values_list("pk", "turn_id"))
    none = Counts()
    answers = [
        AnswerScores(
            run_id=run_names[run],
            qid=turn_ids[turn],
            answered=(run, turn) in answered,
            nuggets=counts.get((run, turn), none).total,
            **counts.get((run, turn), none).scores(),
        )
        for run in sorted(run_pks, key=run_names.__getitem__)
        for turn in sorted(topics, key=lambda t: natural_key(turn_ids[t]))
        if not answered_only or (run, turn) in counts
    ]
    by_run: dict[str, list[AnswerScores]] = {}
    for row in answers:
        by_run.setdefault(row["run_id"], []).append(row)
    return NuggetScores(
        runs={run: mean_scores(rows) for run, rows in by_run.items()},
        answers=answers,
        nuggets=len(scored),
        unlabelled_nuggets=len(
            scored - {pk for pk, label in labels.items() if label in NuggetImportance.values}
        ),
    )


def nugget_scores_text(answers: list[AnswerScores]) -> str:
    """nuggetizer's per-answer scores file (what its calculate_metrics writes) for these answers: a line
    an answer, then their mean under qid "all". Give it one run's answers, as nuggetizer scores a run's
    assignments file."""
    overall = mean_scores(answers)
    rows = [FileScores(a["qid"], *(a[name] for name in SCORE_NAMES)) for a in answers]  # type: ignore[literal-required]
    rows.append(FileScores(OVERALL_QID, *(overall[name] for name in SCORE_NAMES)))  # type: ignore[literal-required]
    return scores_text(rows)
