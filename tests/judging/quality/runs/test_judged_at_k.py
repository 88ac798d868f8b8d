"""judged@k per run and judge: equal to ir_measures' Judged@k, one query per judge, on a page, in a CSV
download and from the run_report command."""

from __future__ import annotations

import csv
import io
import json
import random

import ir_measures
import pytest
from django.core.management import call_command
from django.urls import reverse
from ir_measures import Judged

from judging.quality.runs.selectors import CSV_COLUMNS, judged_at_k, pool_depth
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    PoolFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TurnFactory,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("reports_in_request")]


def _build(collection, *, runs: int, turns: int, seed: int = 3):
    """Runs of random depth (some shorter than the cutoffs) over `turns` turns; judge `nist` grades a
    random part of the pooled documents of every turn but the last, with grades 0 to 3."""
    rng = random.Random(seed)
    judge = JudgeFactory(name="nist")
    turn_rows = [TurnFactory(topic__collection=collection) for _ in range(turns)]
    run_rows = [RunFactory(collection=collection, name=f"run-{r}") for r in range(runs)]
    rankings = {}
    for run in run_rows:
        for turn in turn_rows:
            depth = rng.choice([3, 8, 15, 30])
            ids = rng.sample([f"d{i}" for i in range(40)], depth)
            RankingFactory(run=run, turn=turn, passage_ids=ids)
            rankings[run.name, turn.turn_id] = ids
    for turn in turn_rows[:-1]:
        for doc in rng.sample([f"d{i}" for i in range(40)], 18):
            RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=doc, grade=rng.randint(0, 3))
    return judge, rankings


def _ir_measures(judge, rankings, run_name, cutoffs):
    qrels = [
        ir_measures.Qrel(j.turn.turn_id, j.passage_id, j.grade)
        for j in judge.relevancejudgments.select_related("turn")
    ]
    run = [
        ir_measures.ScoredDoc(turn_id, doc, float(len(ids) - rank))
        for (name, turn_id), ids in rankings.items()
        if name == run_name
        for rank, doc in enumerate(ids)
    ]
    return ir_measures.calc_aggregate([Judged @ k for k in cutoffs], qrels, run)


def test_it_equals_ir_measures_judged_at_k():
    collection = CollectionFactory()
    PoolFactory(collection=collection, depth=25)
    judge, rankings = _build(collection, runs=3, turns=5)

    rows = judged_at_k(collection=collection, judge_id=judge.pk, judge_name=judge.name, depth=25)

    assert [row.run for row in rows] == ["run-0", "run-1", "run-2"]
    for row in rows:
        expected = _ir_measures(judge, rankings, row.run, (5, 10, 20, 25))
        assert row.topics == 5 and row.topics_judged == 4
        for k in (5, 10, 20, 25):
            assert row.judged[k] == pytest.approx(expected[Judged @ k])


def test_it_counts_the_unjudged_pairs_within_the_pool_depth():
    collection = CollectionFactory()
    judge = JudgeFactory(name="nist")
    turn = TurnFactory(topic__collection=collection)
    RankingFactory(
        run=RunFactory(collection=collection, name="r"), turn=turn, passage_ids=["a", "b", "c", "d"]
    )
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="a", grade=0)
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="d", grade=2)

    [row] = judged_at_k(collection=collection, judge_id=judge.pk, judge_name="nist", depth=3)

    assert (row.ranked_within_depth, row.unjudged_within_depth) == (3, 2)
    assert row.judged == {3: pytest.approx(1 / 3), 5: 0.5, 10: 0.5, 20: 0.5}


def test_the_pool_depth_is_the_deepest_pools():
    collection = CollectionFactory()
    assert pool_depth(collection=collection) == 20
    PoolFactory(collection=collection, depth=10)
    PoolFactory(collection=collection, depth=50)
    assert pool_depth(collection=collection) == 50


