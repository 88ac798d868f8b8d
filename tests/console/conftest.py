"""The console's fixtures: a collection to work on (the signed-in organiser is tests/conftest.py's)."""

import pytest

from tests.factories import CollectionFactory


@pytest.fixture
def collection():
    return CollectionFactory(name="camp")
