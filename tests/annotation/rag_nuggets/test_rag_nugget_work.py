"""Handing out TREC RAG nugget work, and the services behind its pages: every edit kept, the assessor's
own list linked to the source nuggets, labels through the writers, time per topic on the work."""

import pytest
from django.core.management import CommandError, call_command

from annotation.labels.writer import JudgmentRefused
from annotation.models import (
    Nugget,
    NuggetAssignment,
    NuggetEdit,
    NuggetImportanceJudgment,
    TopicWork,
)
from annotation.rag_nuggets import writer
from annotation.rag_nuggets.services import (
    NuggetWorkRefused,
    nugget_assignment_page_submit,
    nugget_edit_apply,
    nugget_edit_finish,
    nugget_importance_submit,
    nugget_work_assign,
)
from annotation.services import judge_for_assessor
from tests.annotation.rag_nuggets.data import rag_topic
from tests.factories import JudgeFactory, UserFactory

pytestmark = pytest.mark.django_db


def _work(data, step, condition="scratch", user=None):
    machine = data.llm if condition == "post-edit" else None
    return nugget_work_assign(
        topic=data.topic,
        user=user or UserFactory(username="alice"),
        step=step,
        source_judge=data.llm,
        condition=condition,
        machine_judge=machine,
    )


# --- Hand-out -------------------------------------------------------------------------------------


def test_it_refuses_edit_work_on_a_set_without_nuggets_for_the_topic(data):
    with pytest.raises(NuggetWorkRefused, match="has no nuggets for topic 2024-1"):
        nugget_work_assign(topic=data.topic, user=UserFactory(), step="edit", source_judge=JudgeFactory())
    assert not TopicWork.objects.exists()


def test_it_refuses_post_editing_a_machine_without_labels_of_that_step(data):
    silent = JudgeFactory(name="silent-llm", kind="llm")
    with pytest.raises(NuggetWorkRefused, match="silent-llm has no importance labels"):
        nugget_work_assign(
            topic=data.topic,
            user=UserFactory(),
            step="importance",
            source_judge=data.llm,
            condition="post-edit",
            machine_judge=silent,
        )
    with pytest.raises(NuggetWorkRefused, match="needs the machine judge"):
        nugget_work_assign(
            topic=data.topic,
            user=UserFactory(),
            step="assignment",
            source_judge=data.llm,
            condition="post-edit",
        )
    assert not TopicWork.objects.exists()


def test_it_hands_out_the_same_work_twice_as_one_and_refuses_changing_started_work(data):
    first = _work(data, "importance")
    again = _work(data, "importance")
    assert again.pk == first.pk
    TopicWork.objects.filter(pk=first.pk).update(started_at="2026-01-01T00:00Z")
    with pytest.raises(NuggetWorkRefused, match="has started importance"):
        _work(data, "importance", condition="post-edit")
    assert TopicWork.objects.get().condition == "scratch"


def test_the_command_hands_out_work_to_several_assessors(data):
    UserFactory(username="alice"), UserFactory(username="bob")
    call_command(
        "assign_nugget_work",
        "--collection=rag24",
        "--step=assignment",
        "--users=alice,bob",
        "--source-judge=gpt-4o",
        "--condition=post-edit",
        "--machine-judge=gpt-4o",
    )
    works = TopicWork.objects.order_by("user__username")
    assert [(w.user.username, w.kind, w.condition, w.machine_judge.name) for w in works] == [
        ("alice", "nugget-assignment", "post-edit", "gpt-4o"),
        ("bob", "nugget-assignment", "post-edit", "gpt-4o"),
    ]


def test_the_command_refuses_a_missing_topic_and_hands_out_nothing(data):
    UserFactory(username="alice")
    with pytest.raises(CommandError, match="no topic 9 in collection rag24"):
        call_command(
            "assign_nugget_work",
            "--collection=rag24",
            "--step=edit",
            "--users=alice",
            "--topics=9",
            "--source-judge=gpt-4o",
        )
    with pytest.raises(CommandError, match="nothing was handed out: step edit always post-edits"):
        call_command(
            "assign_nugget_work",
            "--collection=rag24",
            "--step=edit",
            "--users=alice",
            "--source-judge=gpt-4o",
            "--condition=post-edit",
            "--machine-judge=gpt-4o",
        )
    assert not TopicWork.objects.exists()


