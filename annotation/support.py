"""Support assessment of RAG answers: is each answer sentence supported by the passage it cites?

A unit is (answer sentence, k-th citation) for the first `max_citations` citations of the sentence
(one by default, as in the TREC 2024 RAG support evaluation). A sentence that cites nothing is No support
by definition: it is never a unit, never shown to assessors, and counts 0 in weighted recall.

Assessors judge a topic's units in the condition an organiser chose for them (from scratch, or
post-editing a machine judge's label); an assessor never meets the same unit in two conditions. Sampled
human/LLM disagreements go to an independent assessor blind to both labels.
"""

from __future__ import annotations

import random
import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from sklearn.metrics import cohen_kappa_score

from annotation.formats import Problems, iter_jsonl, read_text
from annotation.models import (
    Collection,
    Judge,
    ResponseSentence,
    SupportAssignment,
    SupportJudgment,
    SupportLabel,
    Topic,
)
from annotation.services import ImportResult, judge_for_assessor

LABELS = [SupportLabel.FULL.value, SupportLabel.PARTIAL.value, SupportLabel.NONE.value]
HUMAN_CONDITIONS = (SupportJudgment.Condition.SCRATCH, SupportJudgment.Condition.POST_EDIT)

GUIDELINE = {
    "question": "Is it accurate to say “according to the citation …” followed by the sentence?",
    SupportLabel.FULL.value: "Full support: all of the sentence's information is supported by the citation.",
    SupportLabel.PARTIAL.value: "Partial support: some of the sentence's information is supported by the citation.",
    SupportLabel.NONE.value: "No support: none of the sentence's information is supported by the citation.",
}


def default_max_citations() -> int:
    """How many citations of each sentence are judged; 1 (the first) unless SUPPORT_MAX_CITATIONS says more."""
    return max(1, int(getattr(settings, "SUPPORT_MAX_CITATIONS", 1)))


class SupportConflict(Exception):
    """A request would show an assessor a unit in a second condition, or judge a unit not assigned."""


# --- Units -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SupportUnit:
    sentence: ResponseSentence
    citation_index: int

    @property
    def passage_id(self) -> str:
        return self.sentence.citations[self.citation_index]

    @property
    def key(self) -> tuple[int, int]:
        return (self.sentence.id, self.citation_index)


def _sentences(*, collection: Collection | None = None, topic: Topic | None = None):
    queryset = ResponseSentence.objects.select_related("response__run", "response__turn__topic").order_by(
        "response__run__name", "response__turn__turn_id", "response__rank", "index"
    )
    if topic is not None:
        queryset = queryset.filter(response__turn__topic=topic)
    if collection is not None:
        queryset = queryset.filter(response__run__collection=collection)
    return queryset


def units_of_sentences(
    sentences: Iterable[ResponseSentence], *, max_citations: int = 1
) -> Iterator[SupportUnit]:
    """Units of the given sentences: the first `max_citations` citations of each; uncited sentences yield none."""
    for sentence in sentences:
        for citation_index in range(min(len(sentence.citations), max_citations)):
            yield SupportUnit(sentence, citation_index)


def support_units(
    *, collection: Collection | None = None, topic: Topic | None = None, max_citations: int | None = None
) -> list[SupportUnit]:
    """Every unit of a collection or topic, in a stable order: run, topic, sentence, citation."""
    limit = default_max_citations() if max_citations is None else max_citations
    return list(units_of_sentences(_sentences(collection=collection, topic=topic), max_citations=limit))


def uncited_sentences(
    *, collection: Collection | None = None, topic: Topic | None = None
) -> list[ResponseSentence]:
    """Sentences that cite nothing: No support automatically, never shown to assessors as units."""
    return [s for s in _sentences(collection=collection, topic=topic) if not s.citations]


def assignment_units(assignment: SupportAssignment) -> list[SupportUnit]:
    """The units an assignment shows, in the order the assessor meets them."""
    if assignment.condition == SupportAssignment.Condition.BLIND:
        wanted = [(int(sid), int(ci)) for sid, ci in assignment.units]
        sentences = ResponseSentence.objects.select_related("response__run", "response__turn__topic").in_bulk(
            [sid for sid, _ci in wanted]
        )
        return [
            SupportUnit(sentences[sid], ci)
            for sid, ci in wanted
            if sid in sentences and ci < len(sentences[sid].citations)
        ]
    return support_units(topic=assignment.topic, max_citations=assignment.max_citations)


