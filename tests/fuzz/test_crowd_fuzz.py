"""Hypothesis-driven requests to the crowd worker pages, which anyone on the internet can reach: the HIT
page inside MTurk's frame (its workerId, assignmentId, hitId and turkSubmitTo), the signed worker links,
the panel study addresses (their participant parameters), and a signed-in worker's batch page. Answers,
answer times, batch ids, tokens and keys are arbitrary strings; no answer may be a 5xx.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from crowd.models import CrowdBatch, CrowdCampaign
from crowd.providers.links.selectors import link_token
from crowd.providers.mturk.selectors import hit_token
from crowd.providers.panels.services import study_create
from tests.fuzz.conftest import CROWD_SETTINGS, tally
from tests.fuzz.inputs import text_values

pytestmark = pytest.mark.django_db

MTURK_ORIGIN = "https://workersandbox.mturk.com"


def maybe(values: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    return st.one_of(st.none(), values)


def answers(size: int) -> st.SearchStrategy[dict[str, str]]:
    """q1..qN (a vote, or anything) and ms1..msN (a time, or anything), one past the batch too."""
    vote = st.one_of(st.sampled_from(["yes", "no", "1", "0", "true"]), text_values)
    spent = st.one_of(st.sampled_from(["1500", "0", "86400000", "86400001", "1e308"]), text_values)
    fields = {f"q{n}": maybe(vote) for n in range(1, size + 2)}
    fields |= {f"ms{n}": maybe(spent) for n in range(1, size + 2)}
    return st.fixed_dictionaries(fields).map(lambda d: {k: v for k, v in d.items() if v is not None})


def _send(client: Client, method: str, path: str, query: dict[str, str], body: dict[str, str]) -> int:
    url = f"{path}?{urlencode(query)}" if query else path
    savepoint = transaction.savepoint()
    try:
        response = client.post(url, body) if method == "POST" else client.get(url)
    finally:
        transaction.savepoint_rollback(savepoint)
    tally("crowd", response.status_code)
    return response.status_code


@pytest.fixture
def crowd(fuzz_world):
    campaign = CrowdCampaign.objects.get(name=f"{fuzz_world.name}-crowd-1")
    batch = campaign.batches.filter(status=CrowdBatch.Status.OPEN).order_by("-id").first()
    study = study_create(campaign=campaign, completion_code="FUZZ-DONE", external_study_id="s1")
    return batch, study


def _token(real: str) -> st.SearchStrategy[str]:
    return st.one_of(st.just(real), text_values, st.just(real[:-1] + "x"))


def _path(prefix: str, value: str) -> str:
    return f"/crowd/{prefix}/{quote(value, safe='')}/" if value else f"/crowd/{prefix}/x/"


def test_it_answers_every_hit_page_request_without_a_server_error(crowd):
    batch, _ = crowd
    client = Client(raise_request_exception=False)
    ids = st.one_of(
        st.sampled_from(["A1B2C3", "ASSIGNMENT_ID_NOT_AVAILABLE", batch.hit_id or "H1"]), text_values
    )
    query = st.fixed_dictionaries(
        {
            "hitId": maybe(ids),
            "assignmentId": maybe(ids),
            "workerId": maybe(ids),
            "turkSubmitTo": maybe(st.one_of(st.just(MTURK_ORIGIN), text_values)),
        }
    ).map(lambda d: {k: v for k, v in d.items() if v is not None})
    failures: list = []

    @CROWD_SETTINGS
    @given(
        method=st.sampled_from(["GET", "POST"]),
        token=_token(hit_token(batch=batch)),
        query=query,
        body=answers(batch.items.count()),
    )
    def request(method, token, query, body):
        status = _send(client, method, _path("hit", token), query, body)
        if status >= 500:
            failures.append((method, token[:40], query, body))

    request()
    assert failures == []


def test_it_answers_every_worker_link_request_without_a_server_error(crowd):
    batch, _ = crowd
    client = Client(raise_request_exception=False)
    failures: list = []
    batch_ids = st.one_of(st.just(str(batch.id)), text_values)

    @CROWD_SETTINGS
    @given(
        method=st.sampled_from(["GET", "POST"]),
        label=text_values,
        tamper=st.booleans(),
        body=answers(batch.items.count()),
        posted_batch=maybe(batch_ids),
    )
    def request(method, label, tamper, body, posted_batch):
        token = link_token(batch=batch, label=label)
        if tamper:
            token = token[:-1] + "x"
        if posted_batch is not None:
            body = {**body, "batch": posted_batch}
        status = _send(client, method, _path("take", token), {}, body)
        if status >= 500:
            failures.append((method, label[:40], tamper, body))

    request()
    assert failures == []


def test_it_answers_every_study_request_without_a_server_error(crowd):
    batch, study = crowd
    client = Client(raise_request_exception=False)
    failures: list = []
    query = st.fixed_dictionaries(
        {
            "PROLIFIC_PID": maybe(st.one_of(st.just("p1"), text_values)),
            "STUDY_ID": maybe(st.one_of(st.just("s1"), text_values)),
            "SESSION_ID": maybe(text_values),
        }
    ).map(lambda d: {k: v for k, v in d.items() if v is not None})

    @CROWD_SETTINGS
    @given(
        method=st.sampled_from(["GET", "POST"]),
        key=st.one_of(st.just(study.key), text_values),
        query=query,
        body=answers(batch.items.count()),
        posted_batch=maybe(st.one_of(st.just(str(batch.id)), text_values)),
    )
    def request(method, key, query, body, posted_batch):
        if posted_batch is not None:
            body = {**body, "batch": posted_batch}
        status = _send(client, method, _path("study", key), query, body)
        if status >= 500:
            failures.append((method, key[:40], query, body))

    request()
    assert failures == []


def test_it_answers_every_batch_page_post_without_a_server_error(crowd, fuzz_world):
    batch, _ = crowd
    client = Client(raise_request_exception=False)
    client.force_login(fuzz_world.assessor)
    failures: list = []

    @CROWD_SETTINGS
    @given(
        method=st.sampled_from(["GET", "POST"]),
        batch_id=st.one_of(st.just(batch.id), st.integers(min_value=0, max_value=2**70)),
        body=answers(batch.items.count()),
    )
    def request(method, batch_id, body):
        status = _send(client, method, f"/crowd/batches/{batch_id}/", {}, body)
        if status >= 500:
            failures.append((method, batch_id, body))

    request()
    assert failures == []
