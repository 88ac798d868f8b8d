import pytest
from django.urls import reverse

from tests.factories import UserFactory


@pytest.mark.django_db
def test_it_sends_anonymous_users_to_login(client):
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


@pytest.mark.django_db
def test_it_shows_home_to_a_signed_in_user(client):
    client.force_login(UserFactory())
    assert client.get(reverse("home")).status_code == 200