def labels_by_unit(*, judge: Judge, sentence_ids: Iterable[int]) -> dict[tuple[int, int], SupportJudgment]:
    return {
        (j.sentence_id, j.citation_index): j
        for j in SupportJudgment.objects.filter(judge=judge, sentence_id__in=list(sentence_ids))
    }


# --- Assignments -----------------------------------------------------------------------------------


def _assessor_labels_in_topic(user: AbstractBaseUser, topic: Topic):
    return SupportJudgment.objects.filter(judge__user=user, sentence__response__turn__topic=topic)


@transaction.atomic
def support_assignment_set(
    *,
    topic: Topic,
    user: AbstractBaseUser,
    condition: str,
    machine_judge: Judge | None = None,
    max_citations: int | None = None,
) -> SupportAssignment:
    """Assign an assessor a topic's units in one condition (from scratch or post-editing).

    Changing an assessor's condition on a topic is refused once they have labelled any unit of it, so no
    assessor judges the same unit in two conditions.
    """
    if condition not in (SupportAssignment.Condition.SCRATCH, SupportAssignment.Condition.POST_EDIT):
        raise SupportConflict(f"condition must be scratch or post-edit, not {condition!r}")
    if condition == SupportAssignment.Condition.POST_EDIT and machine_judge is None:
        raise SupportConflict("post-editing needs the machine judge whose labels are shown")
    if condition == SupportAssignment.Condition.SCRATCH:
        machine_judge = None
    limit = default_max_citations() if max_citations is None else max_citations
    if limit < 1:
        raise SupportConflict("max_citations must be at least 1")
    current = SupportAssignment.objects.select_for_update().filter(topic=topic, user=user).first()
    if (
        current is not None
        and current.condition != condition
        and _assessor_labels_in_topic(user, topic).exists()
    ):
        raise SupportConflict(
            f"{user.get_username()} already judged units of topic {topic.number} in condition "
            f"{current.condition}; an assessor never sees the same unit in both conditions"
        )
    if current is None:
        if _assessor_labels_in_topic(user, topic).exclude(condition=condition).exists():
            raise SupportConflict(
                f"{user.get_username()} already judged units of topic {topic.number} in another condition"
            )
        return SupportAssignment.objects.create(
            topic=topic, user=user, condition=condition, machine_judge=machine_judge, max_citations=limit
        )
    current.condition, current.machine_judge, current.max_citations = condition, machine_judge, limit
    current.units = []
    current.save(update_fields=["condition", "machine_judge", "max_citations", "units"])
    return current


def support_assignment_get(*, assignment_id: int, user: AbstractBaseUser) -> SupportAssignment:
    """An assignment reached through its assessor; anyone else gets DoesNotExist."""
    return SupportAssignment.objects.select_related("topic__collection", "machine_judge").get(
        id=assignment_id, user=user
    )


@dataclass
class AssignmentProgress:
    assignment: SupportAssignment
    total: int
    done: int

    @property
    def complete(self) -> bool:
        return self.total > 0 and self.done >= self.total


def support_assignments_of(*, user: AbstractBaseUser) -> list[AssignmentProgress]:
    judge = Judge.objects.filter(user=user).first()
    result = []
    for assignment in SupportAssignment.objects.filter(user=user).select_related("topic__collection"):
        units = assignment_units(assignment)
        done = 0
        if judge is not None:
            labels = labels_by_unit(judge=judge, sentence_ids={u.sentence.id for u in units})
            done = sum(1 for u in units if u.key in labels)
        result.append(AssignmentProgress(assignment, len(units), done))
    return result


# --- Human labels ----------------------------------------------------------------------------------


