"""The qualification test of an MTurk campaign: its XML, made through boto3 against the loopback fake (which
records the wire request and grades workers' tests with the answer key), required by the campaign's HITs,
and set up from the campaign page by organisers only."""

from __future__ import annotations

import io
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from crowd.campaigns import services as campaign_services
from crowd.errors import CrowdError
from crowd.models import CrowdCampaign, CrowdQualification
from crowd.providers.mturk.client import MTurkClient
from crowd.providers.mturk.qualification import (
    ANSWER_KEY_NS,
    QUESTION_FORM_NS,
    qualification_test,
    question_id,
)
from crowd.providers.mturk.selectors import campaign_test_questions
from crowd.providers.mturk.services import campaign_qualification_set
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db

HOSTILE = 'A fact with <b>markup</b> & "quotes" ]]> </Text></QuestionForm>'
Q = f"{{{QUESTION_FORM_NS}}}"
K = f"{{{ANSWER_KEY_NS}}}"


def _calls(server, operation: str) -> list[dict]:
    return [params for name, params in server.state.calls if name == operation]


def _right_answers(qualification: CrowdQualification) -> dict[str, str]:
    key = ET.fromstring(qualification.answer_key_xml)
    return {
        q.findtext(f"{K}QuestionIdentifier"): q.findtext(f"{K}AnswerOption/{K}SelectionIdentifier")
        for q in key.iter(f"{K}Question")
    }


# --- the XML ---------------------------------------------------------------------------------------


def test_hostile_campaign_text_makes_valid_xml_that_reads_back_as_written():
    campaign = build_campaign()
    campaign.title = "Facts & <answers>"
    campaign.save()
    question = campaign_services.test_question_create(
        collection=campaign.collection, response_text="1 < 2 && 3 > 2", nugget_text=HOSTILE, answer=True
    )
    test = qualification_test(campaign=campaign, questions=[question])

    form = ET.fromstring(test.test_xml)
    assert form.tag == f"{Q}QuestionForm"
    assert form.findtext(f"{Q}Overview/{Q}Title") == "Facts & <answers>"
    texts = [t.text for t in form.iter(f"{Q}Text")]
    assert "Answer: 1 < 2 && 3 > 2" in texts
    assert f"Fact: {HOSTILE}" in texts
    assert [q.findtext(f"{Q}QuestionIdentifier") for q in form.iter(f"{Q}Question")] == ["t1"]
    assert [s.text for s in form.iter(f"{Q}SelectionIdentifier")] == ["yes", "no"]

    key = ET.fromstring(test.answer_key_xml)
    assert key.tag == f"{K}AnswerKey"
    assert key.findtext(f"{K}Question/{K}AnswerOption/{K}SelectionIdentifier") == "yes"
    assert key.findtext(f"{K}QualificationValueMapping/{K}PercentageMapping/{K}MaximumSummedScore") == "1"


def test_a_nugget_support_test_offers_the_three_way_answers():
    campaign = build_campaign()
    campaign.kind = CrowdCampaign.Kind.NUGGET_SUPPORT
    question = campaign_services.test_question_create(
        collection=campaign.collection, response_text="r", nugget_text="n", support="partial_support"
    )
    campaign_services.test_question_create(
        collection=campaign.collection, response_text="r", nugget_text="m", answer=False
    )
    assert campaign_test_questions(campaign=campaign) == [question]
    test = qualification_test(campaign=campaign, questions=[question])
    form = ET.fromstring(test.test_xml)
    assert [s.text for s in form.iter(f"{Q}SelectionIdentifier")] == [
        "support",
        "partial_support",
        "not_support",
    ]
    key = ET.fromstring(test.answer_key_xml)
    assert key.findtext(f"{K}Question/{K}AnswerOption/{K}SelectionIdentifier") == "partial_support"


