"""A qualification test in MTurk's XML: a QuestionForm of test questions and the AnswerKey that scores it.

MTurk grades the test itself: each question's right selection scores 1, and the PercentageMapping makes
the worker's qualification value the share of the test answered right x 100, the number the campaign's
HITs compare with the organiser's threshold. Every text from the campaign (answers, nuggets, the title)
is XML-escaped, so a nugget with `<` or `&` still makes a valid document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from annotation.models import NuggetSupport
from crowd.campaigns.models import CrowdCampaign, TestQuestion

QUESTION_FORM_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2017-11-06/QuestionForm.xsd"
)
ANSWER_KEY_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/AnswerKey.xsd"

YES_NO = [("yes", "Yes"), ("no", "No")]
THREE_WAY = [(value, str(label)) for value, label in NuggetSupport.choices]


@dataclass(frozen=True)
class QualificationTest:
    """The two documents CreateQualificationType takes, and how many questions they hold."""

    test_xml: str
    answer_key_xml: str
    questions: int


def question_id(position: int) -> str:
    """The QuestionIdentifier of the test's question at `position` (0-based), as the answer key names it."""
    return f"t{position + 1}"


def _selection_answer(choices: Sequence[tuple[str, str]]) -> str:
    selections = "".join(
        f"<Selection><SelectionIdentifier>{escape(value)}</SelectionIdentifier><Text>{escape(label)}</Text>"
        "</Selection>"
        for value, label in choices
    )
    return (
        "<AnswerSpecification><SelectionAnswer><StyleSuggestion>radiobutton</StyleSuggestion>"
        f"<Selections>{selections}</Selections></SelectionAnswer></AnswerSpecification>"
    )


def qualification_test(*, campaign: CrowdCampaign, questions: Sequence[TestQuestion]) -> QualificationTest:
    """The QuestionForm and AnswerKey of a test made of `questions`, worded like the campaign's HITs."""
    three_way = campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT
    choices = THREE_WAY if three_way else YES_NO
    asked = "Does the answer support the fact?" if three_way else "Does the answer contain the fact?"
    overview = (
        "Each question shows a system answer and a short fact. Judge only what the answer says, not "
        "whether the fact is true. "
        + (
            "Support: the answer states the fact; partial support: it states part of it; not support: "
            "it does not, or contradicts it."
            if three_way
            else "Yes: the answer states the fact (in any words); no: it does not, or contradicts it."
        )
    )
    parts = [
        f'<QuestionForm xmlns="{QUESTION_FORM_NS}">',
        f"<Overview><Title>{escape(campaign.title)}</Title><Text>{escape(overview)}</Text></Overview>",
    ]
    key = [f'<AnswerKey xmlns="{ANSWER_KEY_NS}">']
    for position, question in enumerate(questions):
        ident = question_id(position)
        parts.append(
            f"<Question><QuestionIdentifier>{ident}</QuestionIdentifier>"
            f"<DisplayName>Question {position + 1}</DisplayName><IsRequired>true</IsRequired>"
            f"<QuestionContent><Text>{escape(asked)}</Text>"
            f"<Text>Answer: {escape(question.response_text)}</Text>"
            f"<Text>Fact: {escape(question.nugget_text)}</Text></QuestionContent>"
            f"{_selection_answer(choices)}</Question>"
        )
        key.append(
            f"<Question><QuestionIdentifier>{ident}</QuestionIdentifier><AnswerOption>"
            f"<SelectionIdentifier>{escape(question.expected)}</SelectionIdentifier>"
            "<AnswerScore>1</AnswerScore></AnswerOption></Question>"
        )
    parts.append("</QuestionForm>")
    key.append(
        "<QualificationValueMapping><PercentageMapping>"
        f"<MaximumSummedScore>{len(questions)}</MaximumSummedScore>"
        "</PercentageMapping></QualificationValueMapping></AnswerKey>"
    )
    return QualificationTest(test_xml="".join(parts), answer_key_xml="".join(key), questions=len(questions))
