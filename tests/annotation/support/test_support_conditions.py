"""Conditions of the support assessment: from scratch, post-editing, and never one unit in both."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judge, SupportJudgment, Topic, TopicWork
from annotation.support.disagreements import support_disagreements_assign
from annotation.support.services import (
    SupportConflict,
    SupportSwitchUnconfirmed,
    assignment_units,
    support_assignment_set,
    support_judgment_submit,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(rag):
    return Topic.objects.get(collection=rag, number="2024-1")


def test_post_editing_records_the_shown_label_the_final_label_and_time(topic, gpt):
    alice = UserFactory(username="alice")
    assignment = support_assignment_set(topic=topic, user=alice, condition="post-edit", machine_judge=gpt)
    unit = assignment_units(assignment)[0]  # rag-a s0, GPT-4o said PS

    judgment = support_judgment_submit(
        assignment=assignment,
        user=alice,
        sentence=unit.sentence,
        citation_index=unit.citation_index,
        label="FS",
        time_spent_ms=4200,
    )

    judgment.refresh_from_db()
    assert (
        judgment.condition,
        judgment.shown_label,
        judgment.label,
        judgment.changed,
        judgment.time_spent_ms,
    ) == (
        "post-edit",
        "PS",
        "FS",
        True,
        4200,
    )
    assert judgment.judge.user == alice


def test_keeping_the_shown_label_is_recorded_as_unchanged_and_revisions_add_time(topic, gpt):
    alice = UserFactory(username="alice")
    assignment = support_assignment_set(topic=topic, user=alice, condition="post-edit", machine_judge=gpt)
    unit = assignment_units(assignment)[0]
    kwargs = {"assignment": assignment, "user": alice, "sentence": unit.sentence, "citation_index": 0}

    support_judgment_submit(**kwargs, label="FS", time_spent_ms=1000)
    judgment = support_judgment_submit(**kwargs, label="PS", time_spent_ms=500)

    judgment.refresh_from_db()
    assert (judgment.label, judgment.shown_label, judgment.changed, judgment.time_spent_ms) == (
        "PS",
        "PS",
        False,
        1500,
    )
    assert SupportJudgment.objects.filter(judge__user=alice).count() == 1


def test_from_scratch_shows_and_records_no_machine_label(topic, gpt):
    bob = UserFactory(username="bob")
    assignment = support_assignment_set(topic=topic, user=bob, condition="scratch", machine_judge=gpt)
    unit = assignment_units(assignment)[0]

    judgment = support_judgment_submit(
        assignment=assignment, user=bob, sentence=unit.sentence, citation_index=0, label="NS"
    )

    assert assignment.machine_judge is None
    assert (judgment.condition, judgment.shown_label, judgment.changed) == ("scratch", "", None)


def test_an_assessor_never_judges_a_unit_in_both_conditions(topic, gpt):
    alice = UserFactory(username="alice")
    assignment = support_assignment_set(topic=topic, user=alice, condition="scratch")
    unit = assignment_units(assignment)[0]
    support_judgment_submit(
        assignment=assignment, user=alice, sentence=unit.sentence, citation_index=0, label="FS"
    )

    with pytest.raises(SupportConflict, match="never sees the same unit in both conditions"):
        support_assignment_set(topic=topic, user=alice, condition="post-edit", machine_judge=gpt)

    assignment.refresh_from_db()
    assert assignment.condition == "scratch"


def test_the_condition_may_change_before_any_unit_is_judged(topic, gpt):
    alice = UserFactory(username="alice")
    support_assignment_set(topic=topic, user=alice, condition="scratch")

    assignment = support_assignment_set(
        topic=topic, user=alice, condition="post-edit", machine_judge=gpt, switch=True
    )

    assert (
        TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, topic=topic, user=alice).condition == "post-edit"
    )
    assert assignment.machine_judge == gpt


def test_it_refuses_to_switch_a_condition_unless_the_switch_is_confirmed(topic, gpt):
    alice = UserFactory(username="alice")
    support_assignment_set(topic=topic, user=alice, condition="scratch")

    with pytest.raises(SupportSwitchUnconfirmed, match="alice is assigned topic 2024-1 in condition scratch"):
        support_assignment_set(topic=topic, user=alice, condition="post-edit", machine_judge=gpt)

    assignment = TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, topic=topic, user=alice)
    assert (assignment.condition, assignment.machine_judge) == ("scratch", None)
    # Assigning again in the same condition is no switch and needs no confirmation.
    support_assignment_set(topic=topic, user=alice, condition="scratch", max_citations=2)
    assert TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, topic=topic, user=alice).max_citations == 2


def test_a_new_assignment_is_refused_when_the_assessor_judged_the_topic_in_another_condition(topic, gpt):
    alice = UserFactory(username="alice")
    assignment = support_assignment_set(topic=topic, user=alice, condition="scratch")
    unit = assignment_units(assignment)[0]
    support_judgment_submit(
        assignment=assignment, user=alice, sentence=unit.sentence, citation_index=0, label="FS"
    )
    assignment.delete()

    with pytest.raises(SupportConflict, match="another condition"):
        support_assignment_set(topic=topic, user=alice, condition="post-edit", machine_judge=gpt)

    assert not TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user=alice).exists()


def test_submitting_refuses_a_unit_already_judged_in_another_condition(topic, gpt):
    alice = UserFactory(username="alice")
    scratch = support_assignment_set(topic=topic, user=alice, condition="scratch")
    unit = assignment_units(scratch)[0]
    support_judgment_submit(
        assignment=scratch, user=alice, sentence=unit.sentence, citation_index=0, label="FS"
    )
    # An assignment written straight into the database, past the service's check.
    TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, id=scratch.id).update(
        condition="post-edit", machine_judge=gpt
    )
    scratch.refresh_from_db()

    with pytest.raises(SupportConflict, match="never judges a unit in two conditions"):
        support_judgment_submit(
            assignment=scratch, user=alice, sentence=unit.sentence, citation_index=0, label="NS"
        )

    stored = SupportJudgment.objects.get(judge__user=alice)
    assert (stored.condition, stored.label) == ("scratch", "FS")


def test_blind_units_are_refused_for_an_assessor_who_judges_the_topic_in_another_condition(rag, topic, gpt):
    alice, carol = UserFactory(username="alice"), UserFactory(username="carol")
    assignment = support_assignment_set(topic=topic, user=alice, condition="post-edit", machine_judge=gpt)
    unit = assignment_units(assignment)[0]  # GPT-4o PS
    support_judgment_submit(
        assignment=assignment, user=alice, sentence=unit.sentence, citation_index=0, label="FS"
    )
    support_assignment_set(topic=topic, user=carol, condition="scratch")

    with pytest.raises(SupportConflict, match="never sees the same unit in both conditions"):
        support_disagreements_assign(
            collection=rag, human_judges=[Judge.objects.get(user=alice)], machine_judge=gpt, assessor=carol
        )

    assert not TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user=carol, condition="blind").exists()


def test_it_refuses_a_unit_outside_the_assignment(rag, topic):
    alice = UserFactory(username="alice")
    assignment = support_assignment_set(topic=topic, user=alice, condition="scratch")
    other_topic = Topic.objects.get(collection=rag, number="2024-2")
    foreign = assignment_units(
        support_assignment_set(topic=other_topic, user=UserFactory(), condition="scratch")
    )[0]

    with pytest.raises(SupportConflict, match="not part of the assignment"):
        support_judgment_submit(
            assignment=assignment, user=alice, sentence=foreign.sentence, citation_index=0, label="FS"
        )

    assert not SupportJudgment.objects.exists()


def test_post_editing_needs_a_machine_judge(topic):
    with pytest.raises(SupportConflict, match="machine judge"):
        support_assignment_set(topic=topic, user=UserFactory(), condition="post-edit")


def test_assign_support_command_assigns_every_topic(rag, gpt):
    UserFactory(username="alice")
    out = StringIO()

    call_command(
        "assign_support",
        collection="rag24",
        assessor="alice",
        condition="post-edit",
        machine_judge="gpt-4o",
        stdout=out,
    )

    assert "2 topics assigned to alice (post-edit)" in out.getvalue()
    assert set(
        TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user__username="alice").values_list(
            "topic__number", "condition"
        )
    ) == {
        ("2024-1", "post-edit"),
        ("2024-2", "post-edit"),
    }


def test_assign_support_command_refuses_a_condition_switch_after_labels(topic, gpt):
    alice = UserFactory(username="alice")
    assignment = support_assignment_set(topic=topic, user=alice, condition="scratch")
    unit = assignment_units(assignment)[0]
    support_judgment_submit(
        assignment=assignment, user=alice, sentence=unit.sentence, citation_index=0, label="FS"
    )

    with pytest.raises(CommandError, match="nothing was assigned"):
        call_command(
            "assign_support",
            collection="rag24",
            assessor="alice",
            condition="post-edit",
            machine_judge="gpt-4o",
        )

    assert set(
        TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user=alice).values_list("condition", flat=True)
    ) == {"scratch"}


def test_assign_support_command_switches_a_condition_only_with_switch(topic, gpt):
    alice = UserFactory(username="alice")
    support_assignment_set(topic=topic, user=alice, condition="scratch")
    options = {"collection": "rag24", "assessor": "alice", "condition": "post-edit", "topic": ["2024-1"]}

    with pytest.raises(CommandError, match="confirm the switch"):
        call_command("assign_support", machine_judge="gpt-4o", **options)
    assert TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, user=alice).condition == "scratch"

    call_command("assign_support", machine_judge="gpt-4o", switch=True, stdout=StringIO(), **options)
    assert TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, user=alice).condition == "post-edit"


def test_assign_support_command_names_an_unknown_topic(rag):
    UserFactory(username="alice")
    with pytest.raises(CommandError, match="no topic 99"):
        call_command(
            "assign_support", collection="rag24", assessor="alice", condition="scratch", topic=["99"]
        )
