"""The reads of a calibration: each evaluation's nugget scores (two queries each, whatever the size), turned
into run scores and per-topic scores for the statistics of `judging.measures.agreement.rank_agreement`
(run-level tau-b, its interval over topics, Spearman's rho) and `judging.measures.topic_agreement`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.models import Collection, Judge
from core.ordering import natural_key
from core.wording import plural
from judging.measures.agreement import rank_agreement
from judging.measures.rag_nuggets import (
    SCORE_NAMES,
    NuggetScores,
    per_topic_scores,
    topic_means,
    vital_unlabelled,
)
from judging.measures.topic_agreement import topic_agreement
from judging.rag_nuggets.selectors import DEFAULT_SCORE
from judging.scores.rag_nuggets import nugget_scores


@dataclass(frozen=True)
class NuggetEvaluation:
    """One way of scoring the runs: whose assignments, and whose vital/okay labels (None: the scores'
    stated default)."""

    judge: Judge
    importance_judge: Judge | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "judge": self.judge.name,
            "importance_judge": self.importance_judge.name if self.importance_judge else None,
        }


def _unlabelled_note(scores: NuggetScores, score: str, side: str) -> str | None:
    if "vital" in score and vital_unlabelled(scores):
        return (
            f"Evaluation {side}: none of its {plural(scores['nuggets'], 'nugget')} has a vital/okay label from its "
            f"importance judge, so its {score} is 0 for want of labels: choose the judge that labelled them."
        )
    return None


def nugget_calibration(
    *,
    collection: Collection,
    a: NuggetEvaluation,
    b: NuggetEvaluation,
    score: str = DEFAULT_SCORE,
    answered_only: bool = False,
    seed: int = 0,
) -> dict[str, Any]:
    """Run-level and per-topic agreement of two nugget evaluations of the collection's runs by `score`.

    `run_level` is `rank_agreement`'s report (tau-b with its percentile interval from a bootstrap over
    topics, Spearman's rho, each run's score and rank under both); `per_topic` is `topic_agreement`'s
    (tau-b and Pearson's r on each topic over the runs, and their spread). The run scores are means over
    the topics both evaluations cover (`topics` names those of one only); on the same topics they are
    `nugget_scores`'s. `answered_only` averages each run over the topics it answered instead of every topic
    the evaluation covers (nuggetizer's way).
    """
    if score not in SCORE_NAMES:
        raise ValueError(f"unknown score {score!r}; choose one of {', '.join(SCORE_NAMES)}")
    found = {
        side: nugget_scores(
            collection=collection,
            judge=evaluation.judge,
            importance_judge=evaluation.importance_judge,
            answered_only=answered_only,
        )
        for side, evaluation in (("a", a), ("b", b))
    }
    all_a, all_b = per_topic_scores(found["a"], score), per_topic_scores(found["b"], score)
    topics_a = {topic for scores in all_a.values() for topic in scores}
    topics_b = {topic for scores in all_b.values() for topic in scores}
    # A manual evaluation often covers a subset of the topics: the runs are compared on the topics both
    # evaluations cover, or a run's two scores would be means over different questions.
    shared = topics_a & topics_b
    runs_a, per_topic_a = topic_means(all_a, shared)
    runs_b, per_topic_b = topic_means(all_b, shared)
    run_level = rank_agreement(
        scores_a=runs_a, scores_b=runs_b, per_turn_a=per_topic_a, per_turn_b=per_topic_b, seed=seed
    )
    notes = [note for side in ("a", "b") if (note := _unlabelled_note(found[side], score, side.upper()))]
    if topics_a != topics_b:
        notes.append(
            f"The runs are compared on the {plural(len(shared), 'topic')} both evaluations cover: "
            f"{plural(len(topics_a - shared), 'topic')} of A only and {plural(len(topics_b - shared), 'topic')} "
            "of B only are left out of the run scores here."
        )
    return {
        "collection": collection.name,
        "score": score,
        "answered_only": answered_only,
        "a": a.describe(),
        "b": b.describe(),
        "run_level": run_level,
        "topics": {
            "shared": len(shared),
            "only_a": sorted(topics_a - shared, key=natural_key),
            "only_b": sorted(topics_b - shared, key=natural_key),
        },
        "per_topic": topic_agreement(per_topic_a=all_a, per_topic_b=all_b),
        "notes": notes,
    }
