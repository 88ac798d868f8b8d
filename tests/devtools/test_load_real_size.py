"""`load_real_size --scale N`: N times the collection, the same one for a seed, scale 1 as it was.

Built from the small base (devtools/realsize.py SMALL, the real one's shape) so that each build takes a
second or two; the real one at scale 10 is what bench/bench_pages.py builds."""

from __future__ import annotations

import gc
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count

from annotation.models import (
    Collection,
    NuggetAssignment,
    PoolEntry,
    Ranking,
    RelevanceJudgment,
    Response,
    Topic,
    Turn,
)
from crowd.models import CrowdAnswer
from devtools.realsize import REAL, SMALL, Size

pytestmark = pytest.mark.django_db

ABSENT = Path("/nonexistent/topics.json")


def _load(name: str, *, scale: int, seed: int = 7, topics: Path = ABSENT) -> str:
    out = StringIO()
    call_command(
        "load_real_size",
        name=name,
        base="small",
        scale=scale,
        seed=seed,
        topics=topics,
        qrels=ABSENT,
        stdout=out,
    )
    return out.getvalue()


def _counts(name: str) -> dict[str, int]:
    collection = Collection.objects.get(name=name)
    return {
        "topics": Topic.objects.filter(collection=collection).count(),
        "turns": Turn.objects.filter(collection=collection).count(),
        "passages": collection.passages.count(),
        "ranked runs": collection.runs.filter(name__startswith="ranked-").count(),
        "answer runs": collection.runs.filter(name__startswith="rag-").count(),
        "answers": Response.objects.filter(run__collection=collection).count(),
        "nugget assignments": NuggetAssignment.objects.filter(response__run__collection=collection).count(),
        "assessors": RelevanceJudgment.objects.filter(
            turn__collection=collection, judge__name__startswith="assessor:"
        )
        .values("judge")
        .distinct()
        .count(),
        "pooled pairs": PoolEntry.objects.filter(pool__collection=collection).count(),
        "crowd answers": CrowdAnswer.objects.filter(item__batch__campaign__collection=collection).count(),
    }


def _contents(name: str) -> dict[str, list]:
    """What the build chose (texts, rankings, grades, labels, answers), without the names that carry the
    collection's own name."""
    collection = Collection.objects.get(name=name)
    prefix = len(name)
    return {
        "passages": list(collection.passages.order_by("passage_id").values_list("passage_id", "text")),
        "rankings": list(
            Ranking.objects.filter(run__collection=collection)
            .order_by("run__name", "turn__turn_id")
            .values_list("run__name", "turn__turn_id", "passage_ids")
        ),
        "grades": sorted(
            (judge[prefix:] if judge.startswith(name) else "", turn, passage, grade)
            for judge, turn, passage, grade in RelevanceJudgment.objects.filter(
                turn__collection=collection
            ).values_list("judge__name", "turn__turn_id", "passage_id", "grade")
        ),
        "nugget labels": list(
            NuggetAssignment.objects.filter(response__run__collection=collection)
            .order_by("response__run__name", "response__turn__turn_id", "nugget__key")
            .values_list("response__run__name", "response__turn__turn_id", "nugget__text", "label")
        ),
        "crowd answers": sorted(
            CrowdAnswer.objects.filter(item__batch__campaign__collection=collection).values_list(
                "assignment__worker__worker_id", "item__position", "matched", "time_spent_ms"
            )
        ),
    }


def test_scale_multiplies_the_collection():
    _load("one", scale=1)
    said = _load("three", scale=3)
    one, three = _counts("one"), _counts("three")
    assert one["topics"] == SMALL.topics and one["assessors"] == SMALL.assessors
    for what in ("topics", "turns", "passages", "ranked runs", "answer runs", "assessors"):
        assert three[what] == 3 * one[what], what
    # Answers and their nugget labels follow the runs and the turns both.
    assert three["answers"] == 9 * one["answers"]
    assert three["nugget assignments"] == 9 * one["nugget assignments"] > 0
    # Pools and crowd answers follow the turns (and the pools the runs' overlap): at least 3 times over.
    assert three["pooled pairs"] >= 3 * one["pooled pairs"] > 0
    assert three["crowd answers"] >= 3 * one["crowd answers"] > 0
    assert "at scale 3" in said and "built in" in said


def test_the_same_seed_builds_the_same_collection_and_another_seed_another():
    _load("first", scale=2)
    _load("again", scale=2)
    _load("other", scale=2, seed=8)
    first = _contents("first")
    assert first == _contents("again")
    other = _contents("other")
    assert {what for what in first if first[what] != other[what]} == set(first)


def test_conversations_past_the_file_are_generated_in_its_shape(tmp_path):
    shapes = [(2, 3), (4, 1)]  # (turns, statements) of the file's conversations
    topics = [
        {
            "number": n,
            "title": f"Conversation {n}",
            "ptkb": {str(k + 1): f"Statement {k}." for k in range(statements)},
            "turns": [
                {"turn_id": t + 1, "utterance": f"Question {n} {t}?", "response": "An answer."}
                for t in range(turns)
            ],
        }
        for n, (turns, statements) in enumerate(shapes)
    ]
    path = tmp_path / "topics.json"
    path.write_text(json.dumps(topics), encoding="utf-8")
    _load("shaped", scale=3, topics=path)
    built = (
        Topic.objects.filter(collection__name="shaped")
        .annotate(turn_count=Count("turns", distinct=True), statement_count=Count("ptkb", distinct=True))
        .order_by("number")
    )
    assert [(t.number, t.turn_count, t.statement_count) for t in built] == [
        (str(n), *shapes[n % 2]) for n in range(SMALL.topics * 3)
    ]
    assert list(built.values_list("title", flat=True)[:2]) == ["Conversation 0", "Conversation 1"]


def test_scale_one_is_the_size_itself_and_scale_ten_stops_at_a_tracks_numbers():
    assert REAL.scaled(1) == REAL
    ten = REAL.scaled(10)
    assert ten.topics == 170 and ten.campaign_topics == 20
    assert ten.ranked_runs + ten.answer_runs == 90 and ten.assessors == 50
    assert (ten.depth, ten.candidates, ten.rag_nuggets) == (REAL.depth, REAL.candidates, REAL.rag_nuggets)
    with pytest.raises(ValueError):
        Size().scaled(0)


def test_a_build_leaves_the_cycle_collector_as_it_found_it():
    # The build pauses it and collects between steps; a build that stops early must not leave it off.
    assert gc.isenabled()
    _load("built", scale=1)
    assert gc.isenabled()
    with pytest.raises(CommandError):
        _load("built", scale=1)
    assert gc.isenabled()
