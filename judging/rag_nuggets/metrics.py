"""The four scores of TREC RAG nugget evaluation, as nuggetizer computes them (AutoNuggetizer, Pradeep et
al. 2024; nuggetizer.core.metrics).

For one answer and its assigned nuggets (support 1, partial_support 0.5, not_support 0):
- strict_vital_score: the share of its vital nuggets the answer supports (partial counts nothing);
- strict_all_score: the same over all its nuggets;
- vital_score, all_score: the same with partial support counting one half.
A share over no nugget is 0. A run's score is the plain mean over the answers it gave (the topics).

An answer's nuggets are those its judge assigned; a nugget's importance is the vital/okay label of the
importance judge (default: the judge whose nugget it is), and one without such a label counts in the
"all" scores only, as nuggetizer counts any importance other than "vital".
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import TypedDict

from django.db.models import F

from annotation.models import (
    Collection,
    Judge,
    NuggetAssignment,
    NuggetImportance,
    NuggetImportanceJudgment,
    NuggetSupport,
)
from annotation.selectors import natural_key

SCORE_NAMES = ("strict_vital_score", "strict_all_score", "vital_score", "all_score")


class Scores(TypedDict):
    strict_vital_score: float
    strict_all_score: float
    vital_score: float
    all_score: float


class AnswerScores(Scores):
    run_id: str
    qid: str


class NuggetScores(TypedDict):
    runs: dict[str, Scores]
    answers: list[AnswerScores]
    # Distinct nuggets scored, and how many of them the importance judge left without a vital/okay label:
    # those count as okay (as in nuggetizer), so with none labelled the vital scores are 0 for want of
    # labels, not of support, and the command says so.
    nuggets: int
    unlabelled_nuggets: int


@dataclass
class _Counts:
    """Nuggets of one answer: all and vital, and of each how many are supported and partly supported."""

    total: int = 0
    vital: int = 0
    supported: int = 0
    vital_supported: int = 0
    partial: int = 0
    vital_partial: int = 0

    def add(self, *, vital: bool, label: str) -> None:
        full, half = label == NuggetSupport.SUPPORT, label == NuggetSupport.PARTIAL
        self.total += 1
        self.supported += full
        self.partial += half
        if vital:
            self.vital += 1
            self.vital_supported += full
            self.vital_partial += half

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


def nugget_scores(
    *,
    collection: Collection,
    judge: Judge,
    importance_judge: Judge | None = None,
    nuggets_judge: Judge | None = None,
) -> NuggetScores:
    """The four scores of every answer the judge assigned nuggets to, and their mean per run.

    Two queries whatever the size: the judge's assignments with their answers' run and question, and
    the vital/okay labels of the nuggets concerned. `nuggets_judge` keeps only the nuggets of that judge's
    lists (a judge who assigned two judges' nuggets); `importance_judge` says whose vital/okay counts.
    """
    assignments = NuggetAssignment.objects.filter(judge=judge, response__run__collection=collection)
    if nuggets_judge is not None:
        assignments = assignments.filter(nugget__judge=nuggets_judge)
    importance = NuggetImportanceJudgment.objects.filter(nugget__turn__collection=collection)
    if importance_judge is not None:
        importance = importance.filter(judge=importance_judge)
    else:
        importance = importance.filter(judge=F("nugget__judge"))
    if nuggets_judge is not None:
        importance = importance.filter(nugget__judge=nuggets_judge)
    labels = dict(importance.values_list("nugget_id", "importance"))
    vital = {nugget_id for nugget_id, label in labels.items() if label == NuggetImportance.VITAL}
    scored: set[int] = set()
    counts: dict[tuple[str, str], _Counts] = {}
    for run, qid, nugget_id, label in assignments.values_list(
        "response__run__name", "response__turn__turn_id", "nugget_id", "label"
    ).iterator(chunk_size=10000):
        answer = counts.get((run, qid))
        if answer is None:
            answer = counts[run, qid] = _Counts()
        answer.add(vital=nugget_id in vital, label=label)
        scored.add(nugget_id)
    answers = [
        AnswerScores(run_id=run, qid=qid, **counts[run, qid].scores())
        for run, qid in sorted(counts, key=lambda key: (key[0], natural_key(key[1])))
    ]
    by_run: dict[str, list[AnswerScores]] = {}
    for row in answers:
        by_run.setdefault(row["run_id"], []).append(row)
    return NuggetScores(
        runs={run: mean_scores(rows) for run, rows in by_run.items()},
        answers=answers,
        nuggets=len(scored),
        unlabelled_nuggets=len(scored - labels.keys()),
    )