def test_the_questions_its_batches_use_come_first():
    campaign = build_campaign()
    used = set(
        campaign.batches.values_list("items__test_question", flat=True).exclude(items__test_question=None)
    )
    chosen = campaign_test_questions(campaign=campaign)
    assert len(chosen) == 4
    assert {q.id for q in chosen[: len(used)]} == used
    assert question_id(0) == "t1"


# --- made through boto3 against the fake, and required by the HITs ---------------------------------


def test_it_is_made_on_mturk_with_the_test_and_answer_key_and_required_by_published_hits(fake_mturk):
    campaign = build_campaign()
    qualification, made = campaign_qualification_set(
        campaign=campaign, client=MTurkClient(), threshold=75, questions=4
    )
    assert made
    (request,) = _calls(fake_mturk, "CreateQualificationType")
    assert request["QualificationTypeStatus"] == "Active"
    assert request["Name"] == f"Assay test ({campaign.name})"
    assert request["TestDurationInSeconds"] == qualification.test_duration_seconds == 1200
    assert request["Test"] == qualification.test_xml
    assert request["AnswerKey"] == qualification.answer_key_xml
    assert len(list(ET.fromstring(request["Test"]).iter(f"{Q}Question"))) == 4
    stored = fake_mturk.state.qualification_types[qualification.qualification_type_id]
    assert stored["IsRequestable"] is True
    assert qualification.status == "Active"
    info = MTurkClient().qualification_type_get(qualification_type_id=qualification.qualification_type_id)
    assert (info.status, info.has_test) == ("Active", True)

    call_command("mturk_publish", campaign=campaign.name)
    (hit_type,) = _calls(fake_mturk, "CreateHITType")
    requirement = {
        "QualificationTypeId": qualification.qualification_type_id,
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [75],
    }
    assert requirement in hit_type["QualificationRequirements"]
    for hit in fake_mturk.state.hits.values():
        assert requirement in fake_mturk.fake._hit_view(hit)["QualificationRequirements"]

    # A second call keeps the test and changes only the threshold of HITs published from then on.
    again, made = campaign_qualification_set(
        campaign=campaign, client=MTurkClient(), threshold=50, questions=2
    )
    assert not made
    assert (again.pk, again.threshold, again.questions) == (qualification.pk, 50, 4)
    assert len(_calls(fake_mturk, "CreateQualificationType")) == 1


