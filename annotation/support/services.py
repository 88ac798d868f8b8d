"""Support assessment of RAG answers: is each answer sentence supported by the passage it cites?

A unit is (answer sentence, k-th citation) for the first `max_citations` citations of the sentence
(one by default, as in the TREC 2024 RAG support evaluation). A sentence that cites nothing is No support
by definition: it is never a unit, never shown to assessors, and counts 0 in weighted recall.

Assessors judge a topic's units in the condition an organiser chose for them (from scratch, or
post-editing a machine judge's label); an assessor never meets the same unit in two conditions. Sampled
human/LLM disagreements go to an independent assessor blind to both labels.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Func, IntegerField, QuerySet

from annotation.collection.placeholder import is_placeholder
from annotation.judge_menus import judges_with_labels
from annotation.labels.writer import JudgmentRefused
from annotation.models import (
    Collection,
    Condition,
    Judge,
    ResponseSentence,
    SupportJudgment,
    SupportLabel,
    Topic,
    TopicWork,
)
from annotation.services import judge_for_assessor
from annotation.support import writer
from annotation.topic_work.selectors import topic_work_get

LABELS = list(SupportLabel.values)
HUMAN_CONDITIONS = (Condition.SCRATCH, Condition.POST_EDIT)

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


class SupportSwitchUnconfirmed(SupportConflict):
    """Assigning would switch an assessor's condition on a topic, and the caller did not confirm it."""


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


def unit_citations(text: str, cited: int, max_citations: int) -> range:
    """The citations of a sentence (its text, and how many passages it cites) that are units: its first
    `max_citations`; none of an uncited sentence or a placeholder (`is_placeholder`)."""
    return citation_units(is_placeholder(text), cited, max_citations)


def citation_units(placeholder: bool, cited: int, max_citations: int) -> range:
    """`unit_citations` of a sentence whose placeholder flag is known (ResponseSentence.placeholder)."""
    return range(0) if placeholder else range(min(cited, max_citations))


def units_of_sentences(
    sentences: Iterable[ResponseSentence], *, max_citations: int = 1
) -> Iterator[SupportUnit]:
    """Units of the given sentences (`unit_citations` of each)."""
    for sentence in sentences:
        for citation_index in unit_citations(sentence.text, len(sentence.citations), max_citations):
            yield SupportUnit(sentence, citation_index)


def support_units(
    *, collection: Collection | None = None, topic: Topic | None = None, max_citations: int | None = None
) -> list[SupportUnit]:
    """Every unit of a collection or topic, in a stable order: run, topic, sentence, citation."""
    limit = default_max_citations() if max_citations is None else max_citations
    return list(units_of_sentences(_sentences(collection=collection, topic=topic), max_citations=limit))


def assignment_unit_keys(assignment: TopicWork) -> list[tuple[int, int]]:
    """The (sentence id, citation index) of each unit an assignment shows, in the order the assessor
    meets them, read from the sentences' ids, texts and citations alone: a page shows one unit, and
    building every unit's sentence with its run and turn grew with the runs answering the topic."""
    if assignment.condition == Condition.BLIND:
        wanted = [(int(sid), int(ci)) for sid, ci in assignment.units]
        cited = dict(
            ResponseSentence.objects.filter(id__in=[sid for sid, _ci in wanted]).values_list(
                "id", "citations"
            )
        )
        return [(sid, ci) for sid, ci in wanted if sid in cited and ci < len(cited[sid])]
    rows = _sentences(topic=assignment.topic).values_list("id", "text", "citations")
    return [
        (sid, ci)
        for sid, text, citations in rows
        for ci in unit_citations(text, len(citations), assignment.max_citations)
    ]


def assignment_units(assignment: TopicWork) -> list[SupportUnit]:
    """The units an assignment shows (`assignment_unit_keys`), each with its sentence, run and turn."""
    keys = assignment_unit_keys(assignment)
    sentences = ResponseSentence.objects.select_related("response__run", "response__turn__topic").in_bulk(
        list({sid for sid, _ci in keys})
    )
    return [SupportUnit(sentences[sid], ci) for sid, ci in keys]


def support_unit_get(key: tuple[int, int]) -> SupportUnit:
    """The unit of one key of `assignment_unit_keys`, its sentence read with its run and turn."""
    sentence_id, citation_index = key
    sentence = ResponseSentence.objects.select_related("response__run", "response__turn__topic").get(
        pk=sentence_id
    )
    return SupportUnit(sentence, citation_index)


