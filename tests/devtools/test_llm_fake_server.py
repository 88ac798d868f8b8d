"""The fake OpenAI-compatible server people try machine judges with: its answers parse for every judge task."""

from __future__ import annotations

import io
import threading
import time

import openai
import pytest
from django.core.management import CommandError, call_command

from devtools.openai_server import FakeOpenAI, toy_responder
from judging.machine.llm_judges import (
    followup_lines_parse,
    ntr_render,
    nugget_lines_parse,
    nuggets_followup_render,
    nuggets_render,
    relevance_parse,
    relevance_render,
    support_parse,
    support_render,
    yes_no_parse,
)
from judging.machine.rag_nuggets import (
    assignment_parse,
    assignment_render,
    importance_parse,
    importance_render,
    nugget_list_parse,
    nuggets_create_render,
)
from tests.test_readme import free_port


def test_toy_answers_parse_for_every_judge_prompt():
    for n in range(5):
        passage = f"Passage {n} on walking routes in Scotland."
        grade = relevance_parse(
            toy_responder(
                relevance_render(
                    context=[],
                    utterance="Where?",
                    resolved_utterance=f"Where to walk {n}?",
                    ptkb=[],
                    passage=passage,
                )
            )
        )
        assert grade in range(5)
        assert yes_no_parse(toy_responder(ntr_render(query="q", nugget=f"nugget {n}", response=passage))) in {
            True,
            False,
        }
        assert support_parse(toy_responder(support_render(sentence=f"Sentence {n}.", passage=passage))) in {
            "FS",
            "PS",
            "NS",
        }
    assert nugget_lines_parse(toy_responder(nuggets_render(query="q", text="Some text."))) == []
    followup = nuggets_followup_render(query="q", text="Some text.", missing=["a nugget"])
    assert followup_lines_parse(toy_responder(followup)) == [None]


def test_toy_answers_to_the_trec_rag_nugget_prompts_parse_and_follow_the_prompt():
    create = nuggets_create_render(
        query="q", nuggets=["Kept nugget"], passages=["First fact here. More.", "Second fact."], max_nuggets=2
    )
    assert nugget_list_parse(toy_responder(create), max_nuggets=30) == ["Kept nugget", "First fact here"]
    nuggets = ["The river flows north", "The bridge is old", "Cheese"]
    assert set(importance_parse(toy_responder(importance_render(query="q", nuggets=nuggets)), count=3)) <= {
        "vital",
        "okay",
    }
    answer = "The river flows north past the station."
    labels = assignment_parse(
        toy_responder(assignment_render(query="q", answer=answer, nuggets=nuggets)), count=3
    )
    assert labels == ["support", "not_support", "not_support"]


def test_toy_labels_depend_on_the_model_deterministically_agreeing_on_most():
    nuggets = [
        f"The {w} bridge crosses the river near the {w} station" for w in ("old", "new", "red", "long")
    ]
    answers = [
        f"Answer {i}: the old bridge crosses the river near the station, {i} minutes away." for i in range(60)
    ]
    prompts = [assignment_render(query="q", answer=a, nuggets=nuggets) for a in answers]

    def labels(model: str) -> list[str]:
        return [
            label for p in prompts for label in assignment_parse(toy_responder(p, model), count=len(nuggets))
        ]

    big, mini = labels("gpt-4o"), labels("gpt-4o-mini")

    assert labels("gpt-4o") == big  # the same model labels alike every time
    disagree = sum(a != b for a, b in zip(big, mini, strict=True)) / len(big)
    assert 0.05 < disagree < 0.35, disagree  # two models disagree on some items, agree on most
    assert set(big) | set(mini) <= {"support", "partial_support", "not_support"}
    importance = importance_render(query="q", nuggets=[f"Fact number {i} about bridges" for i in range(200)])
    vital = [importance_parse(toy_responder(importance, m), count=200) for m in ("gpt-4o", "gpt-4o-mini")]
    assert 0 < sum(a != b for a, b in zip(*vital, strict=True)) < 70


def test_the_fake_server_hands_a_model_responder_the_requests_model():
    with FakeOpenAI(model_responder=lambda prompt, model: f"{model} read {prompt}") as fake:
        client = openai.OpenAI(base_url=fake.url, api_key="fake", max_retries=0)
        answer = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Yes or no?"}]
        )

    assert answer.choices[0].message.content == "gpt-4o-mini read Yes or no?"


def test_the_fake_server_waits_its_latency_before_each_answer():
    port = free_port()
    server = threading.Thread(
        target=call_command,
        args=("llm_fake_server", "--port", str(port), "--seconds", "3", "--latency", "0.5"),
        kwargs={"stdout": io.StringIO()},
    )
    server.start()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="fake", max_retries=5)
        messages = [{"role": "user", "content": "Yes or no?"}]
        client.chat.completions.create(model="gpt-4o", messages=messages)  # once it listens
        started = time.monotonic()
        client.chat.completions.create(model="gpt-4o", messages=messages)
        took = time.monotonic() - started
    finally:
        server.join()

    assert took >= 0.5


def test_llm_fake_server_answers_chat_completions_until_its_time_is_up():
    port = free_port()
    out = io.StringIO()
    server = threading.Thread(
        target=call_command,
        args=("llm_fake_server", "--port", str(port), "--seconds", "3"),
        kwargs={"stdout": out},
    )
    server.start()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="fake", max_retries=5)
        prompt = support_render(
            sentence="The West Highland Way is 96 miles long.", passage="It runs 96 miles."
        )
        answer = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": prompt}]
        )
    finally:
        server.join()

    assert support_parse(answer.choices[0].message.content or "") in {"FS", "PS", "NS"}
    assert answer.usage is not None and answer.usage.prompt_tokens > 0
    assert f"listening on http://127.0.0.1:{port}/v1" in out.getvalue()


def test_llm_fake_server_refuses_an_address_off_loopback():
    with pytest.raises(CommandError, match="loopback only, not '0.0.0.0'"):
        call_command("llm_fake_server", "--host", "0.0.0.0", "--seconds", "0.1")
