"""Fixtures the annotation tests share: an assessor, and the support study (GPT-4o's labels, two assessors'
post-edited and from-scratch labels). The organiser, the support collection and the TREC RAG topic are
shared with other apps' tests (tests/conftest.py)."""

import pytest

from annotation.collection.io import run_import
from annotation.models import Judge, ResponseSentence, Topic
from annotation.services import judge_get_or_create
from annotation.support.io import support_labels_import
from annotation.support.services import support_assignment_set, support_judgment_submit
from tests.factories import CollectionFactory, UserFactory


@pytest.fixture
def alice():
    return UserFactory(username="alice")


def sentence(run, topic, index):
    return ResponseSentence.objects.get(response__run__name=run, response__turn__turn_id=topic, index=index)


@pytest.fixture
def study(fixtures_dir):
    """GPT-4o labels everything; alice post-edits topic 2024-1, bob judges 2024-2 from scratch."""
    rag = CollectionFactory(name="rag24")
    run_import(path=fixtures_dir / "support" / "answers.jsonl", collection=rag)
    gpt = judge_get_or_create(name="gpt-4o", kind=Judge.Kind.LLM)
    support_labels_import(path=fixtures_dir / "support" / "gpt4o_labels.jsonl", collection=rag, judge=gpt)
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    human_labels = {
        # (run, topic, sentence): human label; GPT-4o's label in the comment
        alice: {
            ("rag-a", "2024-1", 0): "FS",
            ("rag-a", "2024-1", 1): "FS",
            ("rag-b", "2024-1", 0): "NS",
            ("rag-b", "2024-1", 1): "PS",
        },
        # PS, FS, FS, FS -> three disagreements
        bob: {("rag-a", "2024-2", 0): "NS", ("rag-a", "2024-2", 1): "FS", ("rag-b", "2024-2", 0): "FS"},
        # FS, FS, PS -> two disagreements
    }
    conditions = {alice: ("2024-1", "post-edit"), bob: ("2024-2", "scratch")}
    for user, labels in human_labels.items():
        number, condition = conditions[user]
        assignment = support_assignment_set(
            topic=Topic.objects.get(collection=rag, number=number),
            user=user,
            condition=condition,
            machine_judge=gpt,
        )
        for (run, topic, index), label in labels.items():
            support_judgment_submit(
                assignment=assignment,
                user=user,
                sentence=sentence(run, topic, index),
                citation_index=0,
                label=label,
            )
    humans = [Judge.objects.get(user=alice), Judge.objects.get(user=bob)]
    return {"collection": rag, "gpt": gpt, "humans": humans, "alice": alice}