@transaction.atomic
def support_judgment_submit(
    *,
    assignment: SupportAssignment,
    user: AbstractBaseUser,
    sentence: ResponseSentence,
    citation_index: int,
    label: str,
    time_spent_ms: int | None = None,
) -> SupportJudgment:
    """Record or revise an assessor's label for one unit of their assignment.

    In post-editing the label shown is read here from the machine judge, not taken from the page, and
    `changed` says whether the assessor moved away from it. Time spent adds up over revisions.
    """
    if assignment.user_id != user.pk:
        raise SupportConflict("this assignment belongs to another assessor")
    if label not in LABELS:
        raise SupportConflict(f"label must be one of {', '.join(LABELS)}")
    if (sentence.id, citation_index) not in {u.key for u in assignment_units(assignment)}:
        raise SupportConflict("this unit is not part of the assignment")
    judge = judge_for_assessor(user=user)
    condition = assignment.condition
    shown = ""
    if condition == SupportAssignment.Condition.POST_EDIT:
        machine = SupportJudgment.objects.filter(
            judge=assignment.machine_judge, sentence=sentence, citation_index=citation_index
        ).first()
        shown = machine.label if machine is not None else ""
    judgment = (
        SupportJudgment.objects.select_for_update()
        .filter(judge=judge, sentence=sentence, citation_index=citation_index)
        .first()
    )
    if judgment is not None and judgment.condition != condition:
        raise SupportConflict(
            f"this unit was judged in condition {judgment.condition}; an assessor never judges a unit in two conditions"
        )
    if judgment is None:
        return SupportJudgment.objects.create(
            judge=judge,
            sentence=sentence,
            citation_index=citation_index,
            passage_id=sentence.citations[citation_index],
            label=label,
            condition=condition,
            shown_label=shown,
            changed=(label != shown) if shown else None,
            time_spent_ms=time_spent_ms,
        )
    judgment.label = label
    judgment.changed = (label != judgment.shown_label) if judgment.shown_label else None
    if time_spent_ms is not None:
        judgment.time_spent_ms = (judgment.time_spent_ms or 0) + time_spent_ms
    judgment.save(update_fields=["label", "changed", "time_spent_ms", "updated_at"])
    return judgment


# --- Import and export of labels -------------------------------------------------------------------


@dataclass
class SupportLabelRecord:
    run_id: str
    topic_id: str
    sentence_index: int
    passage_id: str
    label: str
    line: int


def parse_support_labels(path: str | Path) -> list[SupportLabelRecord]:
    """JSONL `{"run_id", "topic_id", "sentence_index" (0-based), "passage_id", "label": FS|PS|NS}`."""
    name = str(path)
    text = read_text(path)
    problems = Problems(name)
    records: list[SupportLabelRecord] = []
    seen: dict[tuple[str, str, int, str], int] = {}
    for line, obj in iter_jsonl(text, name, problems):
        missing = [
            k
            for k in ("run_id", "topic_id", "sentence_index", "passage_id", "label")
            if obj.get(k) in (None, "")
        ]
        if missing:
            problems.add(line, f"missing {', '.join(missing)}")
            continue
        index = obj["sentence_index"]
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            problems.add(line, f"sentence_index {index!r} is not a 0-based integer")
            continue
        label = str(obj["label"]).strip().upper()
        if label not in LABELS:
            problems.add(line, f"label {obj['label']!r} is not FS, PS or NS")
            continue
        record = SupportLabelRecord(
            run_id=str(obj["run_id"]).strip(),
            topic_id=str(obj["topic_id"]).strip(),
            sentence_index=index,
            passage_id=str(obj["passage_id"]).strip(),
            label=label,
            line=line,
        )
        key = (record.run_id, record.topic_id, record.sentence_index, record.passage_id)
        if key in seen:
            problems.add(line, f"the same unit is labelled twice (first on line {seen[key]})")
            continue
        seen[key] = line
        records.append(record)
        if problems.full:
            break
    problems.raise_if_any()
    if not records:
        problems.add(None, "no labels in the file")
        problems.raise_if_any()
    return records


