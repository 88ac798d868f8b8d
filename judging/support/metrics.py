"""Weighted support precision and recall of RAG runs (TREC 2024 RAG support evaluation).

For one answer and one judge, with weights Full 1, Partial 0.5, No 0:
- weighted precision = sum of the weights of the judged (sentence, citation) pairs / their number;
- weighted recall = the sum of each sentence's support / the number of sentences of the answer, where a
  sentence that cites nothing counts 0. With one judged citation per sentence (the study's setting) the
  numerators agree; with several, a sentence counts its best-supported citation so recall stays within 1.

A run's score is the mean over the topics it answered that the judge assessed; rankings under two judges
are compared with Kendall's tau and Spearman's rho (judging.agreement.metrics).

The disagreement study's report says how often, and with what Cohen's kappa, an independent assessor
blind to both labels sides with the human or with the LLM on the units where they disagreed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from annotation.models import (
    SUPPORT_WEIGHTS,
    Collection,
    Condition,
    Judge,
    ResponseSentence,
    SupportJudgment,
    SupportLabel,
)
from annotation.support.disagreements import support_disagreements
from annotation.support.services import HUMAN_CONDITIONS, LABELS
from judging.agreement.metrics import cohen_kappa, rank_agreement


def label_weight(label: str) -> float:
    return SUPPORT_WEIGHTS[SupportLabel(label)]


def answer_support(sentence_labels: Sequence[Sequence[str]]) -> tuple[float, float]:
    """(weighted precision, weighted recall) of one answer.

    `sentence_labels` has one entry per sentence of the answer, in order: the labels of its judged
    citations (empty for a sentence that cites nothing).
    """
    if not sentence_labels:
        return 0.0, 0.0
    weights = [[label_weight(label) for label in labels] for labels in sentence_labels]
    pairs = [w for ws in weights for w in ws]
    precision = sum(pairs) / len(pairs) if pairs else 0.0
    recall = sum(max(ws) if ws else 0.0 for ws in weights) / len(sentence_labels)
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


def support_scores(*, collection: Collection, judge: Judge, max_citations: int = 1) -> SupportScores:
    """Per run and per topic weighted precision and recall under one judge.

    Only topics the judge assessed count (it labelled at least one unit of any run there). Within them an
    answer is scored when the judge labelled one of its units, or when it cites nothing at all (then it
    scores 0: it supports nothing); an answer whose citations the judge left unlabelled is skipped.
    """
    return support_scores_by_judge(collection=collection, judges=[judge], max_citations=max_citations)[
        judge.id
    ]


def support_scores_by_judge(
    *, collection: Collection, judges: Sequence[Judge], max_citations: int = 1
) -> dict[int, SupportScores]:
    """{judge id: `support_scores`} of several judges, reading the labels in one query and the answers
    once for all of them (a report ranking runs under each judge read every answer again per judge)."""
    labels: dict[int, dict[int, dict[int, str]]] = {judge.id: defaultdict(dict) for judge in judges}
    topics_assessed: dict[int, set[int]] = {judge.id: set() for judge in judges}
    for judge_id, sid, ci, label, topic_id in SupportJudgment.objects.filter(
        judge__in=list(judges),
        sentence__response__run__collection=collection,
        citation_index__lt=max_citations,
    ).values_list("judge_id", "sentence_id", "citation_index", "label", "sentence__response__turn__topic_id"):
        labels[judge_id][sid][ci] = label
        topics_assessed[judge_id].add(topic_id)

    answers: dict[tuple[str, str], list[tuple[int, list[str]]]] = defaultdict(list)
    answer_topic: dict[tuple[str, str], int] = {}
    for sid, run, turn_id, topic_id, citations in (
        ResponseSentence.objects.filter(
            response__run__collection=collection,
            response__rank=1,
            response__turn__topic_id__in=set().union(*topics_assessed.values()),
        )
        .order_by("response_id", "index")
        .values_list(
            "id", "response__run__name", "response__turn__turn_id", "response__turn__topic_id", "citations"
        )
    ):
        answers[(run, turn_id)].append((sid, citations))
        answer_topic[(run, turn_id)] = topic_id
    ordered = sorted(answers.items())
    return {
        judge.id: _scores(
            [
                (key, sentences)
                for key, sentences in ordered
                if answer_topic[key] in topics_assessed[judge.id]
            ],
            labels[judge.id],
            max_citations,
        )
        for judge in judges
    }


def _scores(
    answers: list[tuple[tuple[str, str], list[tuple[int, list[str]]]]],
    labels: dict[int, dict[int, str]],
    max_citations: int,
) -> SupportScores:
    """One judge's scores of the answers in the topics it assessed, (run, turn id) in order."""
    per_topic: dict[str, dict[str, TopicScore]] = defaultdict(dict)
    for (run, turn_id), sentences in answers:
        judged = [
            [labels[sid][ci] for ci in range(min(len(citations), max_citations)) if ci in labels.get(sid, {})]
            for sid, citations in sentences
        ]
        cites_anything = any(citations for _sid, citations in sentences)
        if cites_anything and not any(judged):
            continue
        precision, recall = answer_support(judged)
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


def support_disagreement_report(
    *, collection: Collection, human_judges: list[Judge], machine_judge: Judge, blind_judge: Judge
) -> dict[str, DisagreementReport]:
    """How often, and with what Cohen's kappa, the blind assessor sides with the human or the machine,
    per human condition (scratch, post-edit) and over all."""
    blind = {
        (sid, ci): label
        for sid, ci, label in SupportJudgment.objects.filter(
            judge=blind_judge, condition=Condition.BLIND
        ).values_list("sentence_id", "citation_index", "label")
    }
    triples: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for items in support_disagreements(
        collection=collection, human_judges=human_judges, machine_judge=machine_judge
    ).values():
        for d in items:
            label = blind.get((d.sentence_id, d.citation_index))
            if label is not None:
                triples[d.human_condition].append((label, d.human_label, d.machine_label))
                triples["all"].append((label, d.human_label, d.machine_label))
    reports: dict[str, DisagreementReport] = {}
    for condition in [c.value for c in HUMAN_CONDITIONS] + ["all"]:
        rows = triples.get(condition, [])
        report = DisagreementReport(condition=condition, units=len(rows))
        report.human.agree = sum(1 for b, h, _m in rows if b == h)
        report.machine.agree = sum(1 for b, _h, m in rows if b == m)
        report.neither = sum(1 for b, h, m in rows if b != h and b != m)
        report.human.kappa = cohen_kappa([r[0] for r in rows], [r[1] for r in rows], labels=LABELS)
        report.machine.kappa = cohen_kappa([r[0] for r in rows], [r[2] for r in rows], labels=LABELS)
        reports[condition] = report
    return reports
