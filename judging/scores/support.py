"""Support precision and recall read from the database: each judge's support labels and the runs'
answers, scored by `judging.measures.support`; and the disagreement study's report of the blind
assessor's labels."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from annotation.models import SUPPORT_WEIGHTS, Collection, Condition, Judge, ResponseSentence, SupportJudgment
from annotation.support.disagreements import support_disagreements
from annotation.support.services import HUMAN_CONDITIONS, LABELS
from judging.measures.support import DisagreementReport, SupportScores, answers_scores, disagreement_report

# Each label's weight, keyed by the label as the database stores it.
WEIGHTS = {label.value: weight for label, weight in SUPPORT_WEIGHTS.items()}


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
        judge.id: answers_scores(
            [
                (key, sentences)
                for key, sentences in ordered
                if answer_topic[key] in topics_assessed[judge.id]
            ],
            labels[judge.id],
            max_citations,
            weights=WEIGHTS,
        )
        for judge in judges
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
        reports[condition] = disagreement_report(condition, triples.get(condition, []), labels=LABELS)
    return reports
