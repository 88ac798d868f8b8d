"""The writers of TREC RAG nugget lists, vital/okay labels and nugget assignments."""

import pytest

from annotation.labels.writer import JudgmentRefused
from annotation.models import Nugget, NuggetAssignment, NuggetImportanceJudgment
from annotation.rag_nuggets.writer import (
    AssignmentRow,
    ImportanceRow,
    NuggetDraft,
    importance_judgments_submit,
    importance_judgments_upsert,
    nugget_assignments_submit,
    nugget_assignments_upsert,
    nugget_list_replace,
)
from tests.factories import JudgeFactory, NuggetFactory, ResponseFactory, RunFactory, TurnFactory

pytestmark = pytest.mark.django_db


def test_it_keeps_a_nugget_list_in_order_and_keeps_rows_whose_key_stays():
    turn = TurnFactory()
    judge = JudgeFactory()
    first = nugget_list_replace(
        judge=judge,
        turn=turn,
        nuggets=[NuggetDraft("1", "alpha"), NuggetDraft("2", "beta"), NuggetDraft("3", "c")],
    )
    assert (first.created, first.updated, first.removed) == (3, 0, 0)
    kept = Nugget.objects.get(judge=judge, key="2")
    again = nugget_list_replace(
        judge=judge,
        turn=turn,
        nuggets=[NuggetDraft("2", "beta"), NuggetDraft("4", "delta"), NuggetDraft("1", "alpha")],
    )
    assert (again.created, again.updated, again.removed, again.unchanged) == (1, 2, 1, 0)
    assert list(Nugget.objects.filter(judge=judge, turn=turn).values_list("key", flat=True)) == [
        "2",
        "4",
        "1",
    ]
    assert Nugget.objects.get(judge=judge, key="2").pk == kept.pk


def test_it_refuses_a_list_with_a_repeated_key_or_an_empty_text():
    turn, judge = TurnFactory(), JudgeFactory()
    with pytest.raises(JudgmentRefused, match="share a key"):
        nugget_list_replace(judge=judge, turn=turn, nuggets=[NuggetDraft("1", "a"), NuggetDraft("1", "b")])
    with pytest.raises(JudgmentRefused, match="no text"):
        nugget_list_replace(judge=judge, turn=turn, nuggets=[NuggetDraft("1", "  ")])
    assert not Nugget.objects.filter(judge=judge).exists()


def test_it_adds_up_importance_time_and_notes_a_changed_post_edit():
    nugget, judge = NuggetFactory(), JudgeFactory()
    importance_judgments_submit(
        judge=judge,
        turn=nugget.turn,
        labels={nugget.pk: "okay"},
        condition="post-edit",
        shown={nugget.pk: "vital"},
        time_spent_ms=300,
    )
    importance_judgments_submit(
        judge=judge, turn=nugget.turn, labels={nugget.pk: "vital"}, condition="post-edit", time_spent_ms=200
    )
    stored = NuggetImportanceJudgment.objects.get(judge=judge, nugget=nugget)
    assert (stored.importance, stored.changed, stored.time_spent_ms) == ("vital", False, 500)
    with pytest.raises(JudgmentRefused, match="condition"):
        importance_judgments_submit(
            judge=judge, turn=nugget.turn, labels={nugget.pk: "okay"}, condition="scratch"
        )
    with pytest.raises(JudgmentRefused, match="one of"):
        importance_judgments_submit(
            judge=JudgeFactory(), turn=nugget.turn, labels={nugget.pk: "high"}, condition="scratch"
        )


def test_it_refuses_an_assignment_to_a_nugget_of_another_turn():
    run = RunFactory()
    answer = ResponseFactory(run=run, turn=TurnFactory(collection=run.collection))
    elsewhere = NuggetFactory(turn=TurnFactory(collection=run.collection))
    judge = JudgeFactory()
    with pytest.raises(JudgmentRefused, match="not nuggets of this turn"):
        nugget_assignments_submit(
            judge=judge, response=answer, labels={elsewhere.pk: "support"}, condition="scratch"
        )
    with pytest.raises(JudgmentRefused, match="not a nugget"):
        nugget_assignments_upsert(
            judge=judge,
            collection=run.collection,
            rows=[AssignmentRow(answer.pk, elsewhere.pk, "support")],
            condition="machine",
        )
    assert not NuggetAssignment.objects.exists()


def test_bulk_labels_are_idempotent():
    run = RunFactory()
    turn = TurnFactory(collection=run.collection)
    answer = ResponseFactory(run=run, turn=turn)
    nuggets = [NuggetFactory(turn=turn, key=str(i)) for i in range(3)]
    judge = JudgeFactory()
    rows = [
        AssignmentRow(answer.pk, n.pk, label)
        for n, label in zip(nuggets, ["support", "partial_support", "not_support"], strict=True)
    ]
    first = nugget_assignments_upsert(judge=judge, collection=run.collection, rows=rows, condition="machine")
    again = nugget_assignments_upsert(judge=judge, collection=run.collection, rows=rows, condition="machine")
    assert (first.created, again.created, again.unchanged) == (3, 0, 3)
    marks = [ImportanceRow(n.pk, "vital") for n in nuggets]
    importance_judgments_upsert(judge=judge, collection=run.collection, rows=marks, condition="imported")
    changed = importance_judgments_upsert(
        judge=judge,
        collection=run.collection,
        rows=[ImportanceRow(nuggets[0].pk, "okay")],
        condition="imported",
    )
    assert (changed.updated, NuggetImportanceJudgment.objects.filter(importance="vital").count()) == (1, 2)


def test_bulk_importance_refuses_a_nugget_of_another_collection():
    run = RunFactory()
    elsewhere = NuggetFactory()
    with pytest.raises(JudgmentRefused, match="not of this collection"):
        importance_judgments_upsert(
            judge=JudgeFactory(),
            collection=run.collection,
            rows=[ImportanceRow(elsewhere.pk, "vital")],
            condition="imported",
        )
    assert not NuggetImportanceJudgment.objects.exists()