@pytest.mark.parametrize(("runs", "turns"), [(1, 2), (4, 6)])
def test_the_page_costs_the_same_queries_whatever_the_runs_and_topics(
    client, django_assert_num_queries, runs, turns
):
    collection = CollectionFactory()
    _build(collection, runs=runs, turns=turns)
    client.force_login(OrganiserFactory())
    url = reverse("judging:quality-runs", args=[collection.name]) + "?judge=nist"
    client.get(url)  # computes the stored report

    # Session and user, the collection, the judge menu, the runs' names and a page of their validations,
    # the revisions, the stored report.
    with django_assert_num_queries(8):
        response = client.get(url)

    assert response.status_code == 200
    assert len(response.context["rows"]) == runs


def test_the_download_has_a_row_per_run_and_judge(client):
    collection = CollectionFactory()
    judge, rankings = _build(collection, runs=2, turns=3)
    other = JudgeFactory(name="llm")
    RelevanceJudgmentFactory(judge=other, turn=judge.relevancejudgments.first().turn, passage_id="d1")
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:quality-runs-download", args=[collection.name]))

    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{collection.name}-judged.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [(r["run"], r["judge"]) for r in rows] == [
        ("run-0", "nist"),
        ("run-1", "nist"),
        ("run-0", "llm"),
        ("run-1", "llm"),
    ]
    expected = _ir_measures(judge, rankings, "run-1", (10,))
    assert float(rows[1]["judged_at_10"]) == pytest.approx(expected[Judged @ 10], abs=1e-6)
    assert rows[1]["depth"] == "20" and rows[1]["topics_judged"] == "2"


def test_the_command_writes_csv_and_json():
    collection = CollectionFactory()
    judge, rankings = _build(collection, runs=2, turns=3)
    out = io.StringIO()

    call_command("run_report", collection=collection.name, judge="nist", depth=15, stdout=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    out = io.StringIO()
    call_command("run_report", collection=collection.name, format="json", stdout=out)
    report = json.loads(out.getvalue())

    expected = _ir_measures(judge, rankings, "run-0", (15,))
    assert float(rows[0]["judged_at_depth"]) == pytest.approx(expected[Judged @ 15], abs=1e-6)
    assert report["depth"] == 20 and report["cutoffs"] == [5, 10, 20]
    assert set(report["runs"]) == {"run-0", "run-1"}
    assert report["runs"]["run-0"]["topics_ranked"] == 3
    assert [(row["run"], row["judge"]) for row in report["judged"]] == [("run-0", "nist"), ("run-1", "nist")]


def test_the_command_refuses_a_judge_without_grades_here():
    collection = CollectionFactory()
    JudgeFactory(name="idle")

    with pytest.raises(Exception, match="has no relevance grades"):
        call_command("run_report", collection=collection.name, judge="idle", stdout=io.StringIO())


def test_the_pages_are_for_organisers(client):
    collection = CollectionFactory()
    urls = [
        reverse("judging:quality-runs", args=[collection.name]),
        reverse("judging:quality-runs-download", args=[collection.name]),
    ]

    anonymous = [client.get(url).status_code for url in urls]
    client.force_login(AssessorJudgeFactory().user)
    assessor = [client.get(url).status_code for url in urls]
    client.force_login(OrganiserFactory())
    organiser = [client.get(url).status_code for url in urls]

    assert anonymous == [302, 302]
    assert assessor == [403, 403]
    assert organiser == [200, 200]


def test_the_page_escapes_run_names(client):
    collection = CollectionFactory()
    judge = JudgeFactory(name="nist")
    turn = TurnFactory(topic__collection=collection)
    RankingFactory(run=RunFactory(collection=collection, name="<script>x"), turn=turn, passage_ids=["a"])
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="a")
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:quality-runs", args=[collection.name]))

    assert response.status_code == 200
    assert b"<script>x" not in response.content
    assert b"&lt;script&gt;x" in response.content
