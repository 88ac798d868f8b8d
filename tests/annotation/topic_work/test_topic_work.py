"""Topic work: one table for support and TREC RAG nugget work, its invariants, its clock, and reaching a
piece of it through its assessor and kind."""

import pytest
from django.db import IntegrityError, transaction

from annotation.models import Condition, TopicWork
from annotation.topic_work.selectors import topic_work_get, topic_work_has
from annotation.topic_work.services import MAX_PAGE_TIME_MS, topic_work_clock, topic_work_start
from tests.factories import JudgeFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

SUPPORT, EDIT = TopicWork.Kind.SUPPORT, TopicWork.Kind.NUGGET_EDIT


def _refused(**fields) -> bool:
    try:
        with transaction.atomic():
            TopicWork.objects.create(**fields)
    except IntegrityError:
        return True
    return False


def test_it_refuses_post_editing_without_the_judge_whose_label_is_shown():
    topic, user = TopicFactory(), UserFactory()

    assert _refused(topic=topic, user=user, kind=SUPPORT, condition=Condition.POST_EDIT)
    assert not _refused(
        topic=topic, user=user, kind=SUPPORT, condition=Condition.POST_EDIT, machine_judge=JudgeFactory()
    )


def test_it_refuses_nugget_work_without_a_nugget_set():
    assert _refused(topic=TopicFactory(), user=UserFactory(), kind=EDIT)


def test_it_refuses_the_conditions_only_machines_and_files_give():
    topic, user = TopicFactory(), UserFactory()

    assert _refused(topic=topic, user=user, kind=SUPPORT, condition=Condition.MACHINE)
    assert _refused(topic=topic, user=user, kind=SUPPORT, condition=Condition.IMPORTED)


def test_it_keeps_one_piece_per_topic_assessor_and_kind():
    topic, user, judge = TopicFactory(), UserFactory(), JudgeFactory()
    TopicWork.objects.create(topic=topic, user=user, kind=SUPPORT)
    TopicWork.objects.create(topic=topic, user=user, kind=EDIT, source_judge=judge)

    assert _refused(topic=topic, user=user, kind=SUPPORT)
    assert _refused(topic=topic, user=user, kind=EDIT, source_judge=judge)


def test_its_clock_starts_once_adds_capped_pages_and_finishes():
    work = TopicWork.objects.create(topic=TopicFactory(), user=UserFactory(), kind=SUPPORT)
    topic_work_start(work=work)
    started = work.started_at
    topic_work_start(work=work)

    topic_work_clock(work=work, time_spent_ms=MAX_PAGE_TIME_MS * 5)
    topic_work_clock(work=work, time_spent_ms=-10, finish=True)

    stored = TopicWork.objects.get(pk=work.pk)
    assert (stored.started_at, stored.time_spent_ms) == (started, MAX_PAGE_TIME_MS)
    assert stored.completed_at is not None and work.completed_at == stored.completed_at


def test_a_piece_is_reached_through_its_assessor_and_kind():
    work = TopicWork.objects.create(topic=TopicFactory(), user=UserFactory(), kind=SUPPORT)

    assert topic_work_get(work_id=work.pk, user=work.user, kinds=[SUPPORT]) == work
    with pytest.raises(TopicWork.DoesNotExist):
        topic_work_get(work_id=work.pk, user=UserFactory(), kinds=[SUPPORT])
    with pytest.raises(TopicWork.DoesNotExist):
        topic_work_get(work_id=work.pk, user=work.user, kinds=[EDIT])
    assert topic_work_has(user=work.user, kinds=[SUPPORT])
    assert not topic_work_has(user=work.user, kinds=[EDIT])
