"""The console's fixtures: an organiser logged in on the test client, and a collection to work on."""

import pytest

from tests.factories import CollectionFactory, OrganiserFactory


@pytest.fixture
def organiser(client):
    user = OrganiserFactory(username="olga")
    client.force_login(user)
    return user


@pytest.fixture
def collection():
    return CollectionFactory(name="camp")
