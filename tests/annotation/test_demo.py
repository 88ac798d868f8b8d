import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import (
    Nugget,
    Passage,
    PoolEntry,
    Ranking,
    RelevanceJudgment,
    ResponseSentence,
    Run,
    SupportAssignment,
    SupportJudgment,
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
        SupportAssignment.objects.count(),
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
    assert SupportAssignment.objects.count() == 4
    call_command("load_demo")
    assert snapshot() == first
    assert "organiser / organiser-demo" in capsys.readouterr().out
