"""People's part of TREC RAG nugget evaluation: organisers hand out nugget work per topic, assessors
post-edit a nugget list, label nuggets vital or okay, and label (answer, nugget) pairs.

Every label goes through the family's writers (annotation.rag_nuggets.writer: a label's scale and
condition are the same whoever gives it); every edit of a list is kept as a NuggetEdit row, so the history of a post-edited list
can be read back and timed. Time per topic adds up on the TopicWork from what each page sends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from annotation.labels.writer import JudgmentRefused
from annotation.models import (
    Condition,
    Judge,
    Nugget,
    NuggetAssignment,
    NuggetEdit,
    NuggetImportanceJudgment,
    Response,
    Topic,
    TopicWork,
    Turn,
)
from annotation.rag_nuggets import selectors, writer
from annotation.rag_nuggets.selectors import NUGGET_KINDS, STEPS, Item
from annotation.rag_nuggets.writer import NuggetDraft
from annotation.services import judge_for_assessor
from annotation.topic_work.selectors import topic_work_get
from annotation.topic_work.services import MAX_PAGE_TIME_MS, topic_work_clock

MAX_TEXT = 2000
MAX_NUGGETS = 200
MAX_PARTS = 20
HUMAN_CONDITIONS = (Condition.SCRATCH, Condition.POST_EDIT)


class NuggetWorkRefused(Exception):
    """A hand-out, an edit or a label that the rules of nugget work refuse; the message says why."""


# --- Hand-out -------------------------------------------------------------------------------------


def _source_has_nuggets(*, topic: Topic, judge: Judge) -> bool:
    return Nugget.objects.filter(judge=judge, turn__topic=topic).exists()


def _machine_has_labels(*, topic: Topic, step: str, source: Judge, machine: Judge) -> bool:
    on_set = {"judge": machine, "nugget__judge": source, "nugget__turn__topic": topic}
    if step == "importance":
        return NuggetImportanceJudgment.objects.filter(**on_set).exists()
    return NuggetAssignment.objects.filter(**on_set).exists()


@transaction.atomic
def nugget_work_assign(
    *,
    topic: Topic,
    user: User,
    step: str,
    source_judge: Judge,
    condition: str = Condition.SCRATCH,
    machine_judge: Judge | None = None,
) -> TopicWork:
    """Hand an assessor one nugget step of a topic over `source_judge`'s nugget set.

    The set must exist for the topic (there is nothing to post-edit or label otherwise). Post-editing
    labels needs a machine judge with labels of that step on the set, so the page has a label to show.
    Step edit always post-edits the source set and takes no condition. Handing out the same work again
    changes nothing; changing it is refused once the assessor has started it.
    """
    if step not in STEPS:
        raise NuggetWorkRefused(f"step must be one of {', '.join(STEPS)}, not {step!r}")
    if condition not in HUMAN_CONDITIONS:
        raise NuggetWorkRefused(f"condition must be scratch or post-edit, not {condition!r}")
    if not user.is_active:
        raise NuggetWorkRefused(f"{user.get_username()} is not an active account")
    if source_judge.kind == Judge.Kind.ASSESSOR and source_judge.user_id == user.pk:
        raise NuggetWorkRefused("an assessor's work cannot be on their own nugget set")
    if step == "edit":
        if condition == Condition.POST_EDIT or machine_judge is not None:
            raise NuggetWorkRefused(
                "step edit always post-edits the source set: condition and machine judge are for the "
                "importance and assignment steps"
            )
    elif condition == Condition.POST_EDIT:
        if machine_judge is None:
            raise NuggetWorkRefused("post-editing needs the machine judge whose labels are shown")
        if not _machine_has_labels(topic=topic, step=step, source=source_judge, machine=machine_judge):
            raise NuggetWorkRefused(
                f"{machine_judge.name} has no {step} labels on {source_judge.name}'s nuggets of topic "
                f"{topic.number}: there is nothing to post-edit"
            )
    else:
        machine_judge = None
    if not _source_has_nuggets(topic=topic, judge=source_judge):
        raise NuggetWorkRefused(f"{source_judge.name} has no nuggets for topic {topic.number}")
    kind = STEPS[step]
    current = TopicWork.objects.select_for_update().filter(topic=topic, user=user, kind=kind).first()
    wanted = (source_judge.pk, condition, machine_judge.pk if machine_judge else None)
    if current is None:
        return TopicWork.objects.create(
            topic=topic,
            user=user,
            kind=kind,
            condition=condition,
            source_judge=source_judge,
            machine_judge=machine_judge,
        )
    if (current.source_judge_id, current.condition, current.machine_judge_id) == wanted:
        return current
    if current.started_at is not None:
        raise NuggetWorkRefused(
            f"{user.get_username()} has started {step} of topic {topic.number} "
            f"({current.get_condition_display()} on {selectors.work_source(current).name}): it cannot change now"
        )
    current.source_judge, current.condition, current.machine_judge = source_judge, condition, machine_judge
    current.save(update_fields=["source_judge", "condition", "machine_judge"])
    return current


def nugget_work_get(*, work_id: int, user: User) -> TopicWork:
    """A piece of nugget work reached through its assessor; anyone else gets DoesNotExist."""
    return topic_work_get(work_id=work_id, user=user, kinds=NUGGET_KINDS)


# --- Post-editing a list --------------------------------------------------------------------------


def _text(value: object, what: str = "text") -> str:
    if not isinstance(value, str) or not value.strip():
        raise NuggetWorkRefused(f"{what} must be some text")
    text = " ".join(value.split())
    if len(text) > MAX_TEXT:
        raise NuggetWorkRefused(f"{what} is longer than {MAX_TEXT} characters")
    return text


def _keys(value: object, current: Mapping[str, Item]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise NuggetWorkRefused("keys must be a list of nugget keys")
    unknown = [k for k in value if k not in current]
    if unknown:
        raise NuggetWorkRefused(f"no nugget {unknown[0][:40]!r} in this list")
    if len(set(value)) != len(value):
        raise NuggetWorkRefused("a nugget is named twice")
    return value


def _shown(items: Sequence[Item]) -> list[dict[str, str]]:
    return [{"key": i.key, "text": i.text} for i in items]


def _apply(
    edit: Mapping[str, Any], items: list[Item], new_key: str
) -> tuple[str, list[Item], list[Item], list[Item]]:
    """Apply one edit to the list: (action, before, after, the new list)."""
    action = edit.get("action")
    by_key = {i.key: i for i in items}
    if action == NuggetEdit.Action.REWRITE:
        (key,) = _keys([edit.get("key")], by_key)
        old = by_key[key]
        new = Item(key, _text(edit.get("text")), old.original_id)
        return action, [old], [new], [new if i.key == key else i for i in items]
    if action == NuggetEdit.Action.MERGE:
        keys = _keys(edit.get("keys"), by_key)
        if len(keys) < 2:
            raise NuggetWorkRefused("merge needs two or more nuggets")
        merged = [i for i in items if i.key in set(keys)]
        new = Item(new_key, _text(edit.get("text")), merged[0].original_id)
        first = items.index(merged[0])
        rest = [i for i in items if i.key not in set(keys)]
        return action, merged, [new], rest[:first] + [new] + rest[first:]
    if action == NuggetEdit.Action.SPLIT:
        (key,) = _keys([edit.get("key")], by_key)
        texts = edit.get("texts")
        if not isinstance(texts, list) or not 2 <= len(texts) <= MAX_PARTS:
            raise NuggetWorkRefused(f"split needs 2 to {MAX_PARTS} parts")
        old = by_key[key]
        parts = [
            Item(f"{new_key}.{n}", _text(t, "each part"), old.original_id) for n, t in enumerate(texts, 1)
        ]
        at = items.index(old)
        return action, [old], parts, items[:at] + parts + items[at + 1 :]
    if action == NuggetEdit.Action.DELETE:
        (key,) = _keys([edit.get("key")], by_key)
        return action, [by_key[key]], [], [i for i in items if i.key != key]
    if action == NuggetEdit.Action.ADD:
        after = edit.get("after")
        at = 0 if after in (None, "") else items.index(by_key[_keys([after], by_key)[0]]) + 1
        new = Item(new_key, _text(edit.get("text")), None)
        return action, [], [new], items[:at] + [new] + items[at:]
    if action == NuggetEdit.Action.REORDER:
        keys = _keys(edit.get("keys"), by_key)
        if set(keys) != set(by_key):
            raise NuggetWorkRefused("a reorder lists every nugget of the list once")
        reordered = [by_key[k] for k in keys]
        return action, items, reordered, reordered
    raise NuggetWorkRefused(f"action must be one of {', '.join(NuggetEdit.Action.values)}")


def _work_turn(work: TopicWork, turn: Turn, step: str) -> None:
    if work.kind != STEPS[step]:
        raise NuggetWorkRefused(f"this work is {work.get_kind_display()}, not {step}")
    if turn.topic_id != work.topic_id:
        raise NuggetWorkRefused("this turn is not of the work's topic")


def _store(*, judge: Judge, turn: Turn, items: list[Item]) -> None:
    try:
        writer.nugget_list_replace(
            judge=judge,
            turn=turn,
            nuggets=[NuggetDraft(i.key, i.text) for i in items],
            originals={i.key: i.original_id for i in items if i.original_id is not None},
        )
    except JudgmentRefused as exc:
        raise NuggetWorkRefused(str(exc)) from None


@transaction.atomic
def nugget_edit_apply(
    *, work: TopicWork, user: User, turn: Turn, edit: Mapping[str, Any], time_spent_ms: int | None = None
) -> list[Item]:
    """Apply one edit (rewrite, merge, split, delete, add, reorder) to the assessor's list of a turn.

    The list is the assessor's own nugget set (their judge), made on the first edit from the source
    list, each nugget linked to the source nugget it came from. The edit is kept with who made it and
    when. Returns the list after the edit.
    """
    if work.user_id != user.pk:
        raise NuggetWorkRefused("this work belongs to another assessor")
    _work_turn(work, turn, "edit")
    TopicWork.objects.select_for_update().filter(pk=work.pk).first()
    judge = judge_for_assessor(user=user)
    items = selectors.edit_list(judge=judge, turn=turn, source=selectors.work_source(work))
    new_key = f"e{selectors.edits_of(judge=judge, turn=turn).count() + 1}"
    action, before, after, items = _apply(edit, items, new_key)
    if len(items) > MAX_NUGGETS:
        raise NuggetWorkRefused(f"a list holds at most {MAX_NUGGETS} nuggets")
    _store(judge=judge, turn=turn, items=items)
    NuggetEdit.objects.create(
        judge=judge, turn=turn, user=user, action=action, before=_shown(before), after=_shown(after)
    )
    topic_work_clock(work=work, time_spent_ms=time_spent_ms)
    return items


@transaction.atomic
def nugget_edit_finish(
    *, work: TopicWork, user: User, turn: Turn, last: bool, time_spent_ms: int | None = None
) -> list[Item]:
    """The assessor is done with a turn's list: it becomes their set as it stands (the source list
    unchanged if they edited nothing); after the topic's last turn the work is complete."""
    if work.user_id != user.pk:
        raise NuggetWorkRefused("this work belongs to another assessor")
    _work_turn(work, turn, "edit")
    judge = judge_for_assessor(user=user)
    items = selectors.edit_list(judge=judge, turn=turn, source=selectors.work_source(work))
    _store(judge=judge, turn=turn, items=items)
    topic_work_clock(work=work, time_spent_ms=time_spent_ms, finish=last)
    return items


