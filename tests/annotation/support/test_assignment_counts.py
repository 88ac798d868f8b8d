"""An assessor's support list counts each assignment's units and the ones they labelled in the database,
by the sentences' placeholder flag and citation counts: the same units `assignment_unit_keys` lists, for
a topic's assignment with its citation limit and for a blind assignment's listed units."""

from __future__ import annotations

import pytest

from annotation.models import Condition, SupportJudgment, SupportLabel, TopicWork
from annotation.services import judge_for_assessor
from annotation.support.services import assignment_unit_keys, support_assignment_set, support_assignments_of
from tests.factories import (
    CollectionFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _answers(topic, run_count: int = 2):
    """Sentences citing 0 to 3 passages in each run's answer, and a placeholder citing two."""
    turn = TurnFactory(topic=topic, collection=topic.collection)
    sentences = []
    for _ in range(run_count):
        response = ResponseFactory(run=RunFactory(collection=topic.collection), turn=turn)
        for index, cited in enumerate(range(4)):
            sentences.append(
                ResponseSentenceFactory(
                    response=response,
                    index=index,
                    text=f"Claim {index}.",
                    citations=[f"p{k}" for k in range(cited)],
                )
            )
        sentences.append(
            ResponseSentenceFactory(response=response, index=9, text="<placeholder>", citations=["p0", "p1"])
        )
    return sentences


def _label(judge, sentence, index):
    SupportJudgment.objects.create(
        judge=judge, sentence=sentence, citation_index=index, label=SupportLabel.FULL
    )


def test_the_list_counts_the_units_assignment_unit_keys_lists_and_those_labelled():
    collection = CollectionFactory()
    alice = UserFactory()
    judge = judge_for_assessor(user=alice)
    topic, blind_topic = TopicFactory(collection=collection), TopicFactory(collection=collection)
    sentences, blind_sentences = _answers(topic), _answers(blind_topic, run_count=1)
    work = support_assignment_set(topic=topic, user=alice, condition="scratch", max_citations=2)
    blind = TopicWork.objects.create(
        topic=blind_topic,
        user=alice,
        kind=TopicWork.Kind.SUPPORT,
        condition=Condition.BLIND,
        units=[[blind_sentences[3].pk, 2], [blind_sentences[1].pk, 0], [blind_sentences[1].pk, 5]],
    )
    three, placeholder = sentences[3], sentences[4]
    _label(judge, three, 0)  # a unit
    _label(judge, three, 2)  # beyond the assignment's two citations: no unit
    _label(judge, placeholder, 0)  # a placeholder: no unit
    _label(judge, blind_sentences[3], 2)  # a blind unit
    _label(judge, blind_sentences[3], 0)  # not one of the blind units

    shown = {p.assignment.pk: (p.total, p.done) for p in support_assignments_of(user=alice)}

    keys = assignment_unit_keys(work)
    labelled = set(SupportJudgment.objects.filter(judge=judge).values_list("sentence_id", "citation_index"))
    blind_keys = assignment_unit_keys(blind)
    assert shown[work.pk] == (len(keys), len(set(keys) & labelled)) == (2 * (0 + 1 + 2 + 2), 1)
    assert shown[blind.pk] == (len(blind_keys), len(set(blind_keys) & labelled)) == (2, 1)
