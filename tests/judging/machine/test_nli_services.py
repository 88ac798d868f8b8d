"""NtN matching and nugget de-duplication services, on the tiny NLI model (the `judge` command that runs them as
jobs: test_judge_command_nli.py)."""

from __future__ import annotations

import pytest

from annotation.models import Judge, NtnJudgment, Nugget
from judging.clients import nli as nli_client
from judging.machine.nli import (
    NliJobError,
    ntn_match,
    nugget_duplicates_find,
    nugget_order_key,
    nugget_text_normalise,
    nuggets_dedup,
)
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    ResponseFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def turns():
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection)
    return collection, TurnFactory(topic=topic), TurnFactory(topic=topic)


def _ntn_setup(turns):
    collection, first, second = turns
    gold, extractor = JudgeFactory(name="gold"), JudgeFactory(name="extractor", kind=Judge.Kind.LLM)
    run_a, run_b = RunFactory(collection=collection, name="A"), RunFactory(collection=collection, name="B")
    response_a, response_b = ResponseFactory(run=run_a, turn=first), ResponseFactory(run=run_b, turn=first)
    gold_first = [
        NuggetFactory(judge=gold, turn=first, text="Paris is the capital of France."),
        NuggetFactory(judge=gold, turn=first, text="The Eiffel Tower is 330 metres tall."),
    ]
    gold_second = [NuggetFactory(judge=gold, turn=second, text="A marathon is 42.195 kilometres long.")]
    premises = [
        NuggetFactory(
            judge=extractor, turn=first, response=response_a, text="The capital of France is Paris."
        ),
        NuggetFactory(judge=extractor, turn=first, response=response_a, text="The tower is tall."),
        NuggetFactory(judge=extractor, turn=first, response=response_b, text="The museum opens at nine."),
        NuggetFactory(judge=extractor, turn=second, response=None, text="Marathons are long."),
    ]
    return collection, gold, extractor, gold_first, gold_second, premises


def test_ntn_match_scores_each_response_nugget_against_the_gold_nuggets_of_its_turn(turns, tiny_model_dir):
    collection, gold, extractor, gold_first, gold_second, premises = _ntn_setup(turns)
    model = nli_client.nli_model(str(tiny_model_dir), threshold=0.3)

    result = ntn_match(
        collection=collection,
        gold_judge=gold,
        response_nugget_judge=extractor,
        judge_name="nli:tiny",
        model=str(tiny_model_dir),
        threshold=0.3,
    )

    assert (result.turns, result.pairs, result.scored, result.skipped) == (2, 7, 7, 0)
    judge = Judge.objects.get(name="nli:tiny")
    assert (judge.kind, judge.model) == (Judge.Kind.NLI, str(tiny_model_dir.resolve()))
    stored = {(j.response_nugget_id, j.gold_nugget_id): j for j in NtnJudgment.objects.filter(judge=judge)}
    expected_pairs = [(r, g) for r in premises[:3] for g in gold_first] + [(premises[3], gold_second[0])]
    assert set(stored) == {(r.id, g.id) for r, g in expected_pairs}
    # Premise: the response nugget; hypothesis: the gold nugget.
    probs = model.entailment_probs([(r.text, g.text) for r, g in expected_pairs], batch_size=1)
    for (r, g), prob in zip(expected_pairs, probs, strict=True):
        assert stored[(r.id, g.id)].score == pytest.approx(prob, abs=1e-5)
        assert stored[(r.id, g.id)].entails == (prob >= 0.3)
    assert result.entailing == sum(j.entails for j in stored.values())


def test_ntn_match_resumes_without_rescoring_pairs_already_judged(turns, tiny_model_dir):
    collection, gold, extractor, *_ = _ntn_setup(turns)
    kwargs = dict(collection=collection, gold_judge=gold, response_nugget_judge=extractor, judge_name="nli:t")
    ntn_match(model=str(tiny_model_dir), **kwargs)
    NtnJudgment.objects.filter(judge__name="nli:t").order_by("id").last().delete()

    result = ntn_match(model=str(tiny_model_dir), **kwargs)

    assert (result.scored, result.skipped) == (1, 6)
    assert NtnJudgment.objects.filter(judge__name="nli:t").count() == 7