def labels_by_unit(*, judge: Judge, sentence_ids: Iterable[int]) -> dict[tuple[int, int], SupportJudgment]:
    return {
        (j.sentence_id, j.citation_index): j
        for j in SupportJudgment.objects.filter(judge=judge, sentence_id__in=list(sentence_ids))
    }


# --- Assignments -----------------------------------------------------------------------------------


def post_edit_judges(*, collection: Collection) -> QuerySet[Judge]:
    """The judges whose support labels a post-editing assessor may be shown: machines (and files) with
    support labels on the collection; never an assessor's or the crowd's, which are people's labels."""
    return judges_with_labels(collection=collection, task="support").exclude(
        kind__in=[Judge.Kind.ASSESSOR, Judge.Kind.CROWD]
    )


def assessor_labels_in_topic(user: User, topic: Topic):
    """The support labels an assessor gave on a topic, in any condition.

    Their judges' pks are read first: filtered on those rather than on a join to the judges, the planner
    reads the assessor's labels along the (judge, ...) index whatever the label table's statistics say (on
    tables not yet analysed, the join was planned as a walk of every label)."""
    judges = list(Judge.objects.filter(user=user).values_list("pk", flat=True))
    return SupportJudgment.objects.filter(judge_id__in=judges, sentence__response__turn__topic=topic)


@transaction.atomic
def support_assignment_set(
    *,
    topic: Topic,
    user: User,
    condition: str,
    machine_judge: Judge | None = None,
    max_citations: int | None = None,
    switch: bool = False,
) -> TopicWork:
    """Assign an assessor a topic's units in one condition (from scratch or post-editing).

    Changing an assessor's condition on a topic is refused once they have labelled any unit of it, so no
    assessor judges the same unit in two conditions; before that it replaces the assignment, so it is
    done only when the caller confirms it (`switch`), never as a side effect of assigning again. A topic
    whose cited answer sentences are all placeholders is refused: there is nothing to judge.
    """
    if condition not in (Condition.SCRATCH, Condition.POST_EDIT):
        raise SupportConflict(f"condition must be scratch or post-edit, not {condition!r}")
    if condition == Condition.POST_EDIT and machine_judge is None:
        raise SupportConflict("post-editing needs the machine judge whose labels are shown")
    if condition == Condition.SCRATCH:
        machine_judge = None
    limit = default_max_citations() if max_citations is None else max_citations
    if limit < 1:
        raise SupportConflict("max_citations must be at least 1")
    _refuse_placeholder_topic(topic)
    current = (
        TopicWork.objects.select_for_update()
        .filter(kind=TopicWork.Kind.SUPPORT, topic=topic, user=user)
        .first()
    )
    if (
        current is not None
        and current.condition != condition
        and assessor_labels_in_topic(user, topic).exists()
    ):
        raise SupportConflict(
            f"{user.get_username()} already judged units of topic {topic.number} in condition "
            f"{current.condition}; an assessor never sees the same unit in both conditions"
        )
    if current is not None and current.condition != condition and not switch:
        raise SupportSwitchUnconfirmed(
            f"{user.get_username()} is assigned topic {topic.number} in condition {current.condition}; "
            f"switching to {condition} replaces that assignment: confirm the switch to do it"
        )
    if current is None:
        if assessor_labels_in_topic(user, topic).exclude(condition=condition).exists():
            raise SupportConflict(
                f"{user.get_username()} already judged units of topic {topic.number} in another condition"
            )
        return TopicWork.objects.create(
            kind=TopicWork.Kind.SUPPORT,
            topic=topic,
            user=user,
            condition=condition,
            machine_judge=machine_judge,
            max_citations=limit,
        )
    current.condition, current.machine_judge, current.max_citations = condition, machine_judge, limit
    current.units = []
    current.save(update_fields=["condition", "machine_judge", "max_citations", "units"])
    return current


def _refuse_placeholder_topic(topic: Topic) -> None:
    cited = list(
        ResponseSentence.objects.filter(response__turn__topic=topic).values_list("text", "citations")
    )
    placeholders = [text for text, citations in cited if citations and is_placeholder(text)]
    if placeholders and len(placeholders) == sum(1 for _text, citations in cited if citations):
        raise SupportConflict(
            f"the answers of topic {topic.number} are placeholders (such as {placeholders[0].strip()!r}), "
            "not answers: there is nothing to judge for support; import the runs' real answers first"
        )


def support_assignment_get(*, assignment_id: int, user: User) -> TopicWork:
    """An assignment reached through its assessor; anyone else gets DoesNotExist."""
    return topic_work_get(work_id=assignment_id, user=user, kinds=[TopicWork.Kind.SUPPORT])


