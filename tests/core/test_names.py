"""The name rules live in the services, so every way of creating a collection or a judge refuses the
same names with the same reason."""

from __future__ import annotations

import pytest

from annotation.judge_access import ImportJudgeRefused
from annotation.models import Collection, Judge
from annotation.services import CollectionNameRefused, collection_get_or_create, judge_get_or_create
from console.services import ConsoleError, collection_create
from tests.factories import CollectionFactory

pytestmark = pytest.mark.django_db


def test_it_refuses_a_new_collection_whose_name_is_no_slug():
    with pytest.raises(CollectionNameRefused, match="'ikat 2024' is not a slug"):
        collection_get_or_create(name="ikat 2024")

    assert not Collection.objects.exists()


def test_it_returns_an_existing_collection_without_asking_its_name_again():
    existing = CollectionFactory(name="legacy name")

    assert collection_get_or_create(name="legacy name") == existing


def test_the_console_service_refuses_the_same_names():
    with pytest.raises(ConsoleError, match="is not a slug"):
        collection_create(name="a/b")

    assert not Collection.objects.exists()


@pytest.mark.parametrize("kind", [Judge.Kind.LLM, Judge.Kind.NLI, Judge.Kind.IMPORTED, Judge.Kind.ASSESSOR])
def test_it_keeps_assessor_names_for_the_assessors_own_judges(kind):
    with pytest.raises(ImportJudgeRefused, match="kept for assessors"):
        judge_get_or_create(name="assessor:carol", kind=kind)

    assert not Judge.objects.exists()


def test_it_lets_a_crowd_worker_judge_take_its_kept_name_and_nobody_else():
    with pytest.raises(ImportJudgeRefused, match="kept for one crowd worker's own votes"):
        judge_get_or_create(name="crowd-worker:w1", kind=Judge.Kind.LLM)

    worker = judge_get_or_create(name="crowd-worker:w1", kind=Judge.Kind.CROWD)

    assert Judge.objects.get().pk == worker.pk
    assert worker.kind == Judge.Kind.CROWD


@pytest.mark.parametrize("name", ["=cmd", "+1", "-x", "@sum", "=SUM(A1:A9)"])
@pytest.mark.parametrize("kind", [Judge.Kind.LLM, Judge.Kind.NLI, Judge.Kind.IMPORTED, Judge.Kind.CROWD])
def test_it_refuses_a_new_judge_name_a_spreadsheet_reads_as_a_formula(kind, name):
    with pytest.raises(ImportJudgeRefused, match="a spreadsheet reads as a formula"):
        judge_get_or_create(name=name, kind=kind)

    assert not Judge.objects.exists()


@pytest.mark.parametrize(
    "name", ["crowd-majority", "mturk-majority", "crowd-nuggets", "mturk-nuggets", "crowd-nuggets-ds"]
)
@pytest.mark.parametrize("kind", [Judge.Kind.LLM, Judge.Kind.NLI, Judge.Kind.IMPORTED])
def test_it_keeps_the_crowd_aggregates_names_for_crowd_judges(kind, name):
    with pytest.raises(ImportJudgeRefused, match="kept for crowd campaigns' aggregate labels"):
        judge_get_or_create(name=name, kind=kind)

    assert not Judge.objects.exists()
    assert judge_get_or_create(name=name, kind=Judge.Kind.CROWD).kind == Judge.Kind.CROWD


def test_it_takes_a_name_with_a_sign_or_a_kept_word_inside():
    for name in ("gpt-4o", "bm25+rm3", "a=b", "my-crowd-majority"):
        assert judge_get_or_create(name=name, kind=Judge.Kind.LLM).name == name
