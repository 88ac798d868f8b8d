"""LLM judge jobs against the loopback server: labels in the human tables, cache, cost, resume, command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from annotation.models import Judge, NtrJudgment, Nugget, RelevanceJudgment, Response, SupportJudgment
from judging.machine.jobs import JobError, judge_job_run, judge_job_start, llm_tasks
from judging.machine.jobs.state import jobs_read
from judging.models import JudgeJob, LlmCall, LlmFailure, UnmatchedSpan
from tests.background import tasks_run_ready
from tests.conftest import REPO
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    PassageFactory,
    PtkbStatementFactory,
    RankingFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)
from tests.judging.fake_openai import ServerError, count_tokens

pytestmark = pytest.mark.django_db


BIKE = "A 24-inch wheel bike fits children from 1.35 m to 1.45 m tall.  It costs about 300 euros."
PARIS = "Paris is the capital of France and has about 2.1 million inhabitants."


@pytest.fixture
def conversation():
    """One conversation of two turns with a PTKB, three passages and a run ranking them for both turns."""
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection, number="9")
    PtkbStatementFactory(topic=topic, statement_id="1", text="I have a daughter who is nine.")
    PtkbStatementFactory(topic=topic, statement_id="2", text="I live in Utrecht.")
    first = TurnFactory(
        topic=topic,
        position=1,
        utterance="I want to buy a bike.",
        resolved_utterance="I want to buy a bike.",
        response="What kind of bike are you looking for?",
    )
    second = TurnFactory(
        topic=topic,
        position=2,
        utterance="Which size for her?",
        resolved_utterance="Which bike size is right for my nine-year-old daughter?",
    )
    passages = [
        PassageFactory(collection=collection, passage_id="bike:1", text=BIKE),
        PassageFactory(collection=collection, passage_id="paris:1", text=PARIS),
    ]
    run = RunFactory(collection=collection, name="bm25")
    for turn in (first, second):
        RankingFactory(run=run, turn=turn, passage_ids=["bike:1", "paris:1", "no-text:9"])
    return {"collection": collection, "turns": (first, second), "passages": passages, "run": run}


def grade_by_topic(prompt: str) -> str:
    return "Grade: 3" if "24-inch wheel" in prompt else "Grade: 0"


def start(collection, task, options, judge="gpt-judge", model="gpt-4o-mini", concurrency=4):
    return judge_job_start(
        collection=collection,
        task=task,
        judge_name=judge,
        model=model,
        options=options,
        concurrency=concurrency,
    )


# --- Each judge: its prompt, its parsing, its labels -----------------------------------------------


def test_relevance_job_grades_ranked_passages_under_an_llm_judge(fake_openai, conversation):
    fake_openai.responder = grade_by_topic
    job = judge_job_run(job=start(conversation["collection"], "relevance", {"depth": 30}))
    assert (job.status, job.units_total, job.units_done, job.units_failed) == ("done", 4, 4, 0)
    judge = Judge.objects.get(name="gpt-judge")
    assert (judge.kind, judge.model, judge.prompt_version) == ("llm", "gpt-4o-mini", "relevance_v1")
    grades = {(j.turn.turn_id, j.passage_id): j.grade for j in RelevanceJudgment.objects.filter(judge=judge)}
    assert grades == {
        ("9_1", "bike:1"): 3,
        ("9_1", "paris:1"): 0,
        ("9_2", "bike:1"): 3,
        ("9_2", "paris:1"): 0,
    }


def test_relevance_prompt_carries_the_conversation_and_the_ptkb(fake_openai, conversation):
    fake_openai.responder = grade_by_topic
    judge_job_run(job=start(conversation["collection"], "relevance", {"turns": ["9_2"], "depth": 1}))
    (request,) = fake_openai.received
    prompt = request.prompt
    assert "Current user utterance: Which size for her?" in prompt
    assert "Which bike size is right for my nine-year-old daughter?" in prompt
    assert "User: I want to buy a bike.\nAssistant: What kind of bike are you looking for?" in prompt
    assert "1. I have a daughter who is nine.\n2. I live in Utrecht." in prompt
    assert BIKE in prompt
    assert (request.body["temperature"], request.body["model"]) == (0.0, "gpt-4o-mini")


def test_an_unparsable_relevance_answer_is_a_failure_never_a_grade(fake_openai, conversation):
    fake_openai.responder = lambda prompt: "This passage seems quite relevant to me."
    job = judge_job_run(job=start(conversation["collection"], "relevance", {"turns": ["9_1"], "depth": 1}))
    # Its only unit failed: the job failed, and says why first.
    assert (job.status, job.units_done, job.units_failed) == ("failed", 1, 1)
    assert job.error.startswith("1 unit failed (most often: unparsable answer")
    assert not RelevanceJudgment.objects.exists()
    failure = LlmFailure.objects.get(job=job)
    assert failure.unit == "9_1 bike:1"
    assert failure.answer == "This passage seems quite relevant to me."
    assert "unparsable" in failure.reason


def test_nugget_job_stores_located_spans_and_asks_once_again_for_the_missing(fake_openai, conversation):
    turn = conversation["turns"][1]
    JudgeFactory(name="assessors")
    RelevanceJudgment.objects.create(
        judge=Judge.objects.get(name="assessors"), turn=turn, passage_id="bike:1", grade=3
    )

    def answer(prompt: str) -> str:
        if "do not appear in it word for word" in prompt:
            # The follow-up: one recovered in the text's own words, one still invented.
            return "It costs about 300 euros.\nRecommended for ages 8 to 11"
        return "1. 24-INCH wheel bike fits children from 1.35 m\n2. costs around 300 euros\n- Recommended for ages 8-11"

    fake_openai.responder = answer
    job = judge_job_run(
        job=start(conversation["collection"], "nuggets", {"source": "passages", "min_grade": 2})
    )
    assert (job.units_done, job.calls_made) == (1, 2)
    followup = fake_openai.received[1].prompt
    assert "costs around 300 euros\nRecommended for ages 8-11" in followup
    nuggets = list(Nugget.objects.filter(judge__name="gpt-judge").order_by("start"))
    assert [(n.text, n.passage_id, n.turn_id) for n in nuggets] == [
        ("24-inch wheel bike fits children from 1.35 m", "bike:1", turn.id),
        ("It costs about 300 euros.", "bike:1", turn.id),
    ]
    assert all(BIKE[n.start : n.end] == n.text for n in nuggets)
    assert list(UnmatchedSpan.objects.values_list("text", "passage_id")) == [
        ("Recommended for ages 8-11", "bike:1")
    ]


def test_nugget_job_writes_nothing_for_no_nugget(fake_openai, conversation):
    judge = JudgeFactory(name="assessors")
    RelevanceJudgment.objects.create(
        judge=judge, turn=conversation["turns"][0], passage_id="paris:1", grade=2
    )
    fake_openai.responder = lambda prompt: "No nugget"
    job = judge_job_run(
        job=start(conversation["collection"], "nuggets", {"source": "passages", "min_grade": 2})
    )
    assert (job.units_done, job.units_failed, job.calls_made) == (1, 0, 1)
    assert not Nugget.objects.filter(judge__name="gpt-judge").exists()


def test_nugget_job_extracts_from_responses_and_links_them(fake_openai, conversation):
    turn = conversation["turns"][1]
    response = ResponseFactory(
        run=conversation["run"], turn=turn, text="Get a 24-inch bike. It costs 300 euros."
    )
    fake_openai.responder = lambda prompt: "Get a 24-inch bike."
    judge_job_run(job=start(conversation["collection"], "nuggets", {"source": "responses", "turns": ["9_2"]}))
    nugget = Nugget.objects.get(judge__name="gpt-judge")
    assert (nugget.response_id, nugget.text, nugget.start, nugget.end, nugget.passage_id) == (
        response.id,
        "Get a 24-inch bike.",
        0,
        19,
        "",
    )


def test_ntr_job_matches_each_response_against_each_gold_nugget(fake_openai, conversation):
    turn = conversation["turns"][1]
    gold = JudgeFactory(name="gold")
    size = NuggetFactory(judge=gold, turn=turn, key="[1]", text="A 24-inch wheel fits 1.35 m to 1.45 m")
    price = NuggetFactory(judge=gold, turn=turn, key="[2]", text="It costs about 300 euros")
    response = ResponseFactory(run=conversation["run"], turn=turn, text="She needs a 24-inch bike.")
    fake_openai.responder = lambda prompt: "Yes." if "Nugget: A 24-inch" in prompt else "No"
    job = judge_job_run(job=start(conversation["collection"], "ntr", {"gold_judge": "gold"}))
    assert (job.units_done, job.units_failed) == (2, 0)
    assert "Response:\nShe needs a 24-inch bike." in fake_openai.received[0].prompt
    matched = {
        j.nugget_id: j.matched for j in NtrJudgment.objects.filter(judge__name="gpt-judge", response=response)
    }
    assert matched == {size.id: True, price.id: False}


def test_ntr_job_needs_a_gold_judge(fake_openai, conversation):
    with pytest.raises(JobError, match="gold"):
        start(conversation["collection"], "ntr", {"gold_judge": ""})


def test_support_job_labels_sentences_against_their_first_cited_passage(fake_openai, conversation):
    response = ResponseFactory(run=conversation["run"], turn=conversation["turns"][0], text="...")
    cited = ResponseSentenceFactory(
        response=response, index=0, text="Paris has 2.1 million people.", citations=["paris:1", "bike:1"]
    )
    ResponseSentenceFactory(response=response, index=1, text="Nothing cited here.", citations=[])
    fake_openai.responder = lambda prompt: (
        "Full Support" if "Paris, the capital" in prompt or PARIS in prompt else "No Support"
    )
    job = judge_job_run(job=start(conversation["collection"], "support", {}))
    assert (job.units_total, job.units_done) == (1, 1)
    judgment = SupportJudgment.objects.get(judge__name="gpt-judge")
    assert (
        judgment.sentence_id,
        judgment.citation_index,
        judgment.passage_id,
        judgment.label,
        judgment.condition,
    ) == (
        cited.id,
        0,
        "paris:1",
        "FS",
        "machine",
    )


@pytest.mark.parametrize("walk_block", [1, 5000])
def test_support_units_are_each_cited_sentence_by_turn_run_rank_and_index(
    conversation, monkeypatch, walk_block
):
    """The units, their names and order, and what is skipped, whatever the size of the blocks walked."""
    monkeypatch.setattr(llm_tasks, "WALK_BLOCK", walk_block)
    first, second = conversation["turns"]
    late = RunFactory(collection=conversation["collection"], name="alpha")  # made last, named first
    # Made out of order, so that only the plan's ordering can put them in order.
    for run, turn, rank, index, citations in [
        (conversation["run"], second, 1, 1, ["bike:1"]),
        (conversation["run"], first, 2, 0, ["paris:1", "bike:1"]),
        (late, second, 1, 0, ["no-text:9", "bike:1"]),  # its first cited passage has no text
        (conversation["run"], first, 1, 2, ["bike:1"]),
        (conversation["run"], first, 1, 0, []),  # cites nothing: no unit, not skipped
        (late, first, 1, 3, ["paris:1"]),
        (conversation["run"], first, 1, 1, ["paris:1"]),
        (late, second, 1, 1, ["paris:1"]),
    ]:
        response = Response.objects.get_or_create(run=run, turn=turn, rank=rank, defaults={"text": "..."})[0]
        ResponseSentenceFactory(response=response, index=index, citations=citations)
    ResponseSentenceFactory(response__run=RunFactory(), citations=["bike:1"])  # another collection's run

    plan = llm_tasks.TASKS["support"].plan(conversation["collection"], {})

    names = [
        "alpha 9_1 s3 paris:1",
        "bm25 9_1 s1 paris:1",
        "bm25 9_1 s2 bike:1",
        "bm25 9_1 s0 paris:1",
        "alpha 9_2 s1 paris:1",
        "bm25 9_2 s1 bike:1",
    ]
    assert [unit.name for unit in plan.units] == names
    assert [unit.name for unit in plan.units] == names  # walked again, the same
    assert (len(plan.units), plan.skipped, plan.skipped_reason) == (6, 1, "cited passages without text")
    only = llm_tasks.TASKS["support"].plan(conversation["collection"], {"runs": ["alpha"], "turns": ["9_2"]})
    assert [unit.name for unit in only.units] == ["alpha 9_2 s1 paris:1"]
    assert (len(only.units), only.skipped) == (1, 1)


# --- Cache, cost, failures, resume ------------------------------------------------------------------


def test_units_asking_the_same_prompt_at_once_share_one_paid_call(fake_openai, conversation):
    # The same sentence citing the same passage in two runs' answers: one prompt, two units.
    other = RunFactory(collection=conversation["collection"], name="copy")
    for run in (conversation["run"], other):
        response = ResponseFactory(run=run, turn=conversation["turns"][0], text="...")
        ResponseSentenceFactory(
            response=response, index=0, text="Paris has 2.1 million people.", citations=["paris:1"]
        )
    fake_openai.responder = lambda prompt: "Full Support"

    job = judge_job_run(job=start(conversation["collection"], "support", {}, concurrency=4))

    assert (job.units_total, job.units_done, job.units_failed) == (2, 2, 0)
    assert (job.calls_made, job.cache_hits) == (1, 1)
    assert len(fake_openai.received) == 1
    (read,) = jobs_read([JudgeJob.objects.get(pk=job.pk)])
    assert read.job.calls_made == LlmCall.objects.count() == 1
    labels = SupportJudgment.objects.filter(judge__name="gpt-judge").values_list(
        "sentence__response__run__name", "label"
    )
    assert sorted(labels) == [("bm25", "FS"), ("copy", "FS")]


def test_a_rerun_makes_no_calls_and_counts_cache_hits(fake_openai, conversation):
    fake_openai.responder = grade_by_topic
    first = judge_job_run(job=start(conversation["collection"], "relevance", {}))
    assert (first.calls_made, first.cache_hits) == (4, 0)
    second = judge_job_run(job=start(conversation["collection"], "relevance", {}))
    assert second.pk != first.pk
    assert (second.status, second.calls_made, second.cache_hits, second.cost_usd) == (
        "done",
        0,
        4,
        Decimal(0),
    )
    assert len(fake_openai.received) == 4
    assert LlmCall.objects.count() == 4


def test_the_cache_key_holds_the_model(fake_openai, conversation):
    fake_openai.responder = grade_by_topic
    judge_job_run(job=start(conversation["collection"], "relevance", {}))
    other = judge_job_run(
        job=start(conversation["collection"], "relevance", {}, judge="other", model="gpt-4o")
    )
    assert (other.calls_made, other.cache_hits) == (4, 0)


def test_job_cost_comes_from_the_reported_usage_and_the_price_table(fake_openai, conversation, settings):
    settings.LLM_PRICES = {"gpt-4o-mini": (0.15, 0.60)}
    fake_openai.responder = grade_by_topic
    job = judge_job_run(job=start(conversation["collection"], "relevance", {}))
    answered = fake_openai.answered
    input_tokens = sum(count_tokens(r.prompt) for r in answered)
    output_tokens = sum(count_tokens(grade_by_topic(r.prompt)) for r in answered)
    assert (job.input_tokens, job.output_tokens) == (input_tokens, output_tokens)
    expected = (input_tokens * 0.15 + output_tokens * 0.60) / 1_000_000
    assert float(job.cost_usd) == pytest.approx(expected, abs=4e-6)
    assert float(sum(c.cost_usd for c in LlmCall.objects.all())) == pytest.approx(expected, abs=4e-6)


def test_a_unit_whose_calls_keep_failing_is_recorded_and_retried_on_resume(
    fake_openai, conversation, settings
):
    settings.LLM_MAX_RETRIES = 1
    fake_openai.responder = grade_by_topic
    fake_openai.script(ServerError(500), ServerError(500))
    job = judge_job_run(job=start(conversation["collection"], "relevance", {}, concurrency=1))
    assert (job.status, job.units_done, job.units_failed, job.calls_made) == ("done", 4, 1, 3)
    assert job.error.startswith("1 of 4 units failed (most often: LLM call failed after 2 attempts")
    assert "500" in LlmFailure.objects.get(job=job).reason
    assert RelevanceJudgment.objects.count() == 3
    again = judge_job_run(job=start(conversation["collection"], "relevance", {}, concurrency=1))
    assert (again.calls_made, again.cache_hits, again.units_failed) == (1, 3, 0)
    assert RelevanceJudgment.objects.count() == 4


def test_a_killed_job_resumes_without_repeating_the_calls_it_paid_for(fake_openai, conversation):
    fake_openai.responder = grade_by_topic
    collection = conversation["collection"]
    TurnFactory(topic=conversation["turns"][0].topic, position=3, utterance="And a helmet?")
    for turn in collection.turns.all():
        RankingFactory(run=RunFactory(collection=collection), turn=turn, passage_ids=["bike:1", "paris:1"])
    job = start(collection, "relevance", {}, concurrency=2)

    def kill_after_three(running: JudgeJob) -> None:
        if running.units_done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        judge_job_run(job=job, progress=kill_after_three)
    job.refresh_from_db()
    assert (job.status, job.units_done, job.units_total) == ("failed", 3, 6)
    paid = set(LlmCall.objects.values_list("prompt", flat=True))
    assert len(paid) >= 3
    asked_before = len(fake_openai.received)

    resumed = start(collection, "relevance", {}, concurrency=2)
    assert resumed.pk == job.pk
    judge_job_run(job=resumed)
    resumed.refresh_from_db()
    assert (resumed.status, resumed.units_done, resumed.units_failed) == ("done", 6, 0)
    asked_after = [r.prompt for r in fake_openai.received[asked_before:]]
    assert not paid & set(asked_after)
    assert LlmCall.objects.count() == 6
    assert RelevanceJudgment.objects.filter(judge=resumed.judge).count() == 6


def test_a_judge_name_keeps_one_model_and_prompt(fake_openai, conversation):
    start(conversation["collection"], "relevance", {})
    with pytest.raises(JobError, match="name a new judge"):
        start(conversation["collection"], "relevance", {}, model="gpt-4o")


# --- The command -----------------------------------------------------------------------------------


def test_judge_command_runs_and_reports_calls_cache_and_cost(fake_openai, conversation, settings):
    settings.LLM_PRICES = {"gpt-4o-mini": (0.15, 0.60)}
    fake_openai.responder = grade_by_topic
    name = conversation["collection"].name
    out = StringIO()
    call_command("judge", "relevance", "--collection", name, "--judge", "cmd-judge", stdout=out)
    assert "4 units (0 failed), 4 calls made, 0 from the cache" in out.getvalue()
    assert RelevanceJudgment.objects.filter(judge__name="cmd-judge").count() == 4
    out = StringIO()
    call_command("judge", "relevance", "--collection", name, "--judge", "cmd-judge", stdout=out)
    assert "0 calls made, 4 from the cache" in out.getvalue()
    assert "cost $0.0000" in out.getvalue()


def test_judge_dry_run_prints_calls_and_estimated_cost_and_calls_nothing(fake_openai, conversation, settings):
    settings.LLM_PRICES = {"gpt-4o": (2.5, 10.0)}
    out = StringIO()
    call_command(
        "judge",
        "relevance",
        "--collection",
        conversation["collection"].name,
        "--judge",
        "dry",
        "--model",
        "gpt-4o",
        "--dry-run",
        stdout=out,
    )
    text = out.getvalue()
    assert "4 units: 4 calls to make, 0 answered from the cache" in text
    assert "estimated cost $0.0" in text
    assert "2 units skipped" in text  # the ranked passage without text, in two turns
    assert fake_openai.received == []
    assert not Judge.objects.filter(name="dry").exists()
    assert not JudgeJob.objects.exists()


def test_judge_command_rejects_unknown_collection_and_turns(fake_openai, conversation):
    with pytest.raises(CommandError, match="no collection"):
        call_command("judge", "relevance", "--collection", "nope", "--judge", "j")
    with pytest.raises(CommandError, match="no turn 77_1"):
        call_command(
            "judge",
            "relevance",
            "--collection",
            conversation["collection"].name,
            "--judge",
            "j",
            "--turns",
            "77_1",
        )
    assert not JudgeJob.objects.exists()


def test_judge_queue_hands_the_job_to_the_task_workers(fake_openai, conversation):
    fake_openai.responder = grade_by_topic
    out = StringIO()
    call_command(
        "judge",
        "relevance",
        "--collection",
        conversation["collection"].name,
        "--judge",
        "queued",
        "--queue",
        stdout=out,
    )
    job = JudgeJob.objects.get(judge__name="queued")
    assert f"job {job.pk} queued; the Jobs page shows its progress" in out.getvalue()
    assert (job.status, fake_openai.answered) == ("pending", [])
    assert tasks_run_ready() == 1
    job.refresh_from_db()
    assert (job.status, job.units_done, job.calls_made) == ("done", 4, 4)


@pytest.mark.django_db(transaction=True)
def test_a_job_killed_with_sigkill_resumes_without_repeating_paid_calls(fake_openai, conversation):
    """A real kill: the command runs in another process on the same (PostgreSQL) database and gets SIGKILL."""
    collection = conversation["collection"]
    ids = [f"extra:{i}" for i in range(8)]
    for pid in ids:
        PassageFactory(collection=collection, passage_id=pid, text=f"Passage {pid} about bikes.")
    RankingFactory(run=RunFactory(collection=collection), turn=conversation["turns"][0], passage_ids=ids)
    fake_openai.responder = grade_by_topic
    fake_openai.latency = 0.2
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "OPENAI_BASE_URL": fake_openai.url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "gpt-4o-mini",
        "LLM_CONCURRENCY": "1",
    }
    env.pop("TEST_DATABASE_NAME", None)
    command = [sys.executable, "manage.py", "judge", "relevance", "--collection", collection.name]
    process = subprocess.Popen([*command, "--judge", "killed"], cwd=REPO, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(fake_openai.answered) < 4 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=10)
    job = JudgeJob.objects.get(judge__name="killed")
    assert job.status == "running"  # it never got to say otherwise
    paid = set(LlmCall.objects.values_list("prompt", flat=True))
    assert 3 <= len(paid) < 12
    # Its totals are those of the calls it saved, however far behind its counters were when it died,
    # and once it has shown no sign of life for a while it reads as interrupted.
    (read,) = jobs_read([job])
    assert read.job.calls_made == LlmCall.objects.filter(job=job).count() == len(paid)
    assert read.job.cost_usd == sum(c.cost_usd for c in LlmCall.objects.filter(job=job))
    JudgeJob.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=10))
    (read,) = jobs_read([JudgeJob.objects.get(pk=job.pk)])
    assert read.state == "interrupted"
    assert read.status_text.startswith("interrupted: no progress saved since")
    asked_before = len(fake_openai.received)

    resumed = start(collection, "relevance", {"depth": 30}, judge="killed", concurrency=4)
    assert resumed.pk == job.pk
    judge_job_run(job=resumed)
    assert (resumed.status, resumed.units_done, resumed.units_total) == ("done", 12, 12)
    assert not paid & {r.prompt for r in fake_openai.received[asked_before:]}
    assert LlmCall.objects.count() == 12
    assert RelevanceJudgment.objects.filter(judge__name="killed").count() == 12


# --- Honest totals and status ------------------------------------------------------------------------


def test_a_job_whose_every_call_failed_fails_and_says_why_first(fake_openai, conversation, settings):
    settings.LLM_MAX_RETRIES = 0
    fake_openai.responder = grade_by_topic
    fake_openai.script(*[ServerError(503)] * 4)
    job = judge_job_run(job=start(conversation["collection"], "relevance", {}, concurrency=1))
    assert (job.status, job.units_done, job.units_failed, job.calls_made) == ("failed", 4, 4, 0)
    assert job.error.startswith("all 4 units failed (most often: LLM call failed after 1 attempt")
    assert "503" in job.error
    assert not RelevanceJudgment.objects.exists()


def test_the_judge_command_exits_nonzero_when_nothing_succeeded(fake_openai, conversation, settings):
    settings.LLM_MAX_RETRIES = 0
    fake_openai.script(*[ServerError(500)] * 4)
    out = StringIO()
    with pytest.raises(CommandError, match=r"failed: all 4 units failed \(most often: LLM call failed"):
        call_command(
            "judge",
            "relevance",
            "--collection",
            conversation["collection"].name,
            "--judge",
            "down",
            stdout=out,
        )
    # The report still comes first, with the outcome before the counts.
    assert "failed: all 4 units failed" in out.getvalue()
    assert "0 calls made" in out.getvalue()


def test_the_judge_command_reports_partial_failures_up_front_and_succeeds(
    fake_openai, conversation, settings
):
    settings.LLM_MAX_RETRIES = 0
    fake_openai.responder = grade_by_topic
    fake_openai.script(ServerError(500))
    out = StringIO()
    name = conversation["collection"].name
    call_command(
        "judge", "relevance", "--collection", name, "--judge", "half", "--concurrency", "1", stdout=out
    )
    assert "done with failures: 1 of 4 units failed (most often: LLM call failed" in out.getvalue()
    assert "3 calls made" in out.getvalue()


def test_a_slow_call_does_not_stop_the_job_from_showing_it_lives(fake_openai, conversation, monkeypatch):
    """The job row is saved while calls are in flight, so only a dead job stops moving `updated_at`."""
    from judging.machine.jobs import runner

    monkeypatch.setattr(runner, "PROGRESS_EVERY_S", 0.1)
    saves = []
    real_save = runner.judge_job_save_progress
    monkeypatch.setattr(
        runner,
        "judge_job_save_progress",
        lambda job, **kw: (saves.append(time.monotonic()), real_save(job, **kw)),
    )
    fake_openai.responder = grade_by_topic
    fake_openai.latency = 0.8
    job = judge_job_run(job=start(conversation["collection"], "relevance", {"turns": ["9_1"], "depth": 1}))
    assert job.status == "done"
    assert len(saves) >= 4  # about one per 0.1 s of the 0.8 s call, not only one at the end


def test_totals_are_read_from_the_call_rows(fake_openai, conversation):
    fake_openai.responder = grade_by_topic
    job = judge_job_run(job=start(conversation["collection"], "relevance", {}))
    # Counters behind the rows, as after a kill between two saves:
    JudgeJob.objects.filter(pk=job.pk).update(calls_made=1, input_tokens=0, output_tokens=0, cost_usd=0)
    (read,) = jobs_read([JudgeJob.objects.get(pk=job.pk)])
    rows = LlmCall.objects.filter(job=job)
    assert (read.job.calls_made, read.job.input_tokens) == (4, sum(r.input_tokens for r in rows))
    assert read.job.cost_usd == sum(r.cost_usd for r in rows)
