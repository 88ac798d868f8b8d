"""Request shapes of the MTurk client, pinned with botocore's Stubber (no network)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from botocore.stub import ANY, Stubber

from crowd.providers.mturk.client import (
    LIVE_ENDPOINT,
    SANDBOX_ENDPOINT,
    MTurkClient,
    MTurkError,
    external_question_xml,
)
from devtools.mturk_server import FakeMTurkServer


@pytest.fixture
def mturk(settings):
    settings.MTURK_ENDPOINT_URL = ""
    sleeps: list[float] = []
    client = MTurkClient(sleep=sleeps.append)
    with Stubber(client.boto) as stub:
        yield client, stub, sleeps
        stub.assert_no_pending_responses()


def test_it_uses_the_sandbox_unless_live_is_explicit(settings):
    settings.MTURK_ENDPOINT_URL = ""
    assert MTurkClient().endpoint_url == SANDBOX_ENDPOINT
    assert MTurkClient(live=True).endpoint_url == LIVE_ENDPOINT
    settings.MTURK_ENDPOINT_URL = "http://127.0.0.1:9999"
    assert MTurkClient(live=True).endpoint_url == "http://127.0.0.1:9999"


def test_it_creates_the_hit_type_with_the_study_qualifications(mturk):
    client, stub, _ = mturk
    stub.add_response(
        "create_hit_type",
        {"HITTypeId": "HT1"},
        {
            "Title": "t",
            "Description": "d",
            "Reward": "0.50",
            "AssignmentDurationInSeconds": 1800,
            "AutoApprovalDelayInSeconds": 259200,
            "Keywords": "k",
            "QualificationRequirements": [
                {
                    "QualificationTypeId": "000000000000000000L0",
                    "Comparator": "GreaterThan",
                    "IntegerValues": [98],
                },
                {
                    "QualificationTypeId": "00000000000000000040",
                    "Comparator": "GreaterThan",
                    "IntegerValues": [5000],
                },
                {
                    "QualificationTypeId": "00000000000000000071",
                    "Comparator": "In",
                    "LocaleValues": [{"Country": "US"}, {"Country": "GB"}, {"Country": "AU"}],
                },
            ],
        },
    )
    hit_type = client.hit_type_create(
        title="t",
        description="d",
        reward="0.50",
        duration_seconds=1800,
        auto_approval_delay_seconds=259200,
        keywords="k",
    )
    assert hit_type == "HT1"


def test_it_creates_an_external_question_hit(mturk):
    client, stub, _ = mturk
    url = "https://assay.example/crowd/hit/abc/?x=1&y=2"
    stub.add_response(
        "create_hit_with_hit_type",
        {"HIT": {"HITId": "H1"}},
        {
            "HITTypeId": "HT1",
            "MaxAssignments": 3,
            "LifetimeInSeconds": 600,
            "Question": external_question_xml(url),
            "RequesterAnnotation": "c:0",
            "UniqueRequestToken": "tok",
        },
    )
    assert (
        client.hit_create(
            hit_type_id="HT1",
            question_url=url,
            max_assignments=3,
            lifetime_seconds=600,
            annotation="c:0",
            unique_token="tok",
        )
        == "H1"
    )
    assert (
        "<ExternalURL>https://assay.example/crowd/hit/abc/?x=1&amp;y=2</ExternalURL>"
        in external_question_xml(url)
    )


def test_it_follows_next_token_through_every_page_of_assignments(mturk):
    client, stub, _ = mturk

    def row(n: int) -> dict:
        return {
            "AssignmentId": f"A{n}",
            "WorkerId": f"W{n}",
            "HITId": "H1",
            "AssignmentStatus": "Submitted",
            "Answer": "",
        }

    stub.add_response(
        "list_assignments_for_hit",
        {"Assignments": [row(1), row(2)], "NextToken": "p2", "NumResults": 2},
        {"HITId": "H1", "MaxResults": 2},
    )
    stub.add_response(
        "list_assignments_for_hit",
        {"Assignments": [row(3)], "NumResults": 1},
        {"HITId": "H1", "MaxResults": 2, "NextToken": "p2"},
    )
    assert [a.assignment_id for a in client.assignments_list(hit_id="H1", page_size=2)] == ["A1", "A2", "A3"]


def test_it_rejects_only_with_feedback(mturk):
    client, stub, _ = mturk
    with pytest.raises(MTurkError):
        client.assignment_reject(assignment_id="A1", feedback="")
    stub.add_response(
        "reject_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "wrong control answer"}
    )
    client.assignment_reject(assignment_id="A1", feedback="wrong control answer")


def test_it_blocks_a_worker_with_a_qualification(mturk):
    client, stub, _ = mturk
    stub.add_response(
        "create_qualification_type",
        {"QualificationType": {"QualificationTypeId": "Q1"}},
        {"Name": "blocked", "Description": "d", "QualificationTypeStatus": "Active"},
    )
    stub.add_response(
        "associate_qualification_with_worker",
        {},
        {"QualificationTypeId": "Q1", "WorkerId": "W9", "IntegerValue": 1, "SendNotification": False},
    )
    qual = client.qualification_type_create(name="blocked", description="d")
    client.qualification_assign(qualification_type_id=qual, worker_id="W9")


def test_it_expires_a_hit_with_a_time_in_the_past(mturk):
    client, stub, _ = mturk
    stub.add_response("update_expiration_for_hit", {}, {"HITId": "H1", "ExpireAt": ANY})
    client.hit_expire(hit_id="H1")


def test_it_retries_throttling_and_service_faults_with_backoff(mturk):
    client, stub, sleeps = mturk
    stub.add_client_error("get_account_balance", "ThrottlingException", http_status_code=400)
    stub.add_client_error("get_account_balance", "ServiceFault", http_status_code=500)
    stub.add_response("get_account_balance", {"AvailableBalance": "10.00"}, {})
    assert client.account_balance() == "10.00"
    assert sleeps == [0.5, 1.0]


def test_it_does_not_retry_a_request_error(mturk):
    client, stub, sleeps = mturk
    stub.add_client_error("approve_assignment", "RequestError", "already approved", http_status_code=400)
    with pytest.raises(MTurkError) as caught:
        client.assignment_approve(assignment_id="A1")
    assert caught.value.code == "RequestError"
    assert sleeps == []


def test_it_gives_up_after_the_last_attempt(settings):
    settings.MTURK_ENDPOINT_URL = ""
    sleeps: list[float] = []
    client = MTurkClient(sleep=sleeps.append, max_attempts=3)
    with Stubber(client.boto) as stub:
        for _ in range(3):
            stub.add_client_error("get_account_balance", "ServiceFault", http_status_code=500)
        with pytest.raises(MTurkError) as caught:
            client.account_balance()
    assert caught.value.code == "ServiceFault"
    assert sleeps == [0.5, 1.0]


# --- the local server checks requests against botocore's service model ---------------------------


def _raw(server: FakeMTurkServer, operation: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        server.url + "/",
        data=json.dumps(body).encode(),
        headers={
            "X-Amz-Target": f"MTurkRequesterServiceV20170117.{operation}",
            "Content-Type": "application/x-amz-json-1.1",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_fake_server_rejects_parameters_the_service_model_does_not_know():
    with FakeMTurkServer() as server:
        status, payload = _raw(server, "GetHIT", {"HITId": "H1", "Colour": "red"})
    assert status == 400
    assert payload["__type"] == "ValidationException"
    assert "Colour" in payload["Message"]


def test_fake_server_rejects_a_missing_required_parameter_and_unknown_operations():
    with FakeMTurkServer() as server:
        status, payload = _raw(server, "RejectAssignment", {"AssignmentId": "A1"})
        assert (status, payload["__type"]) == (400, "ValidationException")
        assert "RequesterFeedback" in payload["Message"]
        status, payload = _raw(server, "MakeCoffee", {})
        assert (status, payload["__type"]) == (400, "UnknownOperationException")


def test_fake_server_serves_retries_through_the_real_client():
    with FakeMTurkServer() as server:
        sleeps: list[float] = []
        client = MTurkClient(endpoint_url=server.url, sleep=sleeps.append)
        server.state.inject_faults("GetAccountBalance", "ThrottlingException", "ServiceFault")
        assert client.account_balance() == server.state.balance
        assert sleeps == [0.5, 1.0]
        assert [op for op, _ in server.state.calls] == ["GetAccountBalance"] * 3
