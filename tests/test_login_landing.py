"""A login without `next` lands on the person's own work, not on the organisers' home page."""

import pytest
from django.urls import reverse

from annotation.models import TopicWork
from annotation.rag_nuggets.services import nugget_work_assign
from crowd.models import CrowdWorker
from tests.annotation.rag_nuggets.data import rag_topic
from tests.factories import OrganiserFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-password-for-tests"


def _login(client, user, **query):
    user.set_password(PASSWORD)
    user.save()
    url = reverse("login") + (f"?next={query['next']}" if query else "")
    return client.post(url, {"username": user.get_username(), "password": PASSWORD})


def test_it_lands_an_assessor_on_their_relevance_queue(client):
    response = _login(client, UserFactory())
    assert response.status_code == 302
    assert response["Location"] == reverse("relevance-queue")


def test_it_lands_an_assessor_with_only_support_work_on_their_support_list(client):
    user = UserFactory()
    TopicWork.objects.create(
        kind=TopicWork.Kind.SUPPORT, topic=TopicFactory(), user=user, condition="scratch"
    )
    response = _login(client, user)
    assert response["Location"] == reverse("support-assignments")


def test_it_lands_an_assessor_with_only_nugget_work_on_their_nugget_work_list(client):
    data = rag_topic()
    user = UserFactory()
    nugget_work_assign(topic=data.topic, user=user, step="edit", source_judge=data.llm)
    response = _login(client, user)
    assert response["Location"] == reverse("rag-nuggets-work")


def test_it_lands_an_organiser_on_the_home_page(client):
    response = _login(client, OrganiserFactory())
    assert response["Location"] == reverse("home")


def test_it_lands_a_crowd_workers_account_on_the_crowd_page(client):
    user = UserFactory()
    CrowdWorker.objects.create(worker_id=f"user:{user.username}", user=user)
    response = _login(client, user)
    assert response["Location"] == reverse("crowd:home")


def test_next_still_wins(client):
    response = _login(client, UserFactory(), next=reverse("account"))
    assert response["Location"] == reverse("account")
