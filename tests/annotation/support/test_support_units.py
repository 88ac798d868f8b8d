"""Support units from imported TREC RAG 2024 answers: one per (sentence, first cited passage)."""

import pytest
from django.core.management import CommandError, call_command

from annotation.collection.io import run_import
from annotation.formats.base import ImportFailed
from annotation.models import Response, ResponseSentence, Run, Topic
from annotation.support.services import support_units
from tests.factories import CollectionFactory

pytestmark = pytest.mark.django_db


def _keys(units):
    return [
        (
            u.sentence.response.run.name,
            u.sentence.response.turn.turn_id,
            u.sentence.index,
            u.citation_index,
            u.passage_id,
        )
        for u in units
    ]


def test_it_builds_one_unit_per_sentence_and_its_first_cited_passage(rag):
    units = support_units(collection=rag, max_citations=1)

    assert _keys(units) == [
        ("rag-a", "2024-1", 0, 0, "msmarco_v2.1_doc_01#1"),
        ("rag-a", "2024-1", 1, 0, "msmarco_v2.1_doc_02#4"),
        ("rag-a", "2024-2", 0, 0, "msmarco_v2.1_doc_03#0"),
        ("rag-a", "2024-2", 1, 0, "msmarco_v2.1_doc_04#2"),
        ("rag-b", "2024-1", 0, 0, "msmarco_v2.1_doc_02#4"),
        ("rag-b", "2024-1", 1, 0, "msmarco_v2.1_doc_01#1"),
        ("rag-b", "2024-2", 0, 0, "msmarco_v2.1_doc_03#0"),
    ]


def test_it_never_makes_a_unit_of_an_uncited_sentence(rag):
    uncited = ResponseSentence.objects.filter(response__run__collection=rag, citations=[]).order_by(
        "response__run__name", "response__turn__turn_id", "index"
    )
    unit_sentences = {u.sentence.id for u in support_units(collection=rag, max_citations=5)}

    assert [(s.response.run.name, s.response.turn.turn_id, s.index) for s in uncited] == [
        ("rag-a", "2024-1", 2),
        ("rag-b", "2024-2", 1),
    ]
    assert not unit_sentences & {s.id for s in uncited}


def test_it_judges_up_to_the_first_n_citations_when_asked(rag):
    topic = Topic.objects.get(collection=rag, number="2024-2")

    first_only = support_units(topic=topic, max_citations=1)
    first_two = support_units(topic=topic, max_citations=2)

    assert len(first_only) == 3
    assert ("rag-a", "2024-2", 0, 1, "msmarco_v2.1_doc_04#2") in _keys(first_two)
    assert len(first_two) == 4


def test_it_uses_the_support_max_citations_setting_by_default(rag, settings):
    settings.SUPPORT_MAX_CITATIONS = 2
    assert len(support_units(collection=rag)) == 8


def test_it_creates_missing_topics_from_the_answers(rag):
    topics = {t.number: t.title for t in Topic.objects.filter(collection=rag)}
    assert topics == {"2024-1": "how do bees make honey", "2024-2": "why is the sky blue"}
    sentence = ResponseSentence.objects.get(
        response__run__name="rag-a", response__turn__turn_id="2024-2", index=0
    )
    assert sentence.citations == ["msmarco_v2.1_doc_03#0", "msmarco_v2.1_doc_04#2"]


def test_it_rejects_an_answer_citing_an_index_outside_references(fixtures_dir):
    collection = CollectionFactory(name="rag-bad")
    path = fixtures_dir / "support" / "answers_bad_citation.jsonl"

    with pytest.raises(ImportFailed) as failure:
        run_import(path=path, collection=collection)

    assert failure.value.problems == [
        f"{path}:2: sentence 0: citation 2 is outside 'references' (2 entries)",
    ]
    assert not Run.objects.filter(collection=collection).exists()
    assert not Response.objects.filter(run__collection=collection).exists()


def test_the_import_command_reports_the_bad_citation_with_file_and_line(fixtures_dir):
    CollectionFactory(name="rag-bad")
    path = fixtures_dir / "support" / "answers_bad_citation.jsonl"

    with pytest.raises(
        CommandError, match=r"answers_bad_citation.jsonl:2: sentence 0: citation 2 is outside"
    ):
        call_command("import_run", str(path), collection="rag-bad")

    assert not Topic.objects.filter(collection__name="rag-bad").exists()
