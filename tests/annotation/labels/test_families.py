"""Each label family declares itself once (annotation/<family>/family.py), and the declarations hold
together: every family package is listed, every task's rows and scale are readable."""

from pathlib import Path

import pytest
from django.apps import apps

from annotation.families import FAMILIES, FILE_KINDS, LABEL_TASKS, label_task
from tests.factories import CollectionFactory

REPO = Path(__file__).resolve().parents[3]


def test_every_family_package_is_declared_once():
    declared = [family.name for family in FAMILIES]
    # annotation/labels/family.py is the type every declaration is made of, not a family.
    packages = sorted(
        path.parent.name for path in (REPO / "annotation").glob("*/family.py") if path.parent.name != "labels"
    )
    assert sorted(declared) == packages
    assert len(set(declared)) == len(declared)


def test_task_names_are_unique_across_families():
    names = [task.name for family in FAMILIES for task in family.tasks]
    assert len(names) == len(set(names)) == len(LABEL_TASKS)


def test_every_task_model_is_a_registered_annotation_model():
    registered = set(apps.get_app_config("annotation").get_models())
    assert {task.model for task in LABEL_TASKS.values()} <= registered


def test_a_scale_names_each_of_its_values():
    for task in LABEL_TASKS.values():
        if task.agreement is not None:
            scale = task.agreement.scale
            assert len(scale.values) == len(scale.names) == len(set(scale.values)), task.name


def test_hybrid_defaults_are_measures_the_task_accepts():
    for task in LABEL_TASKS.values():
        if task.hybrid is not None and not task.hybrid.any_measure:
            assert task.hybrid.default in task.hybrid.measures, task.name


@pytest.mark.django_db
def test_every_task_reads_its_rows_and_agreement_columns_on_a_collection():
    collection = CollectionFactory()
    for task in LABEL_TASKS.values():
        rows = task.rows(collection)
        assert list(rows) == []
        if task.agreement is not None:
            agreement = task.agreement
            assert list(rows.values_list("judge_id", *agreement.unit, agreement.topic, agreement.label)) == []


def test_an_unknown_task_names_the_tasks_there_are():
    with pytest.raises(ValueError, match="choose one of relevance, ptkb"):
        label_task("nope")


def test_every_file_offered_as_a_download_names_the_task_whose_judges_it_offers():
    exported = {kind: file.task for kind, file in FILE_KINDS.items() if file.exporter is not None}

    assert exported and all(task in LABEL_TASKS for task in exported.values()), exported
