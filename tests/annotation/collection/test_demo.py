import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation.models import (
    Nugget,
    Passage,
    PoolEntry,
    Ranking,
    RelevanceJudgment,
    ResponseSentence,
    Run,
    SupportJudgment,
    TopicWork,
    WorkSlot,
)

pytestmark = pytest.mark.django_db


def snapshot():
    return (
        Passage.objects.count(),
        Run.objects.count(),
        Ranking.objects.count(),
        ResponseSentence.objects.count(),
        RelevanceJudgment.objects.count(),
        Nugget.objects.count(),
        get_user_model().objects.count(),
        PoolEntry.objects.count(),
        WorkSlot.objects.count(),
        TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).count(),
    )


def test_load_demo_loads_the_collection_and_accounts_once(capsys):
    call_command("load_demo")
    first = snapshot()
    assert first[:2] == (40, 3)
    assert Nugget.objects.filter(judge__name="demo-gold-nuggets").count() == 9
    assert SupportJudgment.objects.filter(judge__name="demo-llm-support").count() == 48
    assert RelevanceJudgment.objects.filter(judge__name="demo-llm-relevance").count() == 118
    for nugget in Nugget.objects.all():
        text = Passage.objects.get(passage_id=nugget.passage_id).text
        assert text[nugget.start : nugget.end] == nugget.text
    assert get_user_model().objects.get(username="organiser").is_staff
    assert get_user_model().objects.get(username="alice").check_password("alice-demo")
    assert PoolEntry.objects.filter(pool__name="demo-adaptive").exists()
    assert WorkSlot.objects.filter(unit__assignment__name="demo-round-1").count() == 2 * 7
    assert TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).count() == 4
    call_command("load_demo")
    assert snapshot() == first
    assert "organiser / organiser-demo" in capsys.readouterr().out


def test_demo_texts_are_plain_prose_without_markup():
    call_command("load_demo")

    texts = [
        *Passage.objects.values_list("text", flat=True),
        *ResponseSentence.objects.values_list("text", flat=True),
    ]

    assert len(texts) > 40
    assert [text for text in texts if "<" in text or ">" in text] == []


def test_scraped_markup_is_imported_verbatim_and_shown_as_text(client, fixtures_dir):
    from annotation.collection.io import passages_import
    from annotation.relevance.services import work_lease
    from tests.factories import CollectionFactory, UserFactory, relevance_campaign

    path = fixtures_dir / "markup" / "passages.jsonl"
    scraped = json.loads(path.read_text(encoding="utf-8"))["passage_text"]
    collection = CollectionFactory()
    passages_import(path=path, collection=collection)
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, passage_texts=[scraped])
    slot = work_lease(assignment=assignment, user=alice)
    client.force_login(alice)

    page = client.get(reverse("relevance-passage", args=[slot.pk, slot.unit.turn_pks[0], 0]))

    assert page.status_code == 200
    html = page.content.decode()
    assert "<script>alert('xss')</script>" not in html
    assert "<img src=x onerror=alert(1)>" not in html
    assert "&lt;script&gt;alert(&#x27;xss&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert Passage.objects.get(collection=collection, passage_id="scraped-01:0").text == scraped
