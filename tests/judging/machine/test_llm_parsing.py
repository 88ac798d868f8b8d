"""The LLM judges' prompts and strict parsers, without a server."""

from __future__ import annotations

import pytest

from judging.machine import llm_judges
from judging.machine.llm_judges import UnparsableAnswer


@pytest.mark.parametrize(
    ("answer", "grade"),
    [("Grade: 3", 3), ("3", 3), ("**Grade: 4**", 4), ("grade: 0.", 0), ("I looked closely.\nGrade: 2", 2)],
)
def test_relevance_parse_reads_one_grade(answer, grade):
    assert llm_judges.relevance_parse(answer) == grade


@pytest.mark.parametrize(
    "answer",
    [
        "Grade: 5",
        "Highly meets",
        "",
        "Grade: 3\nGrade: 1",
        "The grade is 3 because",
        "Grade: -1",
        "Grade: 2.5",
    ],
)
def test_relevance_parse_rejects_answers_without_exactly_one_grade(answer):
    with pytest.raises(UnparsableAnswer):
        llm_judges.relevance_parse(answer)


def test_relevance_prompt_holds_utterances_context_ptkb_and_passage():
    text = llm_judges.relevance_render(
        utterance="How about for her?",
        resolved_utterance="How tall should a bike frame be for my daughter?",
        context=[("I need a new bike.", "What kind of riding do you do?")],
        ptkb=["I have a daughter aged 9.", "I live in Amsterdam."],
        passage="A 24-inch wheel suits riders from 1.35 m.",
    )
    for part in (
        "How about for her?",
        "How tall should a bike frame be for my daughter?",
        "User: I need a new bike.\nAssistant: What kind of riding do you do?",
        "1. I have a daughter aged 9.\n2. I live in Amsterdam.",
        "A 24-inch wheel suits riders from 1.35 m.",
        "4 = Fully meets",
        "Grade: <0, 1, 2, 3 or 4>",
    ):
        assert part in text
    assert "$" not in text


def test_nugget_lines_parse_strips_list_markers_but_keeps_numbers():
    answer = "1. The frame is 1.15 m long\n- Costs 300 euros\n2) Made in 1998\n1.15 m is the minimum height\n"
    assert llm_judges.nugget_lines_parse(answer) == [
        "The frame is 1.15 m long",
        "Costs 300 euros",
        "Made in 1998",
        "1.15 m is the minimum height",
    ]


@pytest.mark.parametrize("answer", ["No nugget", "No nugget.", "  no nuggets  ", "**No nugget**", ""])
def test_nugget_lines_parse_reads_no_nugget_as_none(answer):
    assert llm_judges.nugget_lines_parse(answer) == []


def test_nugget_lines_parse_removes_surrounding_quotes_and_repeats():
    assert llm_judges.nugget_lines_parse('"exact words"\n“exact words”\nexact words') == ["exact words"]


def test_span_locate_tries_exact_then_case_then_whitespace():
    text = "The Eiffel Tower is 330 m tall.\nIt was   built in 1889 for the World's Fair."
    assert llm_judges.span_locate(text, "330 m tall") == (20, 30)
    start, end = llm_judges.span_locate(text, "the eiffel tower")
    assert text[start:end] == "The Eiffel Tower"
    start, end = llm_judges.span_locate(text, "tall. It was built in 1889")
    assert text[start:end] == "tall.\nIt was   built in 1889"
    assert llm_judges.span_locate(text, "built in 1890") is None


def test_spans_match_keeps_text_as_in_the_passage_and_lists_the_missing():
    text = "Bikes for children: a 24-inch wheel fits riders of 1.35 m to 1.45 m."
    found, missing = llm_judges.spans_match(
        text, ["24-INCH wheel", "fits riders of 1.35 m", "costs 200 euros"]
    )
    assert [(s.text, s.start, s.end) for s in found] == [
        ("24-inch wheel", 22, 35),
        ("fits riders of 1.35 m", 36, 57),
    ]
    assert missing == ["costs 200 euros"]


@pytest.mark.parametrize(
    ("answer", "value"),
    [
        ("Yes", True),
        ("Yes.", True),
        ("yes", True),
        ("**YES**", True),
        ("Yes, it does.", True),
        ("No.", False),
        ("no", False),
    ],
)
def test_yes_no_parse_normalises_answers(answer, value):
    assert llm_judges.yes_no_parse(answer) is value


@pytest.mark.parametrize("answer", ["Maybe", "", "Yesterday", "Not really", "The answer is yes"])
def test_yes_no_parse_rejects_other_answers(answer):
    with pytest.raises(UnparsableAnswer):
        llm_judges.yes_no_parse(answer)


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("Full Support", "FS"),
        ("Partial Support.", "PS"),
        ("No Support", "NS"),
        ("Final Answer: Partial Support", "PS"),
    ],
)
def test_support_parse_reads_the_three_labels(answer, label):
    assert llm_judges.support_parse(answer) == label


@pytest.mark.parametrize("answer", ["Supported", "Full Support\nNo Support", "FS", "Some support"])
def test_support_parse_rejects_other_answers(answer):
    with pytest.raises(UnparsableAnswer):
        llm_judges.support_parse(answer)


def test_every_prompt_renders_its_inputs():
    assert "Nugget: the frame is steel" in llm_judges.ntr_render(
        query="q?", nugget="the frame is steel", response="It is steel."
    )
    support = llm_judges.support_render(sentence="Paris is in France.", passage="Paris, France's capital")
    assert "Sentence: Paris is in France." in support and "Paris, France's capital" in support
    followup = llm_judges.nuggets_followup_render(query="q?", text="body", missing=["a", "b"])
    assert "a\nb" in followup
