"""Time spent adds up over revisions, and stops at the largest integer its column holds instead of
failing in PostgreSQL ("integer out of range", a 500) on the revision that would pass it."""

import pytest

from annotation.labels.writer import TIME_SPENT_MAX_MS
from annotation.models import NuggetImportanceJudgment, RelevanceJudgment, TopicWork
from annotation.rag_nuggets.services import nugget_edit_finish, nugget_work_assign
from annotation.rag_nuggets.writer import importance_judgments_submit
from annotation.relevance.writer import relevance_judgment_submit
from annotation.services import judge_for_assessor
from tests.annotation.rag_nuggets.data import rag_topic
from tests.factories import JudgeFactory, TurnFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_a_relevance_grades_time_stops_at_the_columns_largest():
    judge, turn = JudgeFactory(), TurnFactory()
    for _ in range(2):
        relevance_judgment_submit(
            judge=judge, turn=turn, passage_id="p1", grade=2, time_spent_ms=TIME_SPENT_MAX_MS - 1
        )

    assert RelevanceJudgment.objects.get().time_spent_ms == TIME_SPENT_MAX_MS


def test_a_labels_time_stops_at_the_columns_largest():
    data = rag_topic()
    carol = judge_for_assessor(user=UserFactory(username="carol"))
    first = data.nuggets[0]
    for label in ("okay", "vital"):
        importance_judgments_submit(
            judge=carol,
            turn=data.turn,
            labels={first.pk: label},
            condition="scratch",
            time_spent_ms=TIME_SPENT_MAX_MS - 1,
        )

    assert NuggetImportanceJudgment.objects.get(judge=carol).time_spent_ms == TIME_SPENT_MAX_MS


def test_a_works_time_stops_at_the_columns_largest():
    data = rag_topic()
    alice = UserFactory(username="alice")
    work = nugget_work_assign(
        topic=data.topic, user=alice, step="edit", source_judge=data.llm, condition="scratch"
    )
    TopicWork.objects.filter(pk=work.pk).update(time_spent_ms=TIME_SPENT_MAX_MS - 10)
    work.refresh_from_db()

    nugget_edit_finish(work=work, user=alice, turn=data.turn, last=False, time_spent_ms=3_600_000)

    assert work.time_spent_ms == TIME_SPENT_MAX_MS
    assert TopicWork.objects.get(pk=work.pk).time_spent_ms == TIME_SPENT_MAX_MS