# --- Labels ---------------------------------------------------------------------------------------


def _labels_of(labels: Mapping[int, str], nuggets: Sequence[Nugget]) -> None:
    expected = {n.pk for n in nuggets}
    if set(labels) - expected:
        raise NuggetWorkRefused("a label names a nugget that is not on this page")
    if expected - set(labels):
        raise NuggetWorkRefused(f"label every nugget: {len(expected - set(labels))} left without a label")


def _capped(time_spent_ms: int | None) -> int | None:
    return None if time_spent_ms is None else min(max(time_spent_ms, 0), MAX_PAGE_TIME_MS)


def _complete_if_done(work: TopicWork, time_spent_ms: int | None) -> None:
    (progress,) = selectors.nugget_work_progress(works=[work])
    topic_work_clock(
        work=work, time_spent_ms=time_spent_ms, finish=progress.total > 0 and progress.done >= progress.total
    )


@transaction.atomic
def nugget_importance_submit(
    *, work: TopicWork, user: User, turn: Turn, labels: Mapping[int, str], time_spent_ms: int | None = None
) -> None:
    """Record the assessor's vital/okay label of every source nugget of a turn.

    In post-editing, the label shown is read here from the machine judge, never taken from the page.
    The work completes when every nugget of its topic is labelled.
    """
    if work.user_id != user.pk:
        raise NuggetWorkRefused("this work belongs to another assessor")
    _work_turn(work, turn, "importance")
    nuggets = selectors.nuggets_of(judge=selectors.work_source(work), turns=[turn])
    _labels_of(labels, nuggets)
    shown = selectors.importance_labels(judge=work.machine_judge, nugget_ids=labels)
    try:
        writer.importance_judgments_submit(
            judge=judge_for_assessor(user=user),
            turn=turn,
            labels=labels,
            condition=work.condition,
            shown=shown,
            time_spent_ms=_capped(time_spent_ms),
        )
    except JudgmentRefused as exc:
        raise NuggetWorkRefused(str(exc)) from None
    _complete_if_done(work, time_spent_ms)


