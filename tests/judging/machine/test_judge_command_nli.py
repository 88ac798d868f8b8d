"""The `judge` command on the NLI tasks (ntn, dedup) with the tiny DeBERTa-v2 model: jobs and resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError

from annotation.models import Judge, NtnJudgment, Nugget
from judging.clients import nli as nli_client
from judging.machine.jobs import judge_job_run, judge_job_start
from judging.machine.nli import nugget_duplicates_find, nuggets_dedup
from judging.models import JudgeJob
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    ResponseFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)
from tests.judging.helpers import run

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored_pairs(monkeypatch) -> list[tuple[str, str]]:
    """Every (premise, hypothesis) pair the NLI model is asked to score, whatever the caller."""
    asked: list[tuple[str, str]] = []
    original = nli_client.NliModel.entailment_probs

    def spy(self, pairs, **kwargs):
        asked.extend(pairs)
        return original(self, pairs, **kwargs)

    monkeypatch.setattr(nli_client.NliModel, "entailment_probs", spy)
    return asked


@pytest.fixture
def nuggets():
    """Two turns: three response nuggets against two gold nuggets, then one against one (3*2 + 1*1 = 7)."""
    collection = CollectionFactory(name="cone")
    topic = TopicFactory(collection=collection)
    first, second = TurnFactory(topic=topic), TurnFactory(topic=topic)
    gold, extractor = JudgeFactory(name="gold"), JudgeFactory(name="extractor", kind=Judge.Kind.LLM)
    response = ResponseFactory(run=RunFactory(collection=collection, name="A"), turn=first)
    NuggetFactory(judge=gold, turn=first, text="Paris is the capital of France.")
    NuggetFactory(judge=gold, turn=first, text="The Eiffel Tower is 330 metres tall.")
    NuggetFactory(judge=gold, turn=second, text="A marathon is 42.195 kilometres long.")
    for text in ("The capital of France is Paris.", "The tower is tall.", "The museum opens at nine."):
        NuggetFactory(judge=extractor, turn=first, response=response, text=text)
    NuggetFactory(judge=extractor, turn=second, text="Marathons are long.")
    return collection, (first, second)


def ntn_args(model_dir: Path, *extra: str) -> list[str]:
    return [
        "ntn",
        "--collection",
        "cone",
        "--judge",
        "nli:tiny",
        "--gold-judge",
        "gold",
        "--response-nugget-judge",
        "extractor",
        "--model",
        str(model_dir),
        "--threshold",
        "0.3",
        *extra,
    ]


def test_judge_ntn_scores_every_pair_once_and_a_second_run_scores_nothing(
    nuggets, tiny_model_dir, scored_pairs
):
    first = run("judge", *ntn_args(tiny_model_dir))

    assert len(scored_pairs) == 7
    assert "2 turns, 7 pairs scored, 0 pairs already stored, cost $0.0000" in first
    labels = NtnJudgment.objects.filter(judge__name="nli:tiny")
    assert labels.count() == 7
    assert all(label.entails == (label.score >= 0.3) for label in labels)
    job = JudgeJob.objects.get()
    assert (job.task, job.status, job.units_done, job.units_total, job.calls_made, job.cache_hits) == (
        "ntn",
        "done",
        2,
        2,
        7,
        0,
    )
    assert job.judge.kind == Judge.Kind.NLI
    assert job.model == str(tiny_model_dir.resolve())
    assert job.options["threshold"] == 0.3

    scored_pairs.clear()
    second = run("judge", *ntn_args(tiny_model_dir))

    assert scored_pairs == []
    assert "2 turns, 0 pairs scored, 7 pairs already stored, cost $0.0000" in second
    assert labels.count() == 7
    assert JudgeJob.objects.filter(status="done").count() == 2


def test_judge_ntn_scores_in_batches_of_the_size_asked(nuggets, tiny_model_dir, monkeypatch):
    sizes: list[int] = []
    original = nli_client.NliModel.entailment_probs

    def spy(self, pairs, **kwargs):
        sizes.append(self.batch_size)
        return original(self, pairs, **kwargs)

    monkeypatch.setattr(nli_client.NliModel, "entailment_probs", spy)

    out = run("judge", *ntn_args(tiny_model_dir, "--batch-size", "3"))

    assert "2 turns, 7 pairs scored" in out
    assert sizes and set(sizes) == {3}
    assert JudgeJob.objects.get().options["batch_size"] == 3
    assert NtnJudgment.objects.filter(judge__name="nli:tiny").count() == 7


def test_a_killed_ntn_job_resumes_where_it_stopped(nuggets, tiny_model_dir, scored_pairs):
    collection, (first_turn, second_turn) = nuggets
    job = judge_job_start(
        collection=collection,
        task="ntn",
        judge_name="nli:tiny",
        model=str(tiny_model_dir),
        options={"gold_judge": "gold", "response_nugget_judge": "extractor", "threshold": 0.3},
        concurrency=1,
    )

    def killed_after_the_first_turn(job: JudgeJob) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        judge_job_run(job=job, progress=killed_after_the_first_turn)
    job.refresh_from_db()
    assert (job.status, job.units_done, job.calls_made, job.error) == ("failed", 1, 6, "KeyboardInterrupt")
    assert NtnJudgment.objects.filter(judge__name="nli:tiny", gold_nugget__turn=first_turn).count() == 6
    first_run = list(scored_pairs)
    scored_pairs.clear()

    out = run("judge", *ntn_args(tiny_model_dir))

    assert f"resuming job {job.pk} (1/2 units done before)" in out
    assert scored_pairs == [("Marathons are long.", "A marathon is 42.195 kilometres long.")]
    assert not set(scored_pairs) & set(first_run)
    assert f"job {job.pk} done: 2 turns, 7 pairs scored, 6 pairs already stored" in out
    assert JudgeJob.objects.count() == 1
    assert NtnJudgment.objects.filter(judge__name="nli:tiny").count() == 7


def dedup_setup():
    collection = CollectionFactory(name="dups")
    topic = TopicFactory(collection=collection)
    first, second = TurnFactory(topic=topic), TurnFactory(topic=topic)
    source = JudgeFactory(name="llm-gold", kind=Judge.Kind.LLM)
    # Turn one: three distinct texts (one written twice) -> 3 * 2 ordered pairs; turn two: two -> 2 * 1.
    for key, text in [
        ("[1]", "Paris is the capital of France."),
        ("[2]", "paris is the capital of france"),
        ("[3]", "The Eiffel Tower is 330 metres tall."),
        ("[4]", "The museum opens at nine."),
    ]:
        NuggetFactory(judge=source, turn=first, key=key, text=text)
    for key, text in [("[1]", "A marathon is 42.195 kilometres long."), ("[2]", "Marathons are long.")]:
        NuggetFactory(judge=source, turn=second, key=key, text=text)
    return collection, source, (first, second)


def test_judge_dedup_marks_duplicates_and_a_second_run_scores_nothing(tiny_model_dir, scored_pairs):
    collection, source, (first, second) = dedup_setup()
    args = ["dedup", "--collection", "dups", "--judge", "llm-gold-dedup", "--source-judge", "llm-gold"]
    # Threshold 0: every pair entails both ways, so each turn keeps its earliest key alone.
    args += ["--model", str(tiny_model_dir), "--threshold", "0"]

    out = run("judge", *args)

    assert len(scored_pairs) == 3 * 2 + 2 * 1
    assert "2 turns, 8 pairs scored, 0 pairs already stored, cost $0.0000" in out
    assert "1 exact and 3 entailment duplicates, 2 kept" in out
    kept = Nugget.objects.filter(judge__name="llm-gold-dedup").order_by("turn_id")
    assert [(n.turn_id, n.key) for n in kept] == [(first.pk, "[1]"), (second.pk, "[1]")]
    assert Nugget.objects.filter(judge=source, duplicate_of__isnull=False).count() == 4

    scored_pairs.clear()
    again = run("judge", *args)

    assert scored_pairs == []
    assert "2 turns, 0 pairs scored, 8 pairs already stored" in again
    assert Nugget.objects.filter(judge__name="llm-gold-dedup").count() == 2


def test_judge_dedup_with_the_model_keeps_the_pairs_that_entail_each_other(tiny_model_dir):
    collection = CollectionFactory(name="paris")
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    source = JudgeFactory(name="llm-nuggets")
    texts = [
        "Paris is the capital of France.",
        "The capital of France is Paris.",
        "The Eiffel Tower is in Paris.",
        "The museum opens at nine.",
        "Paris is the capital of France!",
    ]
    nuggets = [NuggetFactory(judge=source, turn=turn, key=f"[{i + 1}]", text=t) for i, t in enumerate(texts)]
    model = nli_client.nli_model(str(tiny_model_dir))
    # Any threshold that splits the probabilities makes the greedy rule's outcome depend on the model.
    probs = model.entailment_probs([(a, b) for a in texts[:4] for b in texts[:4] if a != b])
    threshold = sorted(probs)[len(probs) // 2]
    model.threshold = threshold
    expected, _ = nugget_duplicates_find(nuggets, entails=model.entails)

    out = run(
        "judge",
        *("dedup", "--collection", "paris", "--judge", "llm-nuggets-dedup", "--source-judge", "llm-nuggets"),
        *("--model", str(tiny_model_dir), "--threshold", str(threshold)),
    )

    assert f"job {JudgeJob.objects.get().pk} done: 1 turn," in out
    assert dict(Nugget.objects.filter(judge=source).values_list("id", "duplicate_of_id")) == expected
    assert expected[nuggets[4].id] is not None  # the exact duplicate of the first is always folded
    kept = Nugget.objects.filter(judge__name="llm-nuggets-dedup")
    assert sorted(kept.values_list("original_id", flat=True)) == sorted(
        k for k, v in expected.items() if v is None
    )
    # Run again: the target already holds the turn, nothing is redone.
    again = nuggets_dedup(
        collection=collection, source_judge=source, target_name="llm-nuggets-dedup", model=str(tiny_model_dir),
        threshold=threshold,
    )  # fmt: skip
    assert (again.turns, again.skipped_turns) == (0, 1)
    assert kept.count() == sum(1 for v in expected.values() if v is None)


def test_judge_dedup_exact_only_needs_no_model(scored_pairs):
    dedup_setup()
    out = run(
        "judge",
        "dedup",
        "--collection",
        "dups",
        "--judge",
        "exact",
        "--source-judge",
        "llm-gold",
        "--exact-only",
    )
    assert scored_pairs == []
    assert "2 turns, 0 pairs scored, 0 pairs already stored" in out
    assert "1 exact and 0 entailment duplicates, 5 kept" in out
    job = JudgeJob.objects.get()
    assert (job.model, job.options) == ("", {"source_judge": "llm-gold", "exact_only": True})


def test_judge_refuses_nli_jobs_it_cannot_run(nuggets, tmp_path):
    with pytest.raises(CommandError, match="needs the judge of the gold nuggets"):
        run("judge", "ntn", "--collection", "cone", "--judge", "n", "--response-nugget-judge", "extractor")
    with pytest.raises(CommandError, match="no judge named 'nobody'"):
        run("judge", "ntn", "--collection", "cone", "--judge", "n", "--gold-judge", "nobody")
    with pytest.raises(CommandError, match="threshold must be between 0 and 1"):
        run("judge", *ntn_args(tmp_path, "--threshold", "1.5"))
    with pytest.raises(CommandError, match="batch size must be at least 1"):
        run("judge", *ntn_args(tmp_path, "--batch-size", "0"))
    with pytest.raises(CommandError, match="no turn 99_99 in collection cone"):
        run("judge", *ntn_args(tmp_path, "--turns", "99_99"))
    with pytest.raises(CommandError, match="runs do not apply"):
        run("judge", "dedup", "--collection", "cone", "--judge", "d", "--source-judge", "gold", "--runs", "A")
    with pytest.raises(CommandError, match="needs its own judge"):
        run("judge", "dedup", "--collection", "cone", "--judge", "gold", "--source-judge", "gold")
    with pytest.raises(CommandError, match="already exists as kind 'llm'"):
        run("judge", *ntn_args(tmp_path)[:3], "--judge", "extractor", *ntn_args(tmp_path)[5:])
    assert not JudgeJob.objects.exists()
    assert not Judge.objects.filter(name__in=["n", "d", "nli:tiny"]).exists()
    assert not NtnJudgment.objects.exists()


def test_an_nli_model_that_does_not_load_fails_the_job_with_the_reason(nuggets, tmp_path):
    empty = tmp_path / "no-model"
    empty.mkdir()
    with pytest.raises(CommandError, match="cannot load the NLI model"):
        run("judge", *ntn_args(empty))
    job = JudgeJob.objects.get()
    assert job.status == "failed"
    assert "cannot load the NLI model" in job.error
    assert not NtnJudgment.objects.exists()