@transaction.atomic
def support_labels_import(*, path: str | Path, collection: Collection, judge: Judge) -> ImportResult:
    """Load support labels of `judge` (e.g. GPT-4o's, to post-edit); all or nothing, idempotent.

    Each line names its unit by run, topic, 0-based sentence index and the cited passage id; the passage
    must be one the sentence cites, and its first position among the citations is the citation index.
    """
    records = parse_support_labels(path)
    problems = Problems(str(path))
    # Plain tuples, not model instances: a run set holds tens of thousands of sentences.
    sentences: dict[tuple[str, str, int], tuple[int, list[str]]] = {
        (run, turn_id, index): (sid, citations)
        for sid, run, turn_id, index, citations in ResponseSentence.objects.filter(
            response__run__collection=collection,
            response__run__name__in={r.run_id for r in records},
            response__rank=1,
        ).values_list("id", "response__run__name", "response__turn__turn_id", "index", "citations")
    }
    resolved: list[tuple[SupportLabelRecord, int, int]] = []
    for record in records:
        found = sentences.get((record.run_id, record.topic_id, record.sentence_index))
        if found is None:
            problems.add(
                record.line,
                f"run {record.run_id} has no sentence {record.sentence_index} for topic {record.topic_id} "
                f"in collection {collection.name}",
            )
        elif record.passage_id not in found[1]:
            problems.add(
                record.line,
                f"sentence {record.sentence_index} of run {record.run_id} topic {record.topic_id} "
                f"does not cite {record.passage_id}",
            )
        else:
            resolved.append((record, found[0], found[1].index(record.passage_id)))
        if problems.full:
            break
    problems.raise_if_any()

    condition = (
        SupportJudgment.Condition.MACHINE
        if judge.kind in (Judge.Kind.LLM, Judge.Kind.NLI)
        else SupportJudgment.Condition.IMPORTED
    )
    existing = {
        (sid, ci): (pk, label)
        for pk, sid, ci, label in SupportJudgment.objects.filter(
            judge=judge, sentence__response__run__collection=collection
        ).values_list("id", "sentence_id", "citation_index", "label")
    }
    to_create: list[SupportJudgment] = []
    to_update: list[SupportJudgment] = []
    result = ImportResult()
    for record, sentence_id, citation_index in resolved:
        current = existing.get((sentence_id, citation_index))
        if current is None:
            to_create.append(
                SupportJudgment(
                    judge=judge,
                    sentence_id=sentence_id,
                    citation_index=citation_index,
                    passage_id=record.passage_id,
                    label=record.label,
                    condition=condition,
                )
            )
        elif current[1] != record.label:
            to_update.append(SupportJudgment(id=current[0], label=record.label))
        else:
            result.unchanged += 1
    SupportJudgment.objects.bulk_create(to_create, batch_size=2000)
    SupportJudgment.objects.bulk_update(to_update, ["label"], batch_size=2000)
    result.created, result.updated = len(to_create), len(to_update)
    return result


class SupportLabelLine(TypedDict):
    run_id: str
    topic_id: str
    sentence_index: int
    passage_id: str
    label: str


def support_labels_export(*, collection: Collection, judge: Judge) -> list[SupportLabelLine]:
    """A judge's support labels in the import shape, ordered by run, topic, sentence, citation."""
    rows = SupportJudgment.objects.filter(
        judge=judge, sentence__response__run__collection=collection
    ).values_list(
        "sentence__response__run__name",
        "sentence__response__turn__turn_id",
        "sentence__index",
        "citation_index",
        "passage_id",
        "label",
    )
    ordered = sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3]))
    return [
        {"run_id": run, "topic_id": topic, "sentence_index": index, "passage_id": pid, "label": label}
        for run, topic, index, _ci, pid, label in ordered
    ]


# --- Disagreement study ----------------------------------------------------------------------------


@dataclass
class Disagreement:
    sentence_id: int
    citation_index: int
    human_label: str
    machine_label: str
    human_condition: str


