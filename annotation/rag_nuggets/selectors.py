"""Reads of the TREC RAG nugget pages: what a piece of nugget work shows, and how far each has got.

Every read here costs a fixed number of queries whatever the number of topics, nuggets or answers, so
the pages stay cheap on a full TREC RAG topic (dozens of answers, 30 nuggets).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Count, QuerySet

from annotation.models import (
    Collection,
    Judge,
    Nugget,
    NuggetAssignment,
    NuggetEdit,
    NuggetImportanceJudgment,
    Passage,
    RelevanceJudgment,
    Response,
    ResponseSentence,
    TopicWork,
    Turn,
)
from annotation.topic_work.selectors import topic_work_of

# A topic's judged passages shown beside the nuggets: enough to check a nugget against, bounded so that
# a deep pool never makes the page slow to load.
MAX_PASSAGES = 100

# The nugget steps as organisers name them (pages, assign_nugget_work), and the kind of work each is.
STEPS = {
    "edit": TopicWork.Kind.NUGGET_EDIT,
    "importance": TopicWork.Kind.NUGGET_IMPORTANCE,
    "assignment": TopicWork.Kind.NUGGET_ASSIGNMENT,
}
NUGGET_KINDS = tuple(STEPS.values())


def work_source(work: TopicWork) -> Judge:
    """The judge whose nugget set a piece of nugget work is on (every nugget kind has one)."""
    if work.source_judge is None:
        raise ValueError(f"topic work {work.pk} is {work.kind}, not nugget work")
    return work.source_judge


def work_turns(work: TopicWork) -> list[Turn]:
    """The turns (TREC RAG: the one question) of the work's topic, in the topic's order."""
    return list(Turn.objects.filter(topic_id=work.topic_id).order_by("position", "id"))


def work_answers(work: TopicWork) -> list[Response]:
    """The answers of the work's topic one after another: by turn, then run, then rank."""
    return list(
        Response.objects.filter(turn__topic_id=work.topic_id)
        .select_related("run", "turn")
        .order_by("turn__position", "turn_id", "run__name", "rank", "id")
    )


def nuggets_of(*, judge: Judge | int, turns: Iterable[Turn | int]) -> list[Nugget]:
    """A judge's ordered nuggets of the given turns."""
    ids = [t if isinstance(t, int) else t.pk for t in turns]
    return list(Nugget.objects.filter(judge=judge, turn_id__in=ids).order_by("turn_id", "position", "id"))


def edits_of(*, judge: Judge, turn: Turn) -> QuerySet[NuggetEdit]:
    return NuggetEdit.objects.filter(judge=judge, turn=turn).order_by("id")


@dataclass(frozen=True)
class Item:
    key: str
    text: str
    original_id: int | None


def edit_list(*, judge: Judge, turn: Turn, source: Judge) -> list[Item]:
    """The assessor's list of the turn; until they first change it, a copy of the source list."""
    own = nuggets_of(judge=judge, turns=[turn])
    if own or edits_of(judge=judge, turn=turn).exists():
        return [Item(n.key, n.text, n.original_id) for n in own]
    return [Item(n.key, n.text, n.pk) for n in nuggets_of(judge=source, turns=[turn])]


def importance_labels(*, judge: Judge | int | None, nugget_ids: Iterable[int]) -> dict[int, str]:
    if judge is None:
        return {}
    return dict(
        NuggetImportanceJudgment.objects.filter(judge=judge, nugget_id__in=list(nugget_ids)).values_list(
            "nugget_id", "importance"
        )
    )


def assignment_labels(
    *, judge: Judge | int | None, response: Response, nugget_ids: Iterable[int]
) -> dict[int, str]:
    if judge is None:
        return {}
    return dict(
        NuggetAssignment.objects.filter(
            judge=judge, response=response, nugget_id__in=list(nugget_ids)
        ).values_list("nugget_id", "label")
    )


def answer_sentences(response: Response) -> list[ResponseSentence]:
    return list(ResponseSentence.objects.filter(response=response).order_by("index"))


def judged_passages(*, collection: Collection, turn: Turn) -> list[tuple[Passage, int]]:
    """The turn's judged passages (any judge), best grade first, with that grade; passages the
    collection does not hold are left out. The nuggets were made from these."""
    best: dict[str, int] = {}
    for passage_id, grade in RelevanceJudgment.objects.filter(turn=turn).values_list("passage_id", "grade"):
        best[passage_id] = max(grade, best.get(passage_id, -1))
    ranked = sorted(best, key=lambda pid: (-best[pid], pid))[:MAX_PASSAGES]
    held = {p.passage_id: p for p in Passage.objects.filter(collection=collection, passage_id__in=ranked)}
    return [(held[pid], best[pid]) for pid in ranked if pid in held]


