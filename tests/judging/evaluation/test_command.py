"""evaluate_runs: text table, JSON shape with ir_measures names, and CommandError on bad input."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection)
    first, second = TurnFactory(topic=topic), TurnFactory(topic=topic)
    judge = JudgeFactory()
    RelevanceJudgmentFactory(judge=judge, turn=first, passage_id="a", grade=2)
    RelevanceJudgmentFactory(judge=judge, turn=first, passage_id="b", grade=4)
    RelevanceJudgmentFactory(judge=judge, turn=second, passage_id="c", grade=3)
    good = RunFactory(collection=collection, name="good")
    RankingFactory(run=good, turn=first, passage_ids=["b", "a"])
    RankingFactory(run=good, turn=second, passage_ids=["c"])
    weak = RunFactory(collection=collection, name="weak")
    RankingFactory(run=weak, turn=first, passage_ids=["x", "a"])
    return collection, judge, (first, second)


def run(*args, **kwargs):
    out, err = StringIO(), StringIO()
    call_command("evaluate_runs", *args, stdout=out, stderr=err, **kwargs)
    return out.getvalue(), err.getvalue()


def test_it_prints_json_with_ir_measures_names(setup):
    collection, judge, (first, second) = setup

    out, _ = run(collection=collection.name, judge=judge.name, format="json")

    data = json.loads(out)
    assert set(data) == {"runs", "per_turn"}
    assert set(data["runs"]) == {"good", "weak"}
    assert list(data["runs"]["good"]) == [
        "nDCG@5",
        "P(rel=2)@20",
        "R(rel=2)@20",
        "R(rel=2)@1000",
        "AP(rel=2)",
        "Judged@10",
    ]
    assert data["runs"]["good"]["nDCG@5"] == pytest.approx(1.0)
    assert data["runs"]["good"]["P(rel=2)@20"] == pytest.approx((2 / 20 + 1 / 20) / 2)
    assert data["per_turn"]["weak"][second.turn_id]["nDCG@5"] == 0.0
    assert data["runs"]["weak"]["R(rel=2)@20"] == pytest.approx((1 / 2 + 0) / 2)


def test_it_applies_the_relevance_threshold_and_the_run_choice(setup):
    collection, judge, _ = setup

    out, _ = run(
        "--runs", "weak", collection=collection.name, judge=judge.name, format="json", rel_threshold=3
    )

    data = json.loads(out)
    assert list(data["runs"]) == ["weak"]
    assert data["runs"]["weak"]["P(rel=3)@20"] == 0.0
    assert "P(rel=2)@20" not in data["runs"]["weak"]


def test_it_prints_a_table_best_run_first_and_warns_of_missing_turns(setup):
    collection, judge, (first, second) = setup

    out, err = run(collection=collection.name, judge=judge.name, per_turn=True)

    lines = out.splitlines()
    header = lines[1].split()
    assert header == [
        "run",
        "nDCG@5",
        "P(rel=2)@20",
        "R(rel=2)@20",
        "R(rel=2)@1000",
        "AP(rel=2)",
        "Judged@10",
    ]
    assert lines[2].split()[:2] == ["good", "1.0000"]
    assert lines[3].split()[0] == "weak"
    assert "2 turns judged by" in lines[0]
    assert "weak: no ranking for 1 judged turn, scored 0 there" in err
    assert any(line.split()[:1] == [second.turn_id] for line in lines[4:])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"rel_threshold": 0}, "between 1 and 4"),
        ({"judge": "nobody"}, "no judge named 'nobody'"),
        ({"runs": ["good", "ghost"]}, "no run named ghost"),
        ({"collection": "nowhere"}, "no collection named 'nowhere'"),
    ],
)
def test_it_rejects_bad_input(setup, extra, message):
    collection, judge, _ = setup
    options = {"collection": collection.name, "judge": judge.name, **extra}

    with pytest.raises(CommandError, match=message):
        run(**options)


def test_it_rejects_a_judge_without_labels_on_the_collection(setup):
    collection, _, _ = setup

    with pytest.raises(CommandError, match="no relevance judgments"):
        run(collection=collection.name, judge=JudgeFactory().name)