def test_ntn_match_limits_response_nuggets_to_the_runs_named(turns, tiny_model_dir):
    collection, gold, extractor, gold_first, gold_second, premises = _ntn_setup(turns)

    ntn_match(
        collection=collection,
        gold_judge=gold,
        response_nugget_judge=extractor,
        judge_name="nli:run-b",
        model=str(tiny_model_dir),
        runs=["B"],
    )

    premise_ids = set(
        NtnJudgment.objects.filter(judge__name="nli:run-b").values_list("response_nugget_id", flat=True)
    )
    assert premise_ids == {premises[2].id, premises[3].id}  # run B's nugget, and the unlinked one


def test_ntn_match_refuses_a_judge_name_taken_by_another_kind_of_judge(turns, tiny_model_dir):
    collection, gold, extractor, *_ = _ntn_setup(turns)

    with pytest.raises(NliJobError, match="already exists"):
        ntn_match(
            collection=collection,
            gold_judge=gold,
            response_nugget_judge=extractor,
            judge_name="gold",
            model=str(tiny_model_dir),
        )
    assert NtnJudgment.objects.count() == 0


def test_normalisation_folds_case_whitespace_and_punctuation_but_keeps_numbers_apart():
    assert nugget_text_normalise("  Paris,  is the CAPITAL!") == nugget_text_normalise("paris is the capital")
    assert nugget_text_normalise("It is 1.15 m tall") != nugget_text_normalise("It is 11.5 m tall")


def test_exact_duplicates_survive_as_the_earliest_key_whatever_the_row_order(turns):
    collection, turn, _ = turns
    source = JudgeFactory(name="human")
    later = NuggetFactory(judge=source, turn=turn, key="[10]", text="Paris is the capital.")
    first = NuggetFactory(judge=source, turn=turn, key="[2]", text="paris  is the Capital")
    other = NuggetFactory(judge=source, turn=turn, key="[3]", text="It is 11.5 m tall")
    number = NuggetFactory(judge=source, turn=turn, key="[4]", text="It is 1.15 m tall")

    result = nuggets_dedup(
        collection=collection, source_judge=source, target_name="human-dedup", exact_only=True
    )

    assert (result.nuggets, result.exact_duplicates, result.entailment_duplicates, result.kept) == (
        4,
        1,
        0,
        3,
    )
    duplicate_of = dict(Nugget.objects.filter(judge=source).values_list("id", "duplicate_of_id"))
    assert duplicate_of == {later.id: first.id, first.id: None, other.id: None, number.id: None}
    kept = Nugget.objects.filter(judge__name="human-dedup").order_by("id")
    assert [(n.key, n.original_id, n.text) for n in kept] == [
        ("[2]", first.id, first.text),
        ("[3]", other.id, other.text),
        ("[4]", number.id, number.text),
    ]
    assert Judge.objects.get(name="human-dedup").kind == Judge.Kind.NLI


def _mutual(verdicts: set[tuple[str, str]]):
    def entails(pairs: list[tuple[str, str]]) -> list[bool]:
        return [pair in verdicts for pair in pairs]

    return entails


def test_entailment_duplicates_need_both_directions_and_point_at_the_earliest_survivor():
    a, b, c, d, e = (Nugget(id=i, key=f"[{i}]", text=t) for i, t in enumerate("ABCDE", start=1))
    d.text = "b."  # an exact duplicate of B once normalised
    verdicts = {("A", "B"), ("B", "A"), ("C", "A"), ("A", "E"), ("E", "A"), ("B", "E"), ("E", "B")}

    for order in ([a, b, c, d, e], [e, d, c, b, a], [c, a, e, b, d]):
        duplicate_of, how = nugget_duplicates_find(order, entails=_mutual(verdicts))

        # B and E are paraphrases of A; C only entails A (one direction) and survives; D, an exact
        # duplicate of B, follows B to A.
        assert duplicate_of == {1: None, 2: 1, 3: None, 4: 1, 5: 1}
        assert how == {2: "nli", 4: "exact", 5: "nli"}


def test_dedup_refuses_the_source_judge_as_its_target(turns):
    collection, turn, _ = turns
    source = JudgeFactory(name="human")
    NuggetFactory(judge=source, turn=turn)

    with pytest.raises(NliJobError, match="own judge"):
        nuggets_dedup(collection=collection, source_judge=source, target_name="human", exact_only=True)


def test_survival_order_compares_the_numbers_in_keys_as_numbers():
    keys = ["[10]", "[2]", "p3f:120", "p3f:9", "[1]"]
    nuggets = [Nugget(id=index, key=key, text=key) for index, key in enumerate(keys, start=1)]

    assert [n.key for n in sorted(nuggets, key=nugget_order_key)] == [
        "[1]",
        "[2]",
        "[10]",
        "p3f:9",
        "p3f:120",
    ]
