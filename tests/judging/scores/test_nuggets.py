"""CONE-RAG nugget metrics: known answers worked by hand on small cases, and the empty-turn rules.

The collection below (worked in the comments) has four turns: t1 personal through its ptkb_provenance,
t2 personal through a relevant PtkbJudgment, t3 non-personal (its only PTKB label says not relevant),
t4 without gold nuggets (left out). Run A answers every turn, run B has no response to t3.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import NtnJudgment, NtrJudgment, PtkbJudgment
from judging.measures.nuggets import NuggetMetricsError, macro, ntn_turn_scores, ntr_turn_recall
from judging.scores.nuggets import nugget_metrics
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    PtkbStatementFactory,
    ResponseFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)


def test_ntn_turn_scores_count_matched_gold_and_matching_response_nuggets():
    # Gold {1,2,3}; response nuggets {10,11}; 10 entails 1 and 2, 11 entails nothing; a pair of another
    # turn (12 -> 3) does not count. Recall 2/3, precision 1/2.
    recall, precision = ntn_turn_scores(
        gold=[1, 2, 3], response_nuggets=[10, 11], entails={(10, 1), (10, 2), (12, 3)}
    )

    assert (recall, precision) == (pytest.approx(2 / 3), 0.5)


def test_a_response_without_nuggets_scores_zero_and_a_turn_without_gold_has_no_score():
    assert ntn_turn_scores(gold=[1, 2], response_nuggets=[], entails={(10, 1)}) == (0.0, 0.0)
    with pytest.raises(NuggetMetricsError):
        ntn_turn_scores(gold=[], response_nuggets=[10], entails=set())
    with pytest.raises(NuggetMetricsError):
        ntr_turn_recall(gold=[], matched=[])


def test_ntr_turn_recall_is_the_share_of_gold_nuggets_captured():
    assert ntr_turn_recall(gold=[1, 2, 3, 4], matched=[2, 4, 99]) == 0.5
    assert macro([0.5, None, 1.0]) == 0.75
    assert macro([None]) is None


@pytest.fixture
def cone(db):
    collection = CollectionFactory(name="cone")
    topic = TopicFactory(collection=collection)
    statement = PtkbStatementFactory(topic=topic)
    t1 = TurnFactory(topic=topic, turn_id="1_1", ptkb_provenance=[statement.statement_id])
    t2 = TurnFactory(topic=topic, turn_id="1_2", ptkb_provenance=[])
    t3 = TurnFactory(topic=topic, turn_id="1_3", ptkb_provenance=[])
    t4 = TurnFactory(topic=topic, turn_id="1_4", ptkb_provenance=[])
    ptkb_judge = JudgeFactory(name="ptkb")
    PtkbJudgment.objects.create(judge=ptkb_judge, turn=t2, statement=statement, relevant=True)
    PtkbJudgment.objects.create(judge=ptkb_judge, turn=t3, statement=statement, relevant=False)

    gold = JudgeFactory(name="gold")
    g1a, g1b = NuggetFactory(judge=gold, turn=t1), NuggetFactory(judge=gold, turn=t1)
    g2a = NuggetFactory(judge=gold, turn=t2)
    g3a, g3b = NuggetFactory(judge=gold, turn=t3), NuggetFactory(judge=gold, turn=t3)
    other_gold = NuggetFactory(judge=JudgeFactory(name="other-gold"), turn=t1)

    run_a, run_b = RunFactory(collection=collection, name="A"), RunFactory(collection=collection, name="B")
    a = {turn: ResponseFactory(run=run_a, turn=turn) for turn in (t1, t2, t3, t4)}
    a_rank2 = ResponseFactory(run=run_a, turn=t1, rank=2)
    b = {turn: ResponseFactory(run=run_b, turn=turn) for turn in (t1, t2)}
    return {
        "collection": collection,
        "turns": (t1, t2, t3, t4),
        "gold": gold,
        "g": (g1a, g1b, g2a, g3a, g3b),
        "other_gold": other_gold,
        "a": a,
        "a_rank2": a_rank2,
        "b": b,
        "ptkb_judge": ptkb_judge,
    }


@pytest.fixture
def ntn(cone):
    t1, t2, t3, t4 = cone["turns"]
    g1a, g1b, g2a, g3a, g3b = cone["g"]
    a, b = cone["a"], cone["b"]
    extractor, nli = JudgeFactory(name="extractor"), JudgeFactory(name="nli", kind="nli")

    def nuggets(response, n):
        return [NuggetFactory(judge=extractor, turn=response.turn, response=response) for _ in range(n)]

    a1 = nuggets(a[t1], 3)  # a1[0] -> g1a, a1[1] -> g1a: recall 1/2, precision 2/3
    nuggets(a[t2], 0)  # no nuggets: 0, 0
    a3 = nuggets(a[t3], 1)  # a3[0] -> g3a, g3b: 1, 1
    nuggets(a[t4], 2)  # no gold: left out
    rank2 = nuggets(cone["a_rank2"], 1)  # entails everything, but only rank 1 counts
    b1 = nuggets(b[t1], 2)  # b1[0] -> g1a, g1b: recall 1, precision 1/2
    b2 = nuggets(b[t2], 1)  # b2[0] -> g2a: 1, 1
    # B has no response to t3: 0, 0.
    positives = {
        (a1[0], g1a), (a1[1], g1a), (a3[0], g3a), (a3[0], g3b), (rank2[0], g1a), (rank2[0], g1b),
        (b1[0], g1a), (b1[0], g1b), (b2[0], g2a),
    }  # fmt: skip
    pairs = [(r, g) for r in a1 + rank2 + b1 for g in (g1a, g1b)] + [(a3[0], g3a), (a3[0], g3b), (b2[0], g2a)]
    for r, g in pairs:
        if (r, g) != (a1[2], g1b):  # left unjudged: counts as no match
            NtnJudgment.objects.create(
                judge=nli, response_nugget=r, gold_nugget=g, entails=(r, g) in positives
            )
    # Labels of another NtN judge and against another gold set must not leak in.
    other_nli = JudgeFactory(name="other-nli", kind="nli")
    NtnJudgment.objects.create(judge=other_nli, response_nugget=a1[2], gold_nugget=g1b, entails=True)
    NtnJudgment.objects.create(judge=nli, response_nugget=a1[2], gold_nugget=cone["other_gold"], entails=True)
    return cone | {"extractor": extractor, "nli": nli}


def test_ntn_metrics_match_the_hand_worked_example(ntn):
    report = nugget_metrics(
        collection=ntn["collection"], gold_judge=ntn["gold"], response_nugget_judge=ntn["extractor"],
        ntn_judge=ntn["nli"],
    )  # fmt: skip

    assert (report.turns_with_gold, report.turns_without_gold) == (3, 1)
    by_run = {run.run: run for run in report.runs}
    a, b = by_run["A"], by_run["B"]
    # A: recall (1/2 + 0 + 1) / 3 = 1/2, precision (2/3 + 0 + 1) / 3 = 5/9.
    assert (a.all.turns, a.all.recall, a.all.precision) == (3, pytest.approx(0.5), pytest.approx(5 / 9))
    # Personal turns t1, t2: recall (1/2 + 0) / 2, precision (2/3 + 0) / 2; non-personal t3: 1, 1.
    assert (a.personal.turns, a.personal.recall, a.personal.precision) == (2, 0.25, pytest.approx(1 / 3))
    assert (a.non_personal.turns, a.non_personal.recall, a.non_personal.precision) == (1, 1.0, 1.0)
    # B: recall (1 + 1 + 0) / 3 = 2/3, precision (1/2 + 1 + 0) / 3 = 1/2; personal 1 and 3/4; t3 0, 0.
    assert (b.all.recall, b.all.precision) == (pytest.approx(2 / 3), pytest.approx(0.5))
    assert (b.personal.recall, b.personal.precision) == (1.0, 0.75)
    assert (b.non_personal.recall, b.non_personal.precision) == (0.0, 0.0)
    assert [(run.run, run.rank) for run in report.runs] == [("B", 1), ("A", 2)]
    assert (a.unjudged, b.unjudged) == (1, 0)
    turn_rows = {t.turn_id: t for t in a.turns}
    assert set(turn_rows) == {"1_1", "1_2", "1_3"}
    assert (turn_rows["1_2"].response_nuggets, turn_rows["1_2"].recall, turn_rows["1_2"].precision) == (
        0,
        0,
        0,
    )
    assert [t.response_id for t in b.turns] == [
        ntn["b"][ntn["turns"][0]].id,
        ntn["b"][ntn["turns"][1]].id,
        None,
    ]


def test_personal_turns_follow_the_chosen_ptkb_judge(ntn):
    someone_else = JudgeFactory(name="someone-else")

    report = nugget_metrics(
        collection=ntn["collection"], gold_judge=ntn["gold"], response_nugget_judge=ntn["extractor"],
        ntn_judge=ntn["nli"], ptkb_judge=someone_else,
    )  # fmt: skip

    # Without the ptkb judge's label t2 is non-personal; t1 stays personal through its provenance.
    a = next(run for run in report.runs if run.run == "A")
    assert (a.personal.turns, a.personal.recall) == (1, 0.5)
    assert (a.non_personal.turns, a.non_personal.recall) == (2, 0.5)


def test_unlinked_response_nuggets_count_for_every_response_of_their_turn(ntn):
    t1 = ntn["turns"][0]
    g1b = ntn["g"][1]
    shared = NuggetFactory(judge=ntn["extractor"], turn=t1, response=None)
    NtnJudgment.objects.create(judge=ntn["nli"], response_nugget=shared, gold_nugget=g1b, entails=True)

    report = nugget_metrics(
        collection=ntn["collection"], gold_judge=ntn["gold"], response_nugget_judge=ntn["extractor"],
        ntn_judge=ntn["nli"],
    )  # fmt: skip

    a = next(run for run in report.runs if run.run == "A")
    # A on t1: 4 response nuggets, 3 match; both gold nuggets recalled.
    assert (a.turns[0].response_nuggets, a.turns[0].recall, a.turns[0].precision) == (4, 1.0, 0.75)


@pytest.fixture
def ntr(cone):
    t1, t2, t3, t4 = cone["turns"]
    g1a, g1b, g2a, g3a, g3b = cone["g"]
    a, b = cone["a"], cone["b"]
    crowd = JudgeFactory(name="mturk-majority", kind="crowd")
    run_c = RunFactory(collection=cone["collection"], name="C")
    c = {turn: ResponseFactory(run=run_c, turn=turn) for turn in (t1, t2)}
    labels = [
        (a[t1], g1a, True), (a[t1], g1b, False),  # 1/2
        (a[t2], g2a, True),  # 1
        (a[t3], g3a, True),  # g3b unjudged: 1/2
        (cone["a_rank2"], g1b, True),  # rank 2: ignored
        (b[t1], g1a, False), (b[t1], g1b, False),  # 0
        (b[t2], g2a, True),  # 1; no response to t3: 0
        (c[t1], g1a, False), (c[t2], g2a, True),  # C equals B (g1b unjudged)
    ]  # fmt: skip
    for response, nugget, matched in labels:
        NtrJudgment.objects.create(judge=crowd, response=response, nugget=nugget, matched=matched)
    return cone | {"crowd": crowd}


def test_ntr_recall_matches_the_hand_worked_example_and_ties_share_a_rank(ntr):
    report = nugget_metrics(collection=ntr["collection"], gold_judge=ntr["gold"], ntr_judge=ntr["crowd"])

    by_run = {run.run: run for run in report.runs}
    # A: (1/2 + 1 + 1/2) / 3 = 2/3; B and C: (0 + 1 + 0) / 3 = 1/3.
    assert by_run["A"].all.recall == pytest.approx(2 / 3)
    assert by_run["A"].all.precision is None
    assert by_run["B"].all.recall == by_run["C"].all.recall == pytest.approx(1 / 3)
    assert (by_run["A"].personal.recall, by_run["A"].non_personal.recall) == (0.75, 0.5)
    assert [(run.run, run.rank) for run in report.runs] == [("A", 1), ("B", 2), ("C", 2)]
    assert (by_run["A"].unjudged, by_run["B"].unjudged, by_run["C"].unjudged) == (1, 0, 1)


def test_nugget_metrics_command_prints_json_with_per_turn_scores(ntn):
    out = StringIO()

    call_command(
        "nugget_metrics", "--collection", "cone", "--gold-judge", "gold", "--response-nugget-judge", "extractor",
        "--ntn-judge", "nli", "--format", "json", stdout=out,
    )  # fmt: skip

    data = json.loads(out.getvalue())
    assert (data["mode"], data["turns_with_gold"], data["turns_without_gold"]) == ("ntn", 3, 1)
    assert [(run["run"], run["rank"]) for run in data["runs"]] == [("B", 1), ("A", 2)]
    assert data["runs"][1]["all"]["precision"] == pytest.approx(5 / 9)
    assert [turn["recall"] for turn in data["runs"][1]["turns"]] == [0.5, 0.0, 1.0]


def test_nugget_metrics_command_prints_a_ranked_table(ntr):
    out = StringIO()

    call_command(
        "nugget_metrics", "--collection", "cone", "--gold-judge", "gold", "--ntr-judge", "mturk-majority",
        "--per-turn", stdout=out,
    )  # fmt: skip

    lines = out.getvalue().splitlines()
    assert "NtR against gold" in lines[0]
    assert lines[2].split()[:3] == ["1", "A", "0.6667"]
    assert "1_3" in out.getvalue()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ntr-judge", "mturk", "--ntn-judge", "nli"], "either"),
        (["--ntn-judge", "nli"], "need --response-nugget-judge"),
        (["--ntr-judge", "nobody"], "no judge named 'nobody'"),
        (["--ntr-judge", "gold", "--runs", "Z"], "no such runs"),
    ],
)
def test_nugget_metrics_command_rejects_bad_input(cone, args, message):
    with pytest.raises(CommandError, match=message):
        call_command(
            "nugget_metrics", "--collection", "cone", "--gold-judge", "gold", *args, stdout=StringIO()
        )


def test_nugget_metrics_rejects_a_gold_judge_without_nuggets(cone):
    with pytest.raises(CommandError, match="has no nuggets"):
        call_command(
            "nugget_metrics", "--collection", "cone", "--gold-judge", "ptkb", "--ntr-judge", "gold",
            stdout=StringIO(),
        )  # fmt: skip


def test_a_deduplicated_gold_set_scores_with_its_originals_labels(ntr):
    """De-duplicated copies point at their originals; the originals' NtR labels count for them."""
    t1, t2, t3, _t4 = ntr["turns"]
    g1a, g1b, g2a, g3a, g3b = ntr["g"]
    dedup = JudgeFactory(name="gold-dedup")
    # g1b was a duplicate of g1a, so the de-duplicated set keeps g1a, g2a, g3a and g3b.
    copies = {g: NuggetFactory(judge=dedup, turn=g.turn, original=g) for g in (g1a, g2a, g3a, g3b)}
    # A label on a copy itself wins over its original's: A's response to t3 does not match g3a's copy.
    NtrJudgment.objects.create(judge=ntr["crowd"], response=ntr["a"][t3], nugget=copies[g3a], matched=False)

    report = nugget_metrics(collection=ntr["collection"], gold_judge=dedup, ntr_judge=ntr["crowd"])

    by_run = {run.run: run for run in report.runs}
    # A: t1 1/1 (g1a), t2 1/1, t3 0/2 (copy label no, g3b unjudged) -> (1 + 1 + 0) / 3.
    assert by_run["A"].all.recall == pytest.approx(2 / 3)
    # B: t1 0/1, t2 1/1, no response to t3 -> 1/3.
    assert by_run["B"].all.recall == pytest.approx(1 / 3)
    assert {turn.turn_id: turn.recall for turn in by_run["A"].turns} == {"1_1": 1.0, "1_2": 1.0, "1_3": 0.0}
