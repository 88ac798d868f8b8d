"""TREC RAG nugget jobs against the loopback server: nugget lists created window by window, vital/okay and
assignment labels in windows of nuggets, each stored as a machine label; cache, cost, retries, resume."""

from __future__ import annotations

import zlib
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judge, Nugget, NuggetAssignment, NuggetImportanceJudgment
from devtools.openai_server import toy_responder
from judging.machine.jobs import JobError, judge_job_run, judge_job_start
from judging.models import JudgeJob, LlmCall, LlmFailure
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    ResponseFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)
from tests.judging.fake_openai import Answer, count_tokens

pytestmark = pytest.mark.django_db

PASSAGES = {
    "p:capital": ("Paris is the capital of France. It lies on the Seine.", 3),
    "p:people": ("Paris has about 2.1 million inhabitants. Many more live around it.", 2),
    "p:tower": ("The Eiffel Tower is 330 metres tall. It was built in 1889.", 1),
    "p:cheese": ("France makes hundreds of cheeses. Brie is one.", 0),
}
ANSWER = "Paris is the capital of France and has 2.1 million inhabitants."


@pytest.fixture
def rag():
    """A TREC-RAG-shaped collection: two questions, graded passages (qrels), two runs' answers, and a
    nugget list of a "gold" judge for the first question."""
    collection = CollectionFactory(name="rag24")
    topic = TopicFactory(collection=collection, number="2024")
    paris = TurnFactory(topic=topic, position=1, utterance="What is Paris known for?")
    rome = TurnFactory(topic=topic, position=2, utterance="What is Rome known for?")
    qrels = JudgeFactory(name="qrels")
    for passage_id, (text, grade) in PASSAGES.items():
        PassageFactory(collection=collection, passage_id=passage_id, text=text)
        RelevanceJudgmentFactory(judge=qrels, turn=paris, passage_id=passage_id, grade=grade)
    PassageFactory(collection=collection, passage_id="r:1", text="Rome is the capital of Italy.")
    RelevanceJudgmentFactory(judge=qrels, turn=rome, passage_id="r:1", grade=2)
    RelevanceJudgmentFactory(judge=JudgeFactory(name="other-qrels"), turn=rome, passage_id="r:1", grade=0)
    gold = JudgeFactory(name="gold")
    texts = [
        "Paris is the capital of France",
        "Paris has about 2.1 million inhabitants",
        "Eiffel Tower: 330 metres",
    ]
    nuggets = [
        NuggetFactory(judge=gold, turn=paris, key=f"g{i}", text=text, position=i)
        for i, text in enumerate(texts)
    ]
    runs = [RunFactory(collection=collection, name=name) for name in ("run-a", "run-b")]
    ResponseFactory(run=runs[0], turn=paris, text=ANSWER)
    ResponseFactory(run=runs[1], turn=paris, text="Paris, capital of France, lies on the Seine.")
    for run in runs:
        ResponseFactory(run=run, turn=rome, text=f"Rome is old, says {run.name}.")
    return {"collection": collection, "turns": (paris, rome), "nuggets": nuggets, "runs": runs}


@pytest.fixture
def toy(fake_openai):
    fake_openai.responder = toy_responder
    return fake_openai


def start(collection, task, options, judge="machine", model="gpt-4o-mini", concurrency=4):
    return judge_job_start(
        collection=collection,
        task=task,
        judge_name=judge,
        model=model,
        options=options,
        concurrency=concurrency,
    )


def nugget_texts(judge_name, turn):
    return list(Nugget.objects.filter(judge__name=judge_name, turn=turn).values_list("text", flat=True))


# --- Creation ------------------------------------------------------------------------------------------


def test_it_creates_an_ordered_list_per_turn_reading_relevant_passages_window_by_window(toy, rag):
    paris, rome = rag["turns"]
    job = judge_job_run(
        job=start(rag["collection"], "nuggets-create", {"window": 2, "relevance_judge": "qrels"})
    )

    assert (job.status, job.units_total, job.units_done, job.units_failed, job.calls_made) == (
        "done",
        2,
        2,
        0,
        3,
    )
    judge = Judge.objects.get(name="machine")
    assert (judge.kind, judge.model, judge.prompt_version) == ("llm", "gpt-4o-mini", "nuggets_create_v1")
    first, second = [r.prompt for r in toy.answered if "What is Paris" in r.prompt]
    (third,) = [r.prompt for r in toy.answered if "What is Rome" in r.prompt]
    # Most relevant passages first; the second call carries the list the first answer gave.
    assert "[1] Paris is the capital of France." in first and "[2] Paris has about" in first
    assert "Nugget list so far:\n(empty)" in first
    assert "Nugget list so far:\n1. Paris is the capital of France\n2. Paris has about 2.1" in second
    assert "Eiffel" in second and "cheeses" not in first + second
    assert "[1] Rome is the capital of Italy." in third
    assert nugget_texts("machine", paris) == [
        "Paris is the capital of France",
        "Paris has about 2.1 million inhabitants",
        "The Eiffel Tower is 330 metres tall",
    ]
    assert list(Nugget.objects.filter(judge=judge, turn=paris).values_list("position", flat=True)) == [
        0,
        1,
        2,
    ]
    assert nugget_texts("machine", rome) == ["Rome is the capital of Italy"]