def support_disagreements(
    *, collection: Collection, human_judges: list[Judge], machine_judge: Judge
) -> dict[Topic, list[Disagreement]]:
    """Units where a human (scratch or post-edit) and the machine judge gave different labels, per topic."""
    machine = {
        (sid, ci): label
        for sid, ci, label in SupportJudgment.objects.filter(
            judge=machine_judge, sentence__response__run__collection=collection
        ).values_list("sentence_id", "citation_index", "label")
    }
    found: dict[int, list[Disagreement]] = defaultdict(list)
    seen: set[tuple[int, int]] = set()
    rows = (
        SupportJudgment.objects.filter(
            judge__in=human_judges,
            condition__in=HUMAN_CONDITIONS,
            sentence__response__run__collection=collection,
        )
        .order_by("sentence_id", "citation_index", "judge__name")
        .values_list(
            "sentence__response__turn__topic_id", "sentence_id", "citation_index", "label", "condition"
        )
    )
    for topic_id, sid, ci, label, condition in rows:
        other = machine.get((sid, ci))
        if other is None or other == label or (sid, ci) in seen:
            continue
        seen.add((sid, ci))
        found[topic_id].append(Disagreement(sid, ci, label, other, condition))
    topics = Topic.objects.in_bulk(list(found))
    return {topics[tid]: items for tid, items in sorted(found.items())}


@transaction.atomic
def support_disagreements_assign(
    *,
    collection: Collection,
    human_judges: list[Judge],
    machine_judge: Judge,
    assessor: AbstractBaseUser,
    k: int = 15,
    seed: int = 0,
) -> list[SupportAssignment]:
    """Sample up to k disagreements per topic (seeded) and assign them blind to an independent assessor.

    The assessor must be none of the human judges and must not already meet the topic in another
    condition; re-sampling a topic replaces the blind units not yet labelled.
    """
    if k < 1:
        raise SupportConflict("k must be at least 1")
    assessor_judge = Judge.objects.filter(user=assessor).first()
    if assessor_judge is not None and assessor_judge in human_judges:
        raise SupportConflict(f"{assessor.get_username()} is one of the human judges, so not independent")
    rng = random.Random(seed)
    assignments = []
    for topic, items in support_disagreements(
        collection=collection, human_judges=human_judges, machine_judge=machine_judge
    ).items():
        sample = rng.sample(items, min(k, len(items)))
        units = [[d.sentence_id, d.citation_index] for d in sample]
        current = SupportAssignment.objects.select_for_update().filter(topic=topic, user=assessor).first()
        if current is not None and current.condition != SupportAssignment.Condition.BLIND:
            raise SupportConflict(
                f"{assessor.get_username()} judges topic {topic.number} in condition {current.condition}; "
                "an assessor never sees the same unit in both conditions"
            )
        if (
            _assessor_labels_in_topic(assessor, topic)
            .exclude(condition=SupportJudgment.Condition.BLIND)
            .exists()
        ):
            raise SupportConflict(f"{assessor.get_username()} already judged units of topic {topic.number}")
        if current is None:
            current = SupportAssignment.objects.create(
                topic=topic, user=assessor, condition=SupportAssignment.Condition.BLIND, units=units
            )
        else:
            done = [
                [sid, ci]
                for sid, ci in current.units
                if SupportJudgment.objects.filter(
                    judge__user=assessor, sentence_id=sid, citation_index=ci
                ).exists()
            ]
            current.units = done + [u for u in units if u not in done]
            current.save(update_fields=["units"])
        assignments.append(current)
    return assignments


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


def _kappa(a: list[str], b: list[str]) -> float | None:
    if not a:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one shared label: kappa is undefined, reported as None below
        value = cohen_kappa_score(a, b, labels=LABELS)
    # Identical constant labels make kappa 0/0; sklearn returns nan, which JSON cannot carry.
    return None if value != value else float(value)


def support_disagreement_report(
    *, collection: Collection, human_judges: list[Judge], machine_judge: Judge, blind_judge: Judge
) -> dict[str, DisagreementReport]:
    """How often, and with what Cohen's kappa, the blind assessor sides with the human or the machine,
    per human condition (scratch, post-edit) and over all."""
    blind = {
        (sid, ci): label
        for sid, ci, label in SupportJudgment.objects.filter(
            judge=blind_judge, condition=SupportJudgment.Condition.BLIND
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
        report.human.kappa = _kappa([r[0] for r in rows], [r[1] for r in rows])
        report.machine.kappa = _kappa([r[0] for r in rows], [r[2] for r in rows])
        reports[condition] = report
    return reports
