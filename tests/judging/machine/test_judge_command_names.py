"""Machine-judge commands name the judge they write as: never a person's judge, and a bad name of a judge or
run they read is answered with the names that exist."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judge, Nugget
from judging.models import JudgeJob
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    RunFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    collection = CollectionFactory(name="cone")
    turn = TurnFactory(topic__collection=collection, collection=collection)
    RunFactory(collection=collection, name="bm25")
    RunFactory(collection=collection, name="splade")
    gold = JudgeFactory(name="gold")
    NuggetFactory(judge=gold, turn=turn, text="Paris is the capital of France.")
    NuggetFactory(judge=JudgeFactory(name="extractor", kind=Judge.Kind.LLM), turn=turn, text="Paris.")
    return collection


@pytest.fixture
def bob():
    return AssessorJudgeFactory(user__username="bob")


@pytest.fixture
def crowd():
    return JudgeFactory(name="mturk-majority", kind=Judge.Kind.CROWD)


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def labels_of(judge: Judge) -> int:
    return sum(
        related.related_model.objects.filter(judge=judge).count()
        for related in Judge._meta.related_objects
        if related.related_model.__name__.endswith("Judgment")
    )


# --- Writing as a person's judge --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "judge_fixture", "message"),
    [
        (["relevance", "--judge", "assessor:bob"], "bob", "judge 'assessor:bob' is an assessor"),
        (["ntr", "--judge", "mturk-majority", "--gold-judge", "gold"], "crowd", "is a crowd aggregate"),
        (
            [
                "ntn",
                "--judge",
                "assessor:bob",
                "--gold-judge",
                "gold",
                "--response-nugget-judge",
                "extractor",
            ],
            "bob",
            "judge 'assessor:bob' is an assessor",
        ),
        (["dedup", "--judge", "mturk-majority", "--source-judge", "gold"], "crowd", "is a crowd aggregate"),
    ],
)
def test_judge_refuses_to_write_as_a_persons_judge(collection, request, args, judge_fixture, message):
    person = request.getfixturevalue(judge_fixture)

    with pytest.raises(CommandError, match=message):
        run("judge", *args, "--collection", "cone", "--model", "m")

    assert JudgeJob.objects.count() == 0
    assert labels_of(person) == 0
    assert not Nugget.objects.filter(duplicate_of__isnull=False).exists()  # the source set is untouched
    person.refresh_from_db()
    assert person.kind in (Judge.Kind.ASSESSOR, Judge.Kind.CROWD)


@pytest.mark.parametrize(
    "task", [["relevance"], ["dedup", "--source-judge", "gold", "--exact-only"]], ids=["llm", "nli"]
)
def test_judge_refuses_a_new_name_kept_for_assessors(collection, task):
    with pytest.raises(CommandError, match="kept for assessors; 'assessor:carol' is not one"):
        run("judge", *task, "--collection", "cone", "--judge", "assessor:carol")

    assert not Judge.objects.filter(name="assessor:carol").exists()
    assert JudgeJob.objects.count() == 0
    assert not Nugget.objects.filter(duplicate_of__isnull=False).exists()


@pytest.mark.parametrize("name", ["crowd-worker:w1", "mturk-worker:A1B2"])
def test_judge_refuses_a_new_name_kept_for_a_crowd_workers_votes(collection, name):
    with pytest.raises(CommandError, match=f"kept for one crowd worker's own votes; '{name}' is not one"):
        run("judge", "relevance", "--collection", "cone", "--judge", name)

    assert not Judge.objects.filter(name=name).exists()
    assert JudgeJob.objects.count() == 0


@pytest.mark.parametrize(
    ("name", "reason"),
    [("-llm", "which a spreadsheet reads as a formula"), ("crowd-majority", "kept for crowd campaigns")],
)
def test_judge_refuses_a_name_a_spreadsheet_or_the_crowd_would_take(collection, name, reason):
    with pytest.raises(CommandError, match=reason):
        run("judge", "relevance", "--collection", "cone", f"--judge={name}")

    assert not Judge.objects.filter(name=name).exists()
    assert JudgeJob.objects.count() == 0


def test_judge_refuses_a_name_pages_cannot_address(collection):
    with pytest.raises(CommandError, match="a judge name is at most .* without '/'"):
        run("judge", "relevance", "--collection", "cone", "--judge", "llm/rel")

    assert not Judge.objects.filter(name="llm/rel").exists()


# --- Bad names of what a job reads -----------------------------------------------------------------


def test_judge_names_an_unknown_gold_judge_and_lists_the_judges(collection):
    known = r"known judges: extractor, gold$"

    with pytest.raises(CommandError, match=rf"^no judge named 'nope'; {known}"):
        run("judge", "ntr", "--collection", "cone", "--judge", "llm-ntr", "--gold-judge", "nope")
    with pytest.raises(CommandError, match=rf"^no judge named 'nope'; {known}"):
        run(
            "judge",
            *("ntn", "--collection", "cone", "--judge", "nli-ntn", "--model", "m"),
            *("--gold-judge", "nope", "--response-nugget-judge", "extractor"),
        )

    assert JudgeJob.objects.count() == 0


def test_judge_names_unknown_runs_and_lists_the_runs_of_the_collection(collection):
    RunFactory(name="elsewhere")  # another collection's run is not offered

    with pytest.raises(CommandError, match=r"^no run 'nope' in collection cone; known runs: bm25, splade$"):
        run("judge", "relevance", "--collection", "cone", "--judge", "llm-rel", "--runs", "nope")
    with pytest.raises(CommandError, match=r"^no runs 'nada', 'nope' in collection cone; known runs: bm25"):
        run(
            "judge",
            "relevance",
            "--collection",
            "cone",
            "--judge",
            "llm-rel",
            "--runs",
            "bm25",
            "nope",
            "nada",
        )

    assert JudgeJob.objects.count() == 0
