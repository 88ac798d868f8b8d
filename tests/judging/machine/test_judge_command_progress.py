"""The judge command shows the job's progress per unit on stderr: lines at --verbosity 2, nothing at 0."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from annotation.models import Judge, Nugget, RelevanceJudgment
from core.progress import CommandProgress
from judging.models import JudgeJob
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    PassageFactory,
    RankingFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def every_step(monkeypatch):
    monkeypatch.setattr(CommandProgress, "LINE_EVERY_S", 0.0)


def judge(*args: str, verbosity: int) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("judge", *args, verbosity=verbosity, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def ranked():
    collection = CollectionFactory(name="bikes")
    run = RunFactory(collection=collection, name="bm25")
    for pid in ("bike:1", "bike:2"):
        PassageFactory(collection=collection, passage_id=pid, text=f"Passage {pid} on bike frame sizes.")
    topic = TopicFactory(collection=collection)
    for position in (1, 2):
        RankingFactory(
            run=run, turn=TurnFactory(topic=topic, position=position), passage_ids=["bike:1", "bike:2"]
        )
    return collection


def test_an_llm_job_shows_a_line_per_unit_at_verbosity_2(fake_openai, ranked):
    fake_openai.responder = lambda prompt: "Grade: 2"

    out, err = judge("relevance", "--collection", "bikes", "--judge", "llm-rel", verbosity=2)

    assert "4 units (0 failed), 4 calls made" in out
    lines = err.splitlines()
    assert [line.split(" calls ")[0] for line in lines] == [
        "1/4 units",
        "2/4 units",
        "3/4 units",
        "4/4 units",
    ]
    assert lines[-1].startswith("4/4 units calls ")
    assert JudgeJob.objects.get().units_done == 4
    assert RelevanceJudgment.objects.filter(judge__name="llm-rel").count() == 4


def test_an_llm_job_shows_nothing_at_verbosity_0(fake_openai, ranked):
    fake_openai.responder = lambda prompt: "Grade: 2"

    out, err = judge("relevance", "--collection", "bikes", "--judge", "llm-rel", verbosity=0)

    assert err == ""
    assert "4 units (0 failed)" in out
    assert RelevanceJudgment.objects.filter(judge__name="llm-rel").count() == 4


@pytest.fixture
def nuggets():
    collection = CollectionFactory(name="cone")
    topic = TopicFactory(collection=collection)
    source = JudgeFactory(name="extracted", kind=Judge.Kind.LLM)
    for position in (1, 2, 3):
        turn = TurnFactory(topic=topic, position=position)
        NuggetFactory(judge=source, turn=turn, text="Paris is the capital.")
        NuggetFactory(judge=source, turn=turn, text="paris is the capital")
    return collection


@pytest.mark.parametrize(("verbosity", "expected"), [(2, ["1/3 turns", "2/3 turns", "3/3 turns"]), (0, [])])
def test_an_nli_job_shows_a_line_per_turn_only_at_verbosity_2(nuggets, verbosity, expected):
    args = ("dedup", "--collection", "cone", "--judge", "dedup-exact", "--source-judge", "extracted")

    out, err = judge(*args, "--exact-only", verbosity=verbosity)

    assert "3 turns" in out
    assert [line.split(" pairs ")[0] for line in err.splitlines()] == expected
    assert Nugget.objects.filter(judge__name="dedup-exact").count() == 3
