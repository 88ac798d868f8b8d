"""A chosen key past the database's integers is a form error, not a 500 (found by tests/fuzz): Django's
ModelMultipleChoiceField looked it up with `pk__in`, which SQLite cannot bind."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from annotation.models import TopicWork
from console.forms import SupportWorkForm
from core.form_fields import ModelMultipleChoiceField
from tests.factories import CollectionFactory, OrganiserFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

TOO_LARGE = ["999999999999999999999999999999", str(2**63), str(-(2**63) - 1)]


@pytest.mark.parametrize("key", TOO_LARGE)
def test_it_refuses_support_work_for_an_assessor_key_past_the_databases_integers(key):
    collection = CollectionFactory(name="c1")
    TopicFactory(collection=collection)
    alice = UserFactory(username="alice")
    client = Client()
    client.force_login(OrganiserFactory())

    response = client.post(
        reverse("console-work", args=["c1"]),
        {"form": "support", "assessors": [alice.pk, key], "condition": "scratch"},
    )

    assert response.status_code == 400
    assert f"“{key}” is not a valid value." in response.content.decode()
    assert not TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).exists()


@pytest.mark.parametrize("key", TOO_LARGE)
def test_it_refuses_an_assessor_key_past_the_databases_integers(key):
    collection = CollectionFactory(name="c1")
    form = SupportWorkForm({"assessors": [key], "condition": "scratch"}, collection=collection)

    assert not form.is_valid()
    assert form.errors["assessors"] == [f"“{key}” is not a valid value."]


def test_it_still_chooses_keys_in_range_and_refuses_unknown_ones():
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    field = ModelMultipleChoiceField(queryset=get_user_model().objects.all())

    assert set(field.clean([str(alice.pk), str(bob.pk)])) == {alice, bob}
    with pytest.raises(ValidationError, match="not one of the available choices"):
        field.clean([str(bob.pk + 1000)])
    with pytest.raises(ValidationError, match="is not a valid value"):
        field.clean(["²"])
