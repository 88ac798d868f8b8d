"""Weighted support precision and recall of RAG answers and runs (TREC 2024 RAG support evaluation).

For one answer and one judge, with each label's weight (Full 1, Partial 0.5, No 0):
- weighted precision = sum of the weights of the judged (sentence, citation) pairs / their number;
- weighted recall = the sum of each sentence's support / the number of sentences of the answer, where a
  sentence that cites nothing counts 0. With one judged citation per sentence (the study's setting) the
  numerators agree; with several, a sentence counts its best-supported citation so recall stays within 1.

A run's score is the mean over the topics it answered that the judge assessed; rankings under two judges
are compared with Kendall's tau and Spearman's rho (judging.measures.agreement). The disagreement study's
report says how often, and with what Cohen's kappa, an independent assessor blind to both labels sides
with the human or with the LLM on the units where they disagreed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from judging.measures.agreement import cohen_kappa, rank_agreement


def answer_support(
    sentence_labels: Sequence[Sequence[str]], *, weights: Mapping[str, float]
) -> tuple[float, float]:
    """(weighted precision, weighted recall) of one answer.

    `sentence_labels` has one entry per sentence of the answer, in order: the labels of its judged
    citations (empty for a sentence that cites nothing); `weights` gives each label's weight.
    """
    if not sentence_labels:
        return 0.0, 0.0
    weighted = [[weights[label] for label in labels] for labels in sentence_labels]
    pairs = [w for ws in weighted for w in ws]
    precision = sum(pairs) / len(pairs) if pairs else 0.0
    recall = sum(max(ws) if ws else 0.0 for ws in weighted) / len(sentence_labels)
    return precision, recall


SupportMeasure = Literal["weighted_precision", "weighted_recall"]
SUPPORT_MEASURES: tuple[SupportMeasure, ...] = ("weighted_precision", "weighted_recall")


class TopicScore(TypedDict):
    weighted_precision: float
    weighted_recall: float
    sentences: int


class RunScore(TypedDict):
    weighted_precision: float
    weighted_recall: float
    sentences: int
    topics: int


class SupportScores(TypedDict):
    runs: dict[str, RunScore]
    per_topic: dict[str, dict[str, TopicScore]]


def answers_scores(
    answers: list[tuple[tuple[str, str], list[tuple[int, list[str]]]]],
    labels: dict[int, dict[int, str]],
    max_citations: int,
    *,
    weights: Mapping[str, float],
) -> SupportScores:
    """One judge's scores of `answers` ((run, turn id): [(sentence id, citations)], in order) from its
    `labels` ({sentence id: {citation index: label}}); an answer whose citations are all unlabelled is
    skipped, one citing nothing scores 0."""
    per_topic: dict[str, dict[str, TopicScore]] = defaultdict(dict)
    for (run, turn_id), sentences in answers:
        judged = [
            [labels[sid][ci] for ci in range(min(len(citations), max_citations)) if ci in labels.get(sid, {})]
            for sid, citations in sentences
        ]
        cites_anything = any(citations for _sid, citations in sentences)
        if cites_anything and not any(judged):
            continue
        precision, recall = answer_support(judged, weights=weights)
        per_topic[run][turn_id] = {
            "weighted_precision": precision,
            "weighted_recall": recall,
            "sentences": len(sentences),
        }

    runs: dict[str, RunScore] = {}
    for run, topics in sorted(per_topic.items()):
        n = len(topics)
        runs[run] = {
            "weighted_precision": sum(t["weighted_precision"] for t in topics.values()) / n,
            "weighted_recall": sum(t["weighted_recall"] for t in topics.values()) / n,
            "sentences": sum(t["sentences"] for t in topics.values()),
            "topics": n,
        }
    return {"runs": runs, "per_topic": dict(per_topic)}


@dataclass
class LeaderboardRow:
    rank: int
    run: str
    weighted_precision: float
    weighted_recall: float
    topics: int
    sentences: int

    @property
    def mean_sentences(self) -> float:
        return self.sentences / self.topics if self.topics else 0.0


def leaderboard(scores: SupportScores, *, by: SupportMeasure = "weighted_recall") -> list[LeaderboardRow]:
    """Runs ordered best first by one measure (ties broken by the other measure, then name)."""
    other: SupportMeasure = "weighted_precision" if by == "weighted_recall" else "weighted_recall"
    ordered = sorted(scores["runs"].items(), key=lambda item: (-item[1][by], -item[1][other], item[0]))
    return [
        LeaderboardRow(
            rank=i,
            run=run,
            weighted_precision=s["weighted_precision"],
            weighted_recall=s["weighted_recall"],
            topics=s["topics"],
            sentences=s["sentences"],
        )
        for i, (run, s) in enumerate(ordered, start=1)
    ]


def mean_sentences_per_answer(scores: SupportScores) -> float:
    answers = [t for topics in scores["per_topic"].values() for t in topics.values()]
    return sum(t["sentences"] for t in answers) / len(answers) if answers else 0.0


class RankCorrelation(TypedDict):
    runs: int
    kendall_tau: float | None
    spearman_rho: float | None


def rank_correlation(a: dict[str, float], b: dict[str, float]) -> RankCorrelation:
    """Kendall's tau-b and Spearman's rho between two {run: score} maps on the runs they share.

    Delegates to the agreement capability's `rank_agreement` (scipy underneath), so support rankings and
    every other ranking comparison in Assay agree; undefined correlations are None.
    """
    result = rank_agreement(scores_a=a, scores_b=b)
    return {
        "runs": result["n_runs"],
        "kendall_tau": result["kendall_tau_b"],
        "spearman_rho": result["spearman_rho"],
    }


def compare_judges(first: SupportScores, second: SupportScores) -> dict[str, RankCorrelation]:
    """Rank correlation of the run orderings under two judges, for each measure."""
    return {
        measure: rank_correlation(
            {run: s[measure] for run, s in first["runs"].items()},
            {run: s[measure] for run, s in second["runs"].items()},
        )
        for measure in SUPPORT_MEASURES
    }


# --- The disagreement study's report -----------------------------------------------------------


@dataclass
class SideAgreement:
    agree: int = 0
    kappa: float | None = None

    def as_dict(self, n: int) -> dict[str, Any]:
        return {"agree": self.agree, "rate": (self.agree / n) if n else None, "kappa": self.kappa}


@dataclass
class DisagreementReport:
    condition: str
    units: int = 0
    human: SideAgreement = field(default_factory=SideAgreement)
    machine: SideAgreement = field(default_factory=SideAgreement)
    neither: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "units": self.units,
            "agrees_with_human": self.human.as_dict(self.units),
            "agrees_with_machine": self.machine.as_dict(self.units),
            "agrees_with_neither": self.neither,
        }


def disagreement_report(
    condition: str, rows: Sequence[tuple[str, str, str]], *, labels: Sequence[str]
) -> DisagreementReport:
    """The report of one condition from its (blind label, human label, machine label) rows."""
    report = DisagreementReport(condition=condition, units=len(rows))
    report.human.agree = sum(1 for b, h, _m in rows if b == h)
    report.machine.agree = sum(1 for b, _h, m in rows if b == m)
    report.neither = sum(1 for b, h, m in rows if b != h and b != m)
    report.human.kappa = cohen_kappa([r[0] for r in rows], [r[1] for r in rows], labels=labels)
    report.machine.kappa = cohen_kappa([r[0] for r in rows], [r[2] for r in rows], labels=labels)
    return report