def test_it_keeps_at_most_max_nuggets_and_reads_only_the_named_qrels_at_min_grade(toy, rag):
    paris, rome = rag["turns"]
    options = {"window": 10, "max_nuggets": 1, "min_grade": 2, "relevance_judge": "qrels"}
    job = judge_job_run(job=start(rag["collection"], "nuggets-create", options))

    assert (job.status, job.units_done, job.calls_made) == ("done", 2, 2)
    assert "Eiffel" not in toy.answered[0].prompt
    assert "keep at most 1 nuggets" in toy.answered[0].prompt
    assert nugget_texts("machine", paris) == ["Paris is the capital of France"]
    other = judge_job_run(
        job=start(
            rag["collection"],
            "nuggets-create",
            {"relevance_judge": "other-qrels", "min_grade": 1},
            judge="m2",
        )
    )
    assert other.status == "failed"
    assert other.error.startswith(
        "nothing judged: no passage of the chosen turns is graded 1 or more by other-qrels"
    )


def test_a_rerun_of_creation_keeps_the_rows_of_unchanged_nuggets(toy, rag):
    paris, _ = rag["turns"]
    judge_job_run(job=start(rag["collection"], "nuggets-create", {"window": 2}))
    before = dict(Nugget.objects.filter(judge__name="machine").values_list("key", "pk"))

    again = judge_job_run(job=start(rag["collection"], "nuggets-create", {"window": 2}))

    assert (again.calls_made, again.cache_hits) == (0, 3)
    assert dict(Nugget.objects.filter(judge__name="machine").values_list("key", "pk")) == before


# --- Importance ------------------------------------------------------------------------------------------


def test_it_labels_each_nugget_vital_or_okay_in_windows_as_machine_labels(toy, rag):
    job = judge_job_run(job=start(rag["collection"], "importance", {"nuggets_judge": "gold", "window": 2}))

    assert (job.status, job.units_total, job.units_done, job.calls_made) == ("done", 2, 2, 2)
    assert Judge.objects.get(name="machine").prompt_version == "importance_v1"
    windows = sorted(r.prompt.split("Nuggets:\n")[1].split("\n\n")[0] for r in toy.answered)
    assert windows == [
        "1. Eiffel Tower: 330 metres",
        "1. Paris is the capital of France\n2. Paris has about 2.1 million inhabitants",
    ]
    labels = {j.nugget.text: (j.importance, j.condition) for j in NuggetImportanceJudgment.objects.all()}
    # The fake's rule: vital when the crc32 of the nugget's text is even.
    assert labels == {
        n.text: ("vital" if zlib.crc32(n.text.encode()) % 2 == 0 else "okay", "machine")
        for n in rag["nuggets"]
    }


def test_importance_needs_a_nuggets_judge_and_takes_no_runs(toy, rag):
    with pytest.raises(JobError, match="needs the judge whose nuggets to label"):
        start(rag["collection"], "importance", {})
    with pytest.raises(JobError, match="no judge named 'nobody'"):
        start(rag["collection"], "importance", {"nuggets_judge": "nobody"})
    with pytest.raises(JobError, match="name no runs"):
        start(rag["collection"], "importance", {"nuggets_judge": "gold", "runs": ["run-a"]})
    with pytest.raises(JobError, match="at least 1"):
        start(rag["collection"], "assignment", {"nuggets_judge": "gold", "window": 0})
    assert not JudgeJob.objects.exists()


# --- Assignment ------------------------------------------------------------------------------------------