@transaction.atomic
def nugget_assignment_page_submit(
    *,
    work: TopicWork,
    user: User,
    response: Response,
    labels: Mapping[int, str],
    time_spent_ms: int | None = None,
) -> None:
    """Record the assessor's support / partial / not-support label of an answer against every source
    nugget of its turn; post-editing shows, and records, the machine judge's label."""
    if work.user_id != user.pk:
        raise NuggetWorkRefused("this work belongs to another assessor")
    _work_turn(work, response.turn, "assignment")
    nuggets = selectors.nuggets_of(judge=selectors.work_source(work), turns=[response.turn_id])
    _labels_of(labels, nuggets)
    shown = selectors.assignment_labels(judge=work.machine_judge, response=response, nugget_ids=labels)
    try:
        writer.nugget_assignments_submit(
            judge=judge_for_assessor(user=user),
            response=response,
            labels=labels,
            condition=work.condition,
            shown=shown,
            time_spent_ms=_capped(time_spent_ms),
        )
    except JudgmentRefused as exc:
        raise NuggetWorkRefused(str(exc)) from None
    _complete_if_done(work, time_spent_ms)


@transaction.atomic
def nugget_work_hand_out(
    *,
    topics: Sequence[Topic],
    users: Sequence[User],
    step: str,
    source_judge: Judge,
    condition: str = Condition.SCRATCH,
    machine_judge: Judge | None = None,
) -> list[TopicWork]:
    """Hand every user every topic in one step (`nugget_work_assign` each); all or nothing."""
    if not topics or not users:
        raise NuggetWorkRefused("name at least one topic and one assessor")
    return [
        nugget_work_assign(
            topic=topic,
            user=user,
            step=step,
            source_judge=source_judge,
            condition=condition,
            machine_judge=machine_judge,
        )
        for topic in topics
        for user in users
    ]
