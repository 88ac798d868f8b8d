"""The local MTurk fake's qualification types and CreateHIT, through the real boto3 client (reached as the
MTurk client's `boto`): the shapes MTurk answers, the checks it makes on a test and its answer key, grading,
and the requirements a HIT records and enforces when a worker accepts."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from crowd.providers.mturk.client import MTurkClient
from devtools.mturk_server import FakeMTurkServer
from devtools.mturk_server_ops import FakeError, grade_test

FORM = (
    '<QuestionForm xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2017-11-06/'
    'QuestionForm.xsd">{}</QuestionForm>'
)
QUESTION = (
    "<Question><QuestionIdentifier>{}</QuestionIdentifier><QuestionContent><Text>?</Text></QuestionContent>"
    "<AnswerSpecification><SelectionAnswer><Selections>"
    "<Selection><SelectionIdentifier>yes</SelectionIdentifier><Text>Yes</Text></Selection>"
    "<Selection><SelectionIdentifier>no</SelectionIdentifier><Text>No</Text></Selection>"
    "</Selections></SelectionAnswer></AnswerSpecification></Question>"
)
KEY = (
    '<AnswerKey xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/'
    'AnswerKey.xsd">{}{}</AnswerKey>'
)
OPTION = (
    "<Question><QuestionIdentifier>{}</QuestionIdentifier><AnswerOption><SelectionIdentifier>{}"
    "</SelectionIdentifier><AnswerScore>1</AnswerScore></AnswerOption></Question>"
)
PERCENT = (
    "<QualificationValueMapping><PercentageMapping><MaximumSummedScore>{}</MaximumSummedScore>"
    "</PercentageMapping></QualificationValueMapping>"
)
TEST = FORM.format(QUESTION.format("t1") + QUESTION.format("t2") + QUESTION.format("t3"))
ANSWER_KEY = KEY.format(
    OPTION.format("t1", "yes") + OPTION.format("t2", "no") + OPTION.format("t3", "yes"), PERCENT.format(3)
)


@pytest.fixture
def mturk():
    with FakeMTurkServer() as server:
        yield server, MTurkClient(endpoint_url=server.url).boto


def _code(call, **params) -> str:
    with pytest.raises(ClientError) as refused:
        call(**params)
    return refused.value.response["Error"]["Code"]


def test_a_qualification_type_with_a_test_comes_back_as_mturk_shapes_it(mturk):
    server, boto = mturk
    made = boto.create_qualification_type(
        Name="Assay test",
        Description="d",
        Keywords="relevance",
        QualificationTypeStatus="Active",
        Test=TEST,
        AnswerKey=ANSWER_KEY,
        TestDurationInSeconds=600,
    )["QualificationType"]
    assert made["QualificationTypeStatus"] == "Active"
    assert made["IsRequestable"] is True
    assert made["AutoGranted"] is False
    assert (made["Test"], made["AnswerKey"], made["TestDurationInSeconds"]) == (TEST, ANSWER_KEY, 600)
    got = boto.get_qualification_type(QualificationTypeId=made["QualificationTypeId"])["QualificationType"]
    assert got == made
    listed = boto.list_qualification_types(MustBeRequestable=True, Query="assay")
    assert [q["QualificationTypeId"] for q in listed["QualificationTypes"]] == [made["QualificationTypeId"]]
    assert boto.list_qualification_types(MustBeRequestable=True, Query="other")["NumResults"] == 0
    assert _code(boto.get_qualification_type, QualificationTypeId="3QNOPE") == "RequestError"


def test_the_fake_refuses_a_test_mturk_would_refuse(mturk):
    _, boto = mturk
    base = {"Description": "d", "QualificationTypeStatus": "Active"}
    create = boto.create_qualification_type
    assert _code(create, Name="a", Test=TEST, **base) == "ParameterValidationError"  # no duration
    assert _code(create, Name="b", AnswerKey=ANSWER_KEY, **base) == "ParameterValidationError"  # no test
    assert _code(
        create, Name="c", Test="<QuestionForm><b>&</QuestionForm>", TestDurationInSeconds=60, **base
    ) == ("ParameterValidationError")
    unknown_question = KEY.format(OPTION.format("t9", "yes"), "")
    assert _code(
        create, Name="d", Test=TEST, AnswerKey=unknown_question, TestDurationInSeconds=60, **base
    ) == ("ParameterValidationError")


def test_it_grades_as_a_percentage_of_the_maximum_summed_score_or_as_the_sum():
    assert grade_test(ANSWER_KEY, {"t1": "yes", "t2": "no", "t3": "yes"}) == 100
    assert grade_test(ANSWER_KEY, {"t1": "yes", "t2": "yes"}) == 33
    unmapped = KEY.format(OPTION.format("t1", "yes") + OPTION.format("t2", "no"), "")
    assert grade_test(unmapped, {"t1": "yes", "t2": "no"}) == 2


def test_create_hit_records_its_requirements_and_accepting_checks_them(mturk):
    server, boto = mturk
    qual_id = boto.create_qualification_type(
        Name="q",
        Description="d",
        QualificationTypeStatus="Active",
        Test=TEST,
        AnswerKey=ANSWER_KEY,
        TestDurationInSeconds=600,
    )["QualificationType"]["QualificationTypeId"]
    requirement = {
        "QualificationTypeId": qual_id,
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [60],
    }
    hit = boto.create_hit(
        MaxAssignments=3,
        LifetimeInSeconds=3600,
        AssignmentDurationInSeconds=600,
        Reward="0.50",
        Title="t",
        Description="d",
        Question="<ExternalQuestion><ExternalURL>https://example.org/hit</ExternalURL></ExternalQuestion>",
        QualificationRequirements=[requirement],
    )["HIT"]
    assert hit["QualificationRequirements"] == [requirement]
    assert boto.get_hit(HITId=hit["HITId"])["HIT"]["QualificationRequirements"] == [requirement]
    (params,) = [p for op, p in server.state.calls if op == "CreateHIT"]
    assert params["QualificationRequirements"] == [requirement]

    fake = server.fake
    assert fake.worker_take_test(qual_id, "GOOD", {"t1": "yes", "t2": "no", "t3": "no"}) == 66
    assert fake.worker_take_test(qual_id, "POOR", {"t1": "no", "t2": "no", "t3": "no"}) == 33
    assert "assignmentId=" in fake.worker_accept(hit["HITId"], "GOOD")
    for worker in ("POOR", "NEVER-TOOK-IT"):
        with pytest.raises(FakeError) as refused:
            fake.worker_accept(hit["HITId"], worker)
        assert refused.value.status == 403
