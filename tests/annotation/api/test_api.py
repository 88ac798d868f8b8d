import os
import subprocess
import sys

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.api import views
from annotation.models import Judge, RelevanceJudgment
from annotation.selectors import TOPICS_PER_PAGE
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    OrganiserFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def turn():
    collection = CollectionFactory(name="c1")
    return TurnFactory(topic=TopicFactory(collection=collection, number="7"), position=1)


def test_it_refuses_anonymous_requests(turn):
    assert APIClient().get("/api/collections/").status_code in (401, 403)


def test_it_accepts_token_auth_and_paginates(turn):
    user = UserFactory()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    PassageFactory.create_batch(3, collection=turn.collection)
    response = client.get("/api/collections/c1/passages/?limit=2")
    assert response.status_code == 200
    assert response.json()["count"] == 3
    assert len(response.json()["results"]) == 2


def test_it_lists_turns_of_a_collection(turn):
    client = APIClient()
    client.force_authenticate(UserFactory())
    response = client.get("/api/collections/c1/turns/")
    assert response.status_code == 200
    assert [t["turn_id"] for t in response.json()["results"]] == ["7_1"]


def test_assessors_may_not_write_grades_outside_their_assignments(turn):
    client = APIClient()
    client.force_authenticate(UserFactory())
    response = client.post(
        "/api/collections/c1/judgments/relevance/",
        {"turn_id": "7_1", "passage_id": "d1", "grade": 3},
        format="json",
    )
    assert response.status_code == 403
    assert response.json() == {"detail": "organisers only", "code": "permission_denied"}
    assert not RelevanceJudgment.objects.exists()


def test_organisers_import_a_grade_as_themselves_or_as_a_named_judge(turn):
    organiser = OrganiserFactory()
    nist = Judge.objects.create(name="nist-qrels", kind=Judge.Kind.IMPORTED)
    client = APIClient()
    client.force_authenticate(organiser)
    own = client.post(
        "/api/collections/c1/judgments/relevance/",
        {"turn_id": "7_1", "passage_id": "d1", "grade": 3, "time_spent_ms": 1200},
        format="json",
    )
    named = client.post(
        "/api/collections/c1/judgments/relevance/",
        {"turn_id": "7_1", "passage_id": "d1", "grade": 1, "judge": "nist-qrels"},
        format="json",
    )
    assessor = client.post(
        "/api/collections/c1/judgments/relevance/",
        {"turn_id": "7_1", "passage_id": "d1", "grade": 1, "judge": AssessorJudgeFactory().name},
        format="json",
    )
    assert own.status_code == 201
    assert (own.json()["grade"], own.json()["judge"]) == (3, f"assessor:{organiser.username}")
    assert named.status_code == 201
    assert named.json()["judge"] == "nist-qrels"
    assert assessor.status_code == 400
    assert "judge" in assessor.json()["fields"]
    rows = {(j.judge, j.grade, j.time_spent_ms) for j in RelevanceJudgment.objects.all()}
    assert rows == {(organiser.judge, 3, 1200), (nist, 1, None)}


