import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from annotation.models import WorkSlot, WorkUnit
from tests.factories import OrganiserFactory, UserFactory, relevance_campaign

pytestmark = pytest.mark.django_db

OUR_APPS = {"annotation", "judging", "crowd", "console"}


def test_every_model_of_ours_has_an_admin():
    missing = [
        f"{m._meta.app_label}.{m.__name__}"
        for m in apps.get_models()
        if m._meta.app_label in OUR_APPS and m not in admin.site._registry
    ]
    assert missing == []


def test_every_changelist_opens_and_searches():
    superuser = OrganiserFactory(is_superuser=True)
    from django.test import Client

    client = Client()
    client.force_login(superuser)
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label not in OUR_APPS:
            continue
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        query = "?q=x" if model_admin.search_fields else ""
        response = client.get(url + query)
        assert response.status_code == 200, url


def test_every_annotation_changelist_but_collections_has_filters():
    # Collections have no field worth filtering by; every other list is filtered by collection, run or judge.
    unfiltered = [
        model.__name__
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label == "annotation"
        and model.__name__ != "Collection"
        and not model_admin.list_filter
    ]
    assert unfiltered == []


def test_a_work_slot_saved_in_the_admin_takes_its_units_assignment_and_position(admin_client):
    assignment = relevance_campaign(assessors=[UserFactory()], n_turns=2, n_passages=1, n_ptkb=0)
    slot = WorkSlot.objects.get(unit__position=0)
    other = WorkUnit.objects.get(assignment=assignment, position=1)
    WorkSlot.objects.filter(unit=other).delete()
    url = reverse("admin:annotation_workslot_change", args=[slot.pk])

    response = admin_client.post(
        url,
        {
            "unit": other.pk,
            "copy": 0,
            "assessor": "",
            "leased_until_0": "",
            "leased_until_1": "",
            "started_at_0": "",
            "started_at_1": "",
            "completed_at_0": "",
            "completed_at_1": "",
        },
    )

    assert response.status_code == 302
    slot.refresh_from_db()
    assert (slot.unit_id, slot.assignment_id, slot.position) == (other.pk, assignment.pk, 1)


def test_it_names_the_work_models_with_the_glossarys_words(client):
    client.force_login(OrganiserFactory(is_superuser=True))

    response = client.get(reverse("admin:annotation_workslot_changelist"))

    assert response.status_code == 200
    assert "Select copy to change" in response.content.decode()
    assert (WorkUnit._meta.verbose_name, WorkSlot._meta.verbose_name_plural) == ("unit", "copies")
    assert WorkSlot._meta.get_field("leased_until").verbose_name == "lease ends"
