"""The TREC RAG nugget parsers read the forms models really answer in, and refuse to guess."""

from __future__ import annotations

import pytest

from judging.machine.llm_judges import UnparsableAnswer
from judging.machine.rag_nuggets import (
    assignment_parse,
    assignment_render,
    importance_parse,
    nugget_list_parse,
    nuggets_create_render,
    retry_render,
)


@pytest.mark.parametrize(
    "answer",
    [
        "1. Paris is the capital\n2. It has 2.1 million people",
        "Here is the updated list:\n1) Paris is the capital\n2) It has 2.1 million people\n",
        "- **Paris is the capital**\n- It has 2.1 million people",
        '```json\n["Paris is the capital", "It has 2.1 million people"]\n```',
        "1. Paris is the capital\n2. It has 2.1 million people\n3. paris is  the capital",
    ],
)
def test_it_reads_a_nugget_list_in_the_forms_models_write_it(answer):
    assert nugget_list_parse(answer, max_nuggets=30) == ["Paris is the capital", "It has 2.1 million people"]


def test_it_cuts_the_list_at_the_maximum_and_reads_no_nuggets_as_empty():
    assert nugget_list_parse("1. a\n2. b\n3. c", max_nuggets=2) == ["a", "b"]
    assert nugget_list_parse("**No nuggets.**", max_nuggets=2) == []


def test_it_refuses_an_answer_without_a_list():
    with pytest.raises(UnparsableAnswer, match="no numbered list"):
        nugget_list_parse("I could not find anything useful here.", max_nuggets=30)


@pytest.mark.parametrize(
    "answer",
    [
        "1: vital\n2: okay\n3: vital",
        "Labels:\n1. Vital\n2. OK (nice to have)\n3. **vital** - central",
        "[1] vital\n[2] okay\n[3] vital",
        "Nugget 1: vital\nNugget 2: okay\nNugget 3: vital",
        "vital\nokay\nvital",
        '["vital", "okay", "vital"]',
    ],
)
def test_it_reads_one_importance_label_per_nugget(answer):
    assert importance_parse(answer, count=3) == ["vital", "okay", "vital"]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("1: vital\n2: okay", "no vital/okay label for nugget 3"),
        ("1: vital\n2: okay\n3: vital\n3: okay", "several vital/okay labels for nugget 3"),
        ("1: vital\n2: important\n3: okay", "no vital/okay label for nugget 2"),
        ('["vital", "okay"]', "a list of 2 values, not 3"),
        ("All of them matter.", "no vital/okay label for nugget 1, 2, 3"),
    ],
)
def test_it_refuses_importance_answers_that_miss_or_contradict_a_label(answer, reason):
    with pytest.raises(UnparsableAnswer, match=reason):
        importance_parse(answer, count=3)


def test_it_reads_assignment_labels_in_their_spellings():
    answer = "1: support\n2: Partial Support\n3: not_support\n4: Partially supported.\n5: No support"
    assert assignment_parse(answer, count=5) == [
        "support",
        "partial_support",
        "not_support",
        "partial_support",
        "not_support",
    ]


def test_prompts_list_passages_and_nuggets_one_per_line_and_retries_differ():
    prompt = nuggets_create_render(
        query="Why?", nuggets=["first\nnugget"], passages=["a\n\npassage", "b"], max_nuggets=7
    )
    assert "Nugget list so far:\n1. first nugget\n\nNew passages:\n[1] a passage\n[2] b\n" in prompt
    assert "keep at most 7 nuggets" in prompt
    prompt = assignment_render(query="Why?", answer=" Because. ", nuggets=["x", "y"])
    assert "Answer:\nBecause.\n\nNuggets:\n1. x\n2. y\n" in prompt
    assert retry_render(prompt, "why", 2) != retry_render(prompt, "why", 3)