def test_it_labels_each_answer_against_its_turns_nuggets_in_windows(toy, rag):
    options = {"nuggets_judge": "gold", "window": 2, "runs": ["run-a"]}
    job = judge_job_run(job=start(rag["collection"], "assignment", options))

    # run-a's answer to the Paris question, 3 nuggets in windows of 2; the Rome question has no nuggets.
    assert (job.status, job.units_total, job.units_done, job.calls_made) == ("done", 2, 2, 2)
    assert Judge.objects.get(name="machine").prompt_version == "assignment_v1"
    assert all(f"Answer:\n{ANSWER}\n" in r.prompt for r in toy.answered)
    labels = {
        a.nugget.text: (a.label, a.condition, a.response.run.name) for a in NuggetAssignment.objects.all()
    }
    assert labels == {
        "Paris is the capital of France": ("support", "machine", "run-a"),
        "Paris has about 2.1 million inhabitants": ("partial_support", "machine", "run-a"),
        "Eiffel Tower: 330 metres": ("not_support", "machine", "run-a"),
    }


def test_a_rerun_of_assignment_makes_no_calls_and_counts_cache_hits(toy, rag):
    first = judge_job_run(job=start(rag["collection"], "assignment", {"nuggets_judge": "gold"}))
    asked = len(toy.received)
    second = judge_job_run(job=start(rag["collection"], "assignment", {"nuggets_judge": "gold"}))

    assert (first.calls_made, first.cache_hits) == (2, 0)
    assert (second.status, second.calls_made, second.cache_hits, second.cost_usd) == (
        "done",
        0,
        2,
        Decimal(0),
    )
    assert len(toy.received) == asked
    assert NuggetAssignment.objects.count() == 6


def test_an_empty_answer_is_labelled_not_support_without_a_call_as_nuggetizer_does(toy, rag):
    paris, _rome = rag["turns"]
    empty = ResponseFactory(
        run=RunFactory(collection=rag["collection"], name="run-empty"), turn=paris, text=" \n "
    )

    job = judge_job_run(job=start(rag["collection"], "assignment", {"nuggets_judge": "gold"}))

    assert job.status == "done"
    # One call per answer with text (run-a and run-b on paris); none for the empty answer.
    assert job.calls_made == 2
    assert dict(NuggetAssignment.objects.filter(response=empty).values_list("nugget__text", "label")) == {
        text: "not_support" for text in nugget_texts("gold", paris)
    }


def test_costs_of_each_call_are_recorded_on_the_job_and_its_calls(toy, rag, settings):
    settings.LLM_PRICES = {"gpt-4o-mini": (0.15, 0.60)}
    job = judge_job_run(job=start(rag["collection"], "assignment", {"nuggets_judge": "gold"}))

    input_tokens = sum(count_tokens(r.prompt) for r in toy.answered)
    output_tokens = sum(count_tokens(toy_responder(r.prompt)) for r in toy.answered)
    assert (job.input_tokens, job.output_tokens) == (input_tokens, output_tokens)
    expected = (input_tokens * 0.15 + output_tokens * 0.60) / 1_000_000
    assert float(job.cost_usd) == pytest.approx(expected, abs=4e-6)
    assert float(sum(c.cost_usd for c in LlmCall.objects.filter(job=job))) == pytest.approx(
        expected, abs=4e-6
    )


# --- Unreadable answers, resume, command ------------------------------------------------------------------


def test_an_unreadable_answer_is_counted_and_asked_again(toy, rag):
    toy.script(Answer("They all look fine to me."))
    job = judge_job_run(job=start(rag["collection"], "importance", {"nuggets_judge": "gold"}, concurrency=1))

    assert (job.status, job.units_done, job.units_failed, job.calls_made) == ("done", 1, 0, 2)
    (failure,) = LlmFailure.objects.filter(job=job)
    assert failure.reason.startswith("unparsable answer, asked again: no vital/okay label for nugget 1")
    assert failure.answer == "They all look fine to me."
    assert "Your previous answer could not be read" in toy.answered[1].prompt
    assert NuggetImportanceJudgment.objects.count() == 3


def test_a_unit_whose_every_answer_is_unreadable_fails_without_labels_or_a_crash(toy, rag):
    toy.script(*[Answer("1: vital")] * 3)
    job = judge_job_run(job=start(rag["collection"], "importance", {"nuggets_judge": "gold"}, concurrency=1))

    assert (job.status, job.units_done, job.units_failed, job.calls_made) == ("failed", 1, 1, 3)
    assert job.error.startswith("1 unit failed (most often: unparsable answer")
    assert LlmFailure.objects.filter(job=job).count() == 3
    assert not NuggetImportanceJudgment.objects.exists()