@dataclass
class AssignmentProgress:
    assignment: TopicWork
    total: int
    done: int

    @property
    def complete(self) -> bool:
        return self.total > 0 and self.done >= self.total


def support_assignments_of(*, user: User) -> list[AssignmentProgress]:
    """The user's support assignments, each with its units in all and those they labelled.

    The same units `assignment_unit_keys` gives, counted in the database: the sentences of each topic
    grouped by their placeholder flag and how many passages they cite, the user's labels by that and the
    citation they label. Four queries (six with a blind assignment) whose rows do not grow with the
    sentences: reading every sentence of the user's topics, as this once did, doubled the page's time
    when twice as many runs answered them.
    """
    judge = Judge.objects.filter(user=user).first()
    assignments = list(
        TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user=user).select_related("topic__collection")
    )
    blind = Condition.BLIND
    topics = {a.topic_id for a in assignments if a.condition != blind}
    blind_ids = {int(sid) for a in assignments if a.condition == blind for sid, _ci in a.units}
    cited = Func("citations", function="jsonb_array_length", output_field=IntegerField())
    # topic -> [(placeholder, passages cited, sentences)]
    sentences: dict[int, list[tuple[bool, int, int]]] = defaultdict(list)
    for topic_id, placeholder, n_cited, n in (
        ResponseSentence.objects.filter(response__turn__topic_id__in=topics)
        .order_by()
        .annotate(cited=cited)
        .values_list("response__turn__topic_id", "placeholder", "cited")
        .annotate(n=Count("id"))
    ):
        sentences[topic_id].append((placeholder, n_cited, n))
    # A blind assignment lists its units: only how many passages each of its sentences cites is read.
    blind_cited = dict(
        ResponseSentence.objects.filter(id__in=blind_ids).annotate(cited=cited).values_list("id", "cited")
    )
    # topic -> [(placeholder, passages cited, citation labelled, labels)]; one label per unit and judge.
    labelled: dict[int, list[tuple[bool, int, int, int]]] = defaultdict(list)
    blind_labelled: set[tuple[int, int]] = set()
    if judge is not None:
        for topic_id, placeholder, n_cited, index, n in (
            SupportJudgment.objects.filter(judge=judge, sentence__response__turn__topic_id__in=topics)
            .order_by()
            .annotate(
                cited=Func("sentence__citations", function="jsonb_array_length", output_field=IntegerField())
            )
            .values_list(
                "sentence__response__turn__topic_id", "sentence__placeholder", "cited", "citation_index"
            )
            .annotate(n=Count("id"))
        ):
            labelled[topic_id].append((placeholder, n_cited, index, n))
        blind_labelled = set(
            SupportJudgment.objects.filter(judge=judge, sentence_id__in=blind_ids).values_list(
                "sentence_id", "citation_index"
            )
        )
    result = []
    for assignment in assignments:
        if assignment.condition == blind:
            keys = [
                (int(sid), int(ci)) for sid, ci in assignment.units if int(ci) < blind_cited.get(int(sid), 0)
            ]
            total, done = len(keys), sum(1 for key in keys if key in blind_labelled)
        else:
            most = assignment.max_citations
            total = sum(
                n * len(citation_units(placeholder, n_cited, most))
                for placeholder, n_cited, n in sentences[assignment.topic_id]
            )
            done = sum(
                n
                for placeholder, n_cited, index, n in labelled[assignment.topic_id]
                if index in citation_units(placeholder, n_cited, most)
            )
        result.append(AssignmentProgress(assignment, total, done))
    return result


# --- Human labels ----------------------------------------------------------------------------------


@transaction.atomic
def support_judgment_submit(
    *,
    assignment: TopicWork,
    user: User,
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
    if is_placeholder(sentence.text):
        raise SupportConflict(
            f"sentence {sentence.index + 1} is a placeholder ({sentence.text.strip()[:60]!r}), not an "
            "answer: it takes no support label"
        )
    if (sentence.id, citation_index) not in set(assignment_unit_keys(assignment)):
        raise SupportConflict("this unit is not part of the assignment")
    judge = judge_for_assessor(user=user)
    condition = assignment.condition
    shown = ""
    if condition == Condition.POST_EDIT:
        machine = SupportJudgment.objects.filter(
            judge=assignment.machine_judge, sentence=sentence, citation_index=citation_index
        ).first()
        shown = machine.label if machine is not None else ""
    try:
        return writer.support_judgment_submit(
            judge=judge,
            sentence=sentence,
            citation_index=citation_index,
            label=label,
            condition=condition,
            shown_label=shown,
            time_spent_ms=time_spent_ms,
        )
    except JudgmentRefused as exc:
        raise SupportConflict(str(exc)) from None