# --- Post-editing ---------------------------------------------------------------------------------


def test_every_edit_is_kept_and_the_list_is_the_assessors_own_linked_to_the_source(data):
    work = _work(data, "edit")
    user = work.user
    one, two, three = data.nuggets
    nugget_edit_apply(
        work=work, user=user, turn=data.turn, edit={"action": "rewrite", "key": "1", "text": "Bees  eat"}
    )
    nugget_edit_apply(
        work=work,
        user=user,
        turn=data.turn,
        edit={"action": "merge", "keys": ["3", "2"], "text": "two and three"},
    )
    nugget_edit_apply(
        work=work, user=user, turn=data.turn, edit={"action": "split", "key": "1", "texts": ["a", "b"]}
    )
    nugget_edit_apply(
        work=work, user=user, turn=data.turn, edit={"action": "add", "after": None, "text": "new"}
    )
    nugget_edit_apply(work=work, user=user, turn=data.turn, edit={"action": "delete", "key": "e3.2"})
    items = nugget_edit_apply(
        work=work,
        user=user,
        turn=data.turn,
        edit={"action": "reorder", "keys": ["e2", "e4", "e3.1"]},
        time_spent_ms=1500,
    )

    assert [(i.key, i.text) for i in items] == [("e2", "two and three"), ("e4", "new"), ("e3.1", "a")]
    own = Nugget.objects.filter(judge__user=user, turn=data.turn).order_by("position")
    assert [(n.key, n.text, n.original_id) for n in own] == [
        ("e2", "two and three", two.pk),
        ("e4", "new", None),
        ("e3.1", "a", one.pk),
    ]
    edits = list(NuggetEdit.objects.filter(user=user).order_by("id"))
    assert [e.action for e in edits] == ["rewrite", "merge", "split", "add", "delete", "reorder"]
    assert edits[0].before == [{"key": "1", "text": one.text}] and edits[0].after == [
        {"key": "1", "text": "Bees eat"}
    ]
    assert edits[1].before == [{"key": "2", "text": two.text}, {"key": "3", "text": three.text}]
    assert all(e.created_at is not None and e.judge.user == user for e in edits)
    # The source list is untouched.
    assert Nugget.objects.filter(judge=data.llm).count() == 3
    work.refresh_from_db()
    assert work.started_at is not None and work.time_spent_ms == 1500 and work.completed_at is None


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ({"action": "rewrite", "key": "9", "text": "x"}, "no nugget '9'"),
        ({"action": "rewrite", "key": "1", "text": "  "}, "must be some text"),
        ({"action": "merge", "keys": ["1"], "text": "x"}, "two or more"),
        ({"action": "merge", "keys": ["1", "1"], "text": "x"}, "named twice"),
        ({"action": "split", "key": "1", "texts": ["only one"]}, "2 to 20 parts"),
        ({"action": "reorder", "keys": ["1", "2"]}, "every nugget"),
        ({"action": "explode"}, "action must be one of"),
        ({"action": "delete", "key": ["1"]}, "list of nugget keys|no nugget"),
    ],
)
def test_it_refuses_a_bad_edit_and_changes_nothing(data, edit, reason):
    work = _work(data, "edit")
    with pytest.raises(NuggetWorkRefused, match=reason):
        nugget_edit_apply(work=work, user=work.user, turn=data.turn, edit=edit)
    assert not NuggetEdit.objects.exists()
    assert not Nugget.objects.filter(judge__user=work.user).exists()


def test_finishing_an_unedited_list_keeps_the_source_list_and_completes_the_work(data):
    work = _work(data, "edit")
    nugget_edit_finish(work=work, user=work.user, turn=data.turn, last=True, time_spent_ms=900)
    own = Nugget.objects.filter(judge__user=work.user).order_by("position")
    assert [(n.key, n.original_id) for n in own] == [(n.key, n.pk) for n in data.nuggets]
    work.refresh_from_db()
    assert work.completed_at is not None and work.time_spent_ms == 900


