"""The four scores of TREC RAG nugget evaluation, as nuggetizer computes them (AutoNuggetizer, Pradeep et
al. 2024; nuggetizer.core.metrics).

For one answer and its assigned nuggets (support 1, partial_support 0.5, not_support 0):
- strict_vital_score: the share of its vital nuggets the answer supports (partial counts nothing);
- strict_all_score: the same over all its nuggets;
- vital_score, all_score: the same with partial support counting one half.
A share over no nugget is 0. A run's score is the plain mean over the topics.

By default, as nuggetizer's pipeline: a run is scored on every topic the evaluation covers (those the judge
labelled some answer of, and those whose nugget list is empty). An answer to a topic with an empty list
scores 0, and so does a covered topic the run did not answer (nuggetizer writes an all-`not_support` record
for it) or whose answer has no label yet. `answered_only` keeps the older mean over the answers that have labels; pages name it when used.

An answer's nuggets are those its judge assigned; a nugget's importance follows
`annotation.rag_nuggets.importance` (default: the importance that came with the assignments), and one
without a label counts in the "all" scores only, as nuggetizer counts any importance other than "vital".
An assignment "failed" (nuggetizer's: its LLM gave no readable label) supports nothing and counts in the
whole, as in nuggetizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import TypedDict

SCORE_NAMES = ("strict_vital_score", "strict_all_score", "vital_score", "all_score")


class Scores(TypedDict):
    strict_vital_score: float
    strict_all_score: float
    vital_score: float
    all_score: float


class AnswerScores(Scores):
    run_id: str
    qid: str
    # False: the run gave no answer to the topic (nuggetizer's all-not_support record). `nuggets`: how many
    # nuggets the judge assigned in the answer (0 for an empty list, a skipped topic, an unlabelled answer).
    answered: bool
    nuggets: int


class NuggetScores(TypedDict):
    runs: dict[str, Scores]
    answers: list[AnswerScores]
    # Distinct nuggets scored, and how many of them the importance judge left without a vital/okay label
    # (none, or nuggetizer's "failed"): those count as okay (as in nuggetizer), so with none labelled the
    # vital scores are 0 for want of labels, not of support, and the command says so.
    nuggets: int
    unlabelled_nuggets: int


@dataclass
class Counts:
    """Nuggets of one answer: all and vital, and of each how many are supported and partly supported."""

    total: int = 0
    vital: int = 0
    supported: int = 0
    vital_supported: int = 0
    partial: int = 0
    vital_partial: int = 0

    def scores(self) -> Scores:
        # The same operations as nuggetizer's, so that the floats are the same to the last bit.
        def share(part: float, whole: int) -> float:
            return part / whole if whole else 0.0

        return Scores(
            strict_vital_score=share(self.vital_supported, self.vital),
            strict_all_score=share(self.supported, self.total),
            vital_score=share(self.vital_supported + 0.5 * self.vital_partial, self.vital),
            all_score=share(self.supported + 0.5 * self.partial, self.total),
        )


def mean_scores(rows: list[Scores] | list[AnswerScores]) -> Scores:
    """The mean of each score over `rows` (statistics.mean, as nuggetizer's global metrics)."""
    return Scores(
        strict_vital_score=mean(r["strict_vital_score"] for r in rows),
        strict_all_score=mean(r["strict_all_score"] for r in rows),
        vital_score=mean(r["vital_score"] for r in rows),
        all_score=mean(r["all_score"] for r in rows),
    )


def vital_unlabelled(scores: NuggetScores) -> bool:
    """No scored nugget has a vital/okay label from the importance judge: the vital scores are 0 for want
    of labels, not of support, and rank nothing."""
    return bool(scores["nuggets"]) and scores["unlabelled_nuggets"] == scores["nuggets"]


def per_topic_scores(scores: NuggetScores, score: str) -> dict[str, dict[str, float]]:
    """{run: {topic: score}} of one evaluation."""
    per_topic: dict[str, dict[str, float]] = {}
    for answer in scores["answers"]:
        per_topic.setdefault(answer["run_id"], {})[answer["qid"]] = answer[score]  # type: ignore[literal-required]
    return per_topic


def topic_means(
    per_topic: dict[str, dict[str, float]], topics: set[str]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Each run's mean over `topics` (statistics.mean, as nuggetizer's run means), and its per-topic scores
    there: on every topic of the evaluation, the run scores of `nugget_scores`."""
    kept = {run: {t: v for t, v in scores.items() if t in topics} for run, scores in per_topic.items()}
    kept = {run: scores for run, scores in kept.items() if scores}
    return {run: mean(scores.values()) for run, scores in kept.items()}, kept