# --- Progress -------------------------------------------------------------------------------------


@dataclass
class WorkProgress:
    work: TopicWork
    total: int
    done: int

    @property
    def complete(self) -> bool:
        return self.work.completed_at is not None


def nugget_work_progress(*, works: list[TopicWork]) -> list[WorkProgress]:
    """Each work with its units in all and those done, in a fixed number of grouped queries.

    Edit: turns whose assessor list exists. Importance: source nuggets the assessor labelled.
    Assignment: (answer, source nugget) pairs the assessor labelled.
    """
    topics = {w.topic_id for w in works}
    turns_of: dict[int, list[int]] = defaultdict(list)
    for turn_id, topic_id in Turn.objects.filter(topic_id__in=topics).values_list("id", "topic_id"):
        turns_of[topic_id].append(turn_id)
    sources = {w.source_judge_id for w in works}
    nuggets_per: dict[tuple[int, int], int] = {}  # (judge, turn) -> nuggets
    for judge_id, turn_id, n in (
        Nugget.objects.filter(judge_id__in=sources, turn__topic_id__in=topics)
        .values_list("judge_id", "turn_id")
        .annotate(n=Count("id"))
    ):
        nuggets_per[judge_id, turn_id] = n
    answers_per: dict[int, int] = dict(
        Response.objects.filter(turn__topic_id__in=topics).values_list("turn_id").annotate(n=Count("id"))
    )
    users = {w.user_id for w in works}
    judge_of = dict(Judge.objects.filter(user_id__in=users).values_list("user_id", "id"))
    judges = set(judge_of.values())
    own_lists = set(
        Nugget.objects.filter(judge_id__in=judges, turn__topic_id__in=topics)
        .values_list("judge_id", "turn_id")
        .distinct()
    )
    importance_done: dict[tuple[int, int, int], int] = {}  # (judge, source, topic)
    for judge_id, source_id, topic_id, n in (
        NuggetImportanceJudgment.objects.filter(judge_id__in=judges, nugget__turn__topic_id__in=topics)
        .values_list("judge_id", "nugget__judge_id", "nugget__turn__topic_id")
        .annotate(n=Count("id"))
    ):
        importance_done[judge_id, source_id, topic_id] = n
    assignment_done: dict[tuple[int, int, int], int] = {}
    for judge_id, source_id, topic_id, n in (
        NuggetAssignment.objects.filter(judge_id__in=judges, nugget__turn__topic_id__in=topics)
        .values_list("judge_id", "nugget__judge_id", "nugget__turn__topic_id")
        .annotate(n=Count("id"))
    ):
        assignment_done[judge_id, source_id, topic_id] = n
    rows = []
    for work in works:
        turns = turns_of[work.topic_id]
        judge_id = judge_of.get(work.user_id, 0)
        source_id = work.source_judge_id or 0
        key = (judge_id, source_id, work.topic_id)
        if work.kind == TopicWork.Kind.NUGGET_EDIT:
            total, done = len(turns), sum(1 for t in turns if (judge_id, t) in own_lists)
            if work.completed_at is not None:
                done = total
        elif work.kind == TopicWork.Kind.NUGGET_IMPORTANCE:
            total = sum(nuggets_per.get((source_id, t), 0) for t in turns)
            done = importance_done.get(key, 0)
        else:
            total = sum(nuggets_per.get((source_id, t), 0) * answers_per.get(t, 0) for t in turns)
            done = assignment_done.get(key, 0)
        rows.append(WorkProgress(work, total, min(done, total)))
    return rows


def nugget_work_of(*, user: User) -> list[WorkProgress]:
    """The assessor's nugget work, with progress."""
    works = list(
        topic_work_of(user=user, kinds=NUGGET_KINDS)
        .select_related("topic__collection", "source_judge", "machine_judge")
        .order_by("topic__collection__name", "topic__number", "kind")
    )
    return nugget_work_progress(works=works)


def nugget_work_in(*, collection: Collection) -> list[WorkProgress]:
    """Every piece of nugget work of a collection, for its organisers, with progress and time."""
    works = list(
        TopicWork.objects.filter(topic__collection=collection, kind__in=NUGGET_KINDS)
        .select_related("topic", "user", "source_judge", "machine_judge")
        .order_by("topic__number", "kind", "user__username")
    )
    return nugget_work_progress(works=works)