def test_another_assessor_cannot_edit_the_work(data):
    work = _work(data, "edit")
    with pytest.raises(NuggetWorkRefused, match="another assessor"):
        nugget_edit_apply(
            work=work, user=UserFactory(), turn=data.turn, edit={"action": "delete", "key": "1"}
        )


# --- Labels ---------------------------------------------------------------------------------------


def test_post_edited_importance_records_the_machines_label_and_completes_the_work(data):
    work = _work(data, "importance", condition="post-edit")
    labels = {n.pk: "vital" for n in data.nuggets}
    nugget_importance_submit(work=work, user=work.user, turn=data.turn, labels=labels, time_spent_ms=3000)

    rows = NuggetImportanceJudgment.objects.filter(judge__user=work.user).order_by("nugget__position")
    assert [(r.importance, r.shown_label, r.changed, r.condition) for r in rows] == [
        ("vital", "vital", False, "post-edit"),
        ("vital", "okay", True, "post-edit"),
        ("vital", "okay", True, "post-edit"),
    ]
    assert [r.time_spent_ms for r in rows] == [1000, 1000, 1000]
    work.refresh_from_db()
    assert work.completed_at is not None and work.time_spent_ms == 3000


def test_it_refuses_labels_that_leave_a_nugget_out_or_name_another(data):
    work = _work(data, "importance")
    first, *_rest = data.nuggets
    with pytest.raises(NuggetWorkRefused, match="label every nugget: 2 left"):
        nugget_importance_submit(work=work, user=work.user, turn=data.turn, labels={first.pk: "okay"})
    stranger = rag_topic(number="2024-2", collection=data.topic.collection).nuggets[0]
    labels = {n.pk: "okay" for n in data.nuggets} | {stranger.pk: "okay"}
    with pytest.raises(NuggetWorkRefused, match="not on this page"):
        nugget_importance_submit(work=work, user=work.user, turn=data.turn, labels=labels)
    assert not NuggetImportanceJudgment.objects.filter(judge__user=work.user).exists()


def test_assignment_completes_only_when_every_answer_is_labelled(data):
    work = _work(data, "assignment")
    first, second = data.answers
    labels = {n.pk: "support" for n in data.nuggets}
    nugget_assignment_page_submit(work=work, user=work.user, response=first, labels=labels)
    work.refresh_from_db()
    assert work.completed_at is None
    nugget_assignment_page_submit(work=work, user=work.user, response=second, labels=labels)
    work.refresh_from_db()
    assert work.completed_at is not None
    rows = NuggetAssignment.objects.filter(judge__user=work.user)
    assert {(r.label, r.condition, r.shown_label, r.changed) for r in rows} == {
        ("support", "scratch", "", None)
    }
    assert rows.count() == 6


def test_a_revised_page_adds_up_time_keeps_the_shown_label_and_refuses_another_condition(data):
    carol = judge_for_assessor(user=UserFactory(username="carol"))
    first = data.nuggets[0]
    writer.importance_judgments_submit(
        judge=carol,
        turn=data.turn,
        labels={first.pk: "okay"},
        condition="post-edit",
        shown={first.pk: "vital"},
        time_spent_ms=400,
    )
    writer.importance_judgments_submit(
        judge=carol, turn=data.turn, labels={first.pk: "vital"}, condition="post-edit", time_spent_ms=100
    )
    row = NuggetImportanceJudgment.objects.get(judge=carol)
    assert (row.importance, row.shown_label, row.changed, row.time_spent_ms) == ("vital", "vital", False, 500)
    with pytest.raises(JudgmentRefused, match="two conditions"):
        writer.importance_judgments_submit(
            judge=carol, turn=data.turn, labels={first.pk: "okay"}, condition="scratch"
        )
    other = rag_topic(number="2024-2", collection=data.topic.collection)
    with pytest.raises(JudgmentRefused, match="not nuggets of this turn"):
        writer.nugget_assignments_submit(
            judge=carol,
            response=data.answers[0],
            labels={other.nuggets[0].pk: "support"},
            condition="scratch",
        )
    assert NuggetImportanceJudgment.objects.get(judge=carol).importance == "vital"
    assert not NuggetAssignment.objects.filter(judge=carol).exists()