def test_an_organisers_grade_retried_with_its_idempotency_key_counts_once(turn):
    client = APIClient()
    client.force_authenticate(OrganiserFactory())
    grade = {"turn_id": "7_1", "passage_id": "d1", "grade": 3, "time_spent_ms": 1200}
    key = {"HTTP_IDEMPOTENCY_KEY": "3f2c1a9e-8d1b-4b7a-9c55-0a1e2b3c4d5e"}

    first = client.post("/api/collections/c1/judgments/relevance/", grade, format="json", **key)
    retry = client.post("/api/collections/c1/judgments/relevance/", grade, format="json", **key)
    bad = client.post(
        "/api/collections/c1/judgments/relevance/", grade, format="json", HTTP_IDEMPOTENCY_KEY="x"
    )

    assert (first.status_code, retry.status_code, bad.status_code) == (201, 201, 400)
    assert retry.json() == first.json()
    assert list(bad.json()["fields"]) == ["Idempotency-Key"]
    assert list(RelevanceJudgment.objects.values_list("grade", "time_spent_ms")) == [(3, 1200)]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"turn_id": "7_1", "passage_id": "d1", "grade": 5}, "grade"),
        ({"turn_id": "7_1", "passage_id": "d1", "grade": "NONE"}, "grade"),
        ({"turn_id": "9_9", "passage_id": "d1", "grade": 1}, "turn_id"),
        ({"turn_id": "7_1", "grade": 1}, "passage_id"),
    ],
)
def test_it_answers_400_with_the_reason(turn, payload, field):
    client = APIClient()
    client.force_authenticate(OrganiserFactory())
    response = client.post("/api/collections/c1/judgments/relevance/", payload, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert field in response.json()["fields"]
    assert RelevanceJudgment.objects.count() == 0


def test_assessors_see_only_their_own_judgments_and_organisers_see_all(turn):
    mine = AssessorJudgeFactory()
    RelevanceJudgmentFactory(judge=mine, turn=turn, passage_id="a")
    RelevanceJudgmentFactory(judge=AssessorJudgeFactory(), turn=turn, passage_id="b")
    client = APIClient()
    client.force_authenticate(mine.user)
    response = client.get("/api/collections/c1/judgments/relevance/")
    assert [j["passage_id"] for j in response.json()["results"]] == ["a"]
    client.force_authenticate(OrganiserFactory())
    response = client.get("/api/collections/c1/judgments/relevance/")
    assert sorted(j["passage_id"] for j in response.json()["results"]) == ["a", "b"]


def test_organisers_filter_by_judge_and_an_unknown_judge_or_an_assessor_without_one_lists_nothing(turn):
    nist = Judge.objects.create(name="nist", kind=Judge.Kind.IMPORTED)
    RelevanceJudgmentFactory(judge=nist, turn=turn, passage_id="a")
    RelevanceJudgmentFactory(judge=AssessorJudgeFactory(), turn=turn, passage_id="b")
    client = APIClient()
    client.force_authenticate(OrganiserFactory())

    named = client.get("/api/collections/c1/judgments/relevance/?judge=nist").json()
    unknown = client.get("/api/collections/c1/judgments/relevance/?judge=nobody").json()
    client.force_authenticate(UserFactory())
    judgeless = client.get("/api/collections/c1/judgments/relevance/").json()

    assert (named["count"], [j["passage_id"] for j in named["results"]]) == (1, ["a"])
    assert (unknown["count"], unknown["results"]) == (0, [])
    assert (judgeless["count"], judgeless["results"]) == (0, [])


def test_the_passage_list_counts_from_the_kept_count_in_passage_id_order(turn, django_assert_num_queries):
    for pid in ("c", "a", "b"):
        PassageFactory(collection=turn.collection, passage_id=pid)
    PassageFactory(collection=CollectionFactory(), passage_id="other")
    client = APIClient()
    client.force_authenticate(UserFactory())
    client.get("/api/collections/c1/passages/")

    # The collection, its kept count (not a count of its passages), the page.
    with django_assert_num_queries(3):
        listed = client.get("/api/collections/c1/passages/?limit=2").json()
    named = client.get("/api/collections/c1/passages/?id=c&id=a&id=zz").json()

    assert (listed["count"], [p["passage_id"] for p in listed["results"]]) == (3, ["a", "b"])
    assert (named["count"], [p["passage_id"] for p in named["results"]]) == (2, ["a", "c"])


def test_the_topic_list_pages_conversations_a_conversation_page_at_a_time(turn):
    # Each topic carries its PTKB, so its page is TOPICS_PER_PAGE topics unless `limit` asks for more.
    # Numbers of their own: the factory's sequence may already have given the fixture's topic one of its.
    for i in range(TOPICS_PER_PAGE + 4):
        TopicFactory(collection=turn.collection, number=f"t{i}")
    client = APIClient()
    client.force_authenticate(UserFactory())

    first = client.get("/api/collections/c1/topics/").json()
    rest = client.get(first["next"]).json()
    longer = client.get("/api/collections/c1/topics/?limit=100").json()

    assert (first["count"], len(first["results"])) == (TOPICS_PER_PAGE + 5, TOPICS_PER_PAGE)
    assert (len(rest["results"]), rest["next"]) == (5, None)
    assert len(longer["results"]) == TOPICS_PER_PAGE + 5
    listed = [t["number"] for t in first["results"] + rest["results"]]
    assert sorted(listed) == sorted(t["number"] for t in longer["results"])


def test_it_serves_the_openapi_schema_and_docs():
    client = APIClient()
    client.force_authenticate(UserFactory())
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert "/api/collections/{collection}/judgments/relevance/" in schema.json()["paths"]
    assert client.get("/api/docs/").status_code == 200


def test_deploy_check_is_clean_with_production_settings():
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": "a-long-random-production-secret-key-" + "k" * 30,
        "ALLOWED_HOSTS": "assay.example.org",
        "SECURE_SSL_REDIRECT": "1",
        # check --deploy reads no row: any PostgreSQL address will do.
        "DATABASE_URL": "postgres://assay@127.0.0.1:1/assay",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_openapi_schema_validates_without_warnings(tmp_path):
    from django.core.management import call_command

    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    assert "/api/collections/" in out.read_text()


def test_a_signed_in_browser_session_reads_topics_and_runs(turn, client):
    from tests.factories import PtkbStatementFactory, RunFactory

    PtkbStatementFactory(topic=turn.topic, statement_id="1", text="I am vegetarian.")
    RunFactory(collection=turn.collection, name="bm25")
    client.force_login(UserFactory())  # Django's session cookie, no token
    collections = client.get("/api/collections/")
    assert collections.status_code == 200
    assert [c["name"] for c in collections.json()["results"]] == ["c1"]
    topics = client.get("/api/collections/c1/topics/")
    assert topics.status_code == 200
    assert [t["number"] for t in topics.json()["results"]] == ["7"]
    assert topics.json()["results"][0]["ptkb"] == [{"statement_id": "1", "text": "I am vegetarian."}]
    runs = client.get("/api/collections/c1/runs/")
    assert runs.status_code == 200
    assert [r["name"] for r in runs.json()["results"]] == ["bm25"]
    assert client.get("/api/collections/nope/topics/").status_code == 404


def test_deploy_check_fails_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}} | {
        "ALLOWED_HOSTS": "assay.example.org",
        "SECURE_SSL_REDIRECT": "1",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode != 0
    # Not even the check starts: the settings refuse a production start without a key.
    assert "ImproperlyConfigured: SECRET_KEY is not set" in result.stderr


def test_the_grade_list_counts_from_the_judges_kept_counts_not_the_grades(turn, monkeypatch):
    nist = Judge.objects.create(name="nist", kind=Judge.Kind.IMPORTED)
    for pid in ("a", "b", "c"):
        RelevanceJudgmentFactory(judge=nist, turn=turn, passage_id=pid)
    RelevanceJudgmentFactory(judge=AssessorJudgeFactory(), turn=turn, passage_id="d")
    other = TurnFactory(topic=TopicFactory(collection=CollectionFactory(name="c2"), number="8"), position=1)
    RelevanceJudgmentFactory(judge=nist, turn=other, passage_id="a")
    client = APIClient()
    client.force_authenticate(OrganiserFactory())

    every = client.get("/api/collections/c1/judgments/relevance/?limit=1").json()
    named = client.get("/api/collections/c1/judgments/relevance/?judge=nist&limit=1").json()
    # The total is the kept counts' answer, whatever the grades listed: not a count of the grades.
    monkeypatch.setattr(views, "labels_kept_count", lambda **kwargs: 99)
    kept = client.get("/api/collections/c1/judgments/relevance/?limit=1").json()

    assert (every["count"], named["count"], kept["count"]) == (4, 3, 99)