def test_the_fake_grades_tests_with_the_answer_key_and_lets_only_qualified_workers_accept(fake_mturk):
    campaign = build_campaign()
    qualification, _ = campaign_qualification_set(
        campaign=campaign, client=MTurkClient(), threshold=75, questions=4
    )
    call_command("mturk_publish", campaign=campaign.name)
    hit_id = campaign.batches.order_by("index").first().hit_id
    right = _right_answers(qualification)
    wrong = {"yes": "no", "no": "yes"}
    one_wrong = {**right, "t1": wrong[right["t1"]]}
    two_wrong = {**one_wrong, "t2": wrong[right["t2"]]}

    def take(worker: str, answers: dict[str, str]) -> str:
        fields = {"qualificationTypeId": qualification.qualification_type_id, "workerId": worker, **answers}
        data = urllib.parse.urlencode(fields).encode()
        with urllib.request.urlopen(f"{fake_mturk.url}/worker/qualify", data=data) as response:
            return response.read().decode()

    assert take("GOOD", right) == "Qualification value 100"
    assert take("EDGE", one_wrong) == "Qualification value 75"
    assert take("POOR", two_wrong) == "Qualification value 50"
    assert fake_mturk.fake.worker_accept(hit_id, "GOOD")
    assert fake_mturk.fake.worker_accept(hit_id, "EDGE")
    for worker in ("POOR", "NEVER-TOOK-IT"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{fake_mturk.url}/worker/accept?hitId={hit_id}&workerId={worker}")
        assert refused.value.code == 403


def test_too_few_test_questions_or_an_in_platform_campaign_are_refused(fake_mturk):
    campaign = build_campaign()
    with pytest.raises(CrowdError, match="has 4 test questions of its kind"):
        campaign_qualification_set(campaign=campaign, client=MTurkClient(), threshold=80, questions=5)
    platform = build_campaign(provider=CrowdCampaign.Provider.PLATFORM)
    with pytest.raises(CrowdError, match="not on MTurk"):
        campaign_qualification_set(campaign=platform, client=MTurkClient(), threshold=80, questions=1)
    assert not fake_mturk.state.qualification_types
    assert not CrowdQualification.objects.exists()


# --- from the campaign page --------------------------------------------------------------------------


def test_organisers_make_it_from_the_campaign_page_and_see_its_id_and_status(client, fake_mturk):
    campaign = build_campaign()
    url = reverse("crowd:campaign-qualification", args=[campaign.name])
    client.force_login(OrganiserFactory())
    page = client.get(reverse("crowd:campaign", args=[campaign.name])).content.decode()
    assert 'id="action-qualification"' in page
    assert "Make the test" in page

    refused = client.post(url, {"qualification-threshold": "101", "qualification-questions": "3"})
    assert refused.status_code == 400
    assert not CrowdQualification.objects.exists()

    response = client.post(
        url, {"qualification-threshold": "80", "qualification-questions": "3"}, follow=True
    )
    qualification = CrowdQualification.objects.get(campaign=campaign)
    page = response.content.decode()
    assert (
        f"Qualification test {qualification.qualification_type_id} made on MTurk from 3 test questions"
        in page
    )
    assert f"<code>{qualification.qualification_type_id}</code> (Active)" in page
    assert "require at least 80% right" in page
    assert "Set threshold" in page
    assert (qualification.threshold, qualification.questions) == (80, 3)

    response = client.post(
        url, {"qualification-threshold": "60", "qualification-questions": "3"}, follow=True
    )
    assert "stays as made" in response.content.decode()
    assert 'name="qualification-threshold" value="60"' in response.content.decode()
    qualification.refresh_from_db()
    assert qualification.threshold == 60

    response = client.post(
        reverse("crowd:campaign-publish", args=[campaign.name]), {"publish-confirm": "on"}, follow=True
    )
    (hit_type,) = _calls(fake_mturk, "CreateHITType")
    assert qualification.requirement() in hit_type["QualificationRequirements"]
    assert qualification.requirement()["IntegerValues"] == [60]


def test_a_refused_test_is_reported_on_the_page(client, fake_mturk):
    campaign = build_campaign()
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("crowd:campaign-qualification", args=[campaign.name]),
        {"qualification-threshold": "80", "qualification-questions": "9"},
        follow=True,
    )
    assert "a test of 9 cannot be made" in response.content.decode()
    assert not CrowdQualification.objects.exists()


def test_assessors_and_anonymous_users_cannot_make_it(client, fake_mturk):
    campaign = build_campaign()
    url = reverse("crowd:campaign-qualification", args=[campaign.name])
    data = {"qualification-threshold": "80", "qualification-questions": "3"}
    anonymous = client.post(url, data)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("login"))
    client.force_login(UserFactory())
    assert client.post(url, data).status_code == 403
    assert not CrowdQualification.objects.exists()
    assert not fake_mturk.state.qualification_types


def test_the_command_makes_the_test_then_sets_the_threshold_and_says_why_it_refuses(fake_mturk):
    campaign = build_campaign()
    out = io.StringIO()
    call_command("mturk_qualify", campaign=campaign.name, threshold=70, questions=2, stdout=out)
    qualification = CrowdQualification.objects.get(campaign=campaign)
    assert (
        f"qualification test {qualification.qualification_type_id} made (Active, 2 questions)"
        in out.getvalue()
    )
    out = io.StringIO()
    call_command("mturk_qualify", campaign=campaign.name, threshold=90, stdout=out)
    assert "kept" in out.getvalue() and ">= 90" in out.getvalue()
    other = build_campaign()
    with pytest.raises(CommandError, match="a test of 9 cannot be made"):
        call_command("mturk_qualify", campaign=other.name, threshold=70, questions=9)