def test_a_killed_creation_job_resumes_without_repeating_paid_calls(toy, rag):
    collection = rag["collection"]
    job = start(collection, "nuggets-create", {"window": 1}, concurrency=1)

    def kill_after_one(running: JudgeJob) -> None:
        if running.units_done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        judge_job_run(job=job, progress=kill_after_one)
    job.refresh_from_db()
    assert (job.status, job.units_done, job.units_total) == ("failed", 1, 2)
    paid = set(LlmCall.objects.values_list("prompt", flat=True))
    asked_before = len(toy.received)

    resumed = start(collection, "nuggets-create", {"window": 1}, concurrency=1)
    assert resumed.pk == job.pk
    judge_job_run(job=resumed)
    resumed.refresh_from_db()
    assert (resumed.status, resumed.units_done, resumed.units_failed) == ("done", 2, 0)
    assert not paid & {r.prompt for r in toy.received[asked_before:]}
    # window 1: three relevant passages of the Paris question, one of the Rome question.
    assert LlmCall.objects.count() == 4
    assert len(nugget_texts("machine", rag["turns"][0])) == 3


def test_the_judge_command_runs_the_three_jobs_in_order(toy, rag, settings):
    name = rag["collection"].name
    out = StringIO()
    call_command(
        "judge",
        "nuggets-create",
        "--collection",
        name,
        "--judge",
        "auto",
        "--qrels-judge",
        "qrels",
        stdout=out,
    )
    assert "2 units (0 failed), 2 calls made" in out.getvalue()
    for task in ("importance", "assignment"):
        out = StringIO()
        call_command(
            "judge",
            task,
            "--collection",
            name,
            "--judge",
            f"auto-{task}",
            "--nuggets-judge",
            "auto",
            "--window",
            "2",
            stdout=out,
        )
        assert "(0 failed)" in out.getvalue()
    job = JudgeJob.objects.get(task="nuggets-create")
    assert job.options == {"min_grade": 1, "relevance_judge": "qrels", "max_nuggets": 30, "window": 10}
    assert NuggetImportanceJudgment.objects.filter(judge__name="auto-importance").count() == 4
    # 2 runs x (3 Paris nuggets + 1 Rome nugget).
    assert NuggetAssignment.objects.filter(judge__name="auto-assignment").count() == 8
    with pytest.raises(CommandError, match="no judge named 'nobody'"):
        call_command("judge", "assignment", "--collection", name, "--judge", "x", "--nuggets-judge", "nobody")


def test_a_dry_run_counts_every_window_of_creation_and_calls_nothing(toy, rag):
    out = StringIO()
    name = rag["collection"].name
    call_command(
        "judge",
        "nuggets-create",
        "--collection",
        name,
        "--judge",
        "a",
        "--window",
        "1",
        "--dry-run",
        stdout=out,
    )

    # window 1: three relevant passages of the Paris question, one of the Rome question.
    assert (
        "dry run, nuggets-create with gpt-4o-mini: 2 units: 4 calls to make, 0 answered from the cache"
        in out.getvalue()
    )
    assert toy.received == []
    judge_job_run(job=start(rag["collection"], "nuggets-create", {"window": 1}))
    out = StringIO()
    call_command(
        "judge",
        "nuggets-create",
        "--collection",
        name,
        "--judge",
        "a",
        "--window",
        "1",
        "--dry-run",
        stdout=out,
    )
    assert "2 units: 0 calls to make, 4 answered from the cache" in out.getvalue()


def test_a_killed_assignment_job_keeps_the_labels_of_finished_windows_and_resumes(toy, rag):
    options = {"nuggets_judge": "gold", "window": 1, "runs": ["run-a"]}
    job = start(rag["collection"], "assignment", options, concurrency=1)

    def kill_after_two(running: JudgeJob) -> None:
        if running.units_done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        judge_job_run(job=job, progress=kill_after_two)
    # Labels are written many windows at a time; those of the finished windows are written on the way out.
    assert NuggetAssignment.objects.count() == 2
    paid = set(LlmCall.objects.values_list("prompt", flat=True))
    asked_before = len(toy.received)

    resumed = judge_job_run(job=start(rag["collection"], "assignment", options, concurrency=1))
    assert (resumed.pk, resumed.status, resumed.units_done, resumed.cache_hits) == (job.pk, "done", 3, 2)
    assert not paid & {r.prompt for r in toy.received[asked_before:]}
    assert NuggetAssignment.objects.count() == 3
