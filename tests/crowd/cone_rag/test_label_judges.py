"""import_cone_rag_labels writes as a crowd judge: never into an assessor's labels, nor under a name kept for
assessors or one pages cannot address."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Judge, NtrJudgment
from tests.factories import AssessorJudgeFactory, CollectionFactory, JudgeFactory

pytestmark = pytest.mark.django_db

LABELS = Path(__file__).resolve().parents[3] / "fixtures" / "crowd" / "labels.cone-rag.tsv"


@pytest.fixture
def collection():
    JudgeFactory(name="gold-human")
    return CollectionFactory(name="cone")


def import_labels(judge: str) -> str:
    out = StringIO()
    call_command(
        "import_cone_rag_labels",
        str(LABELS),
        collection="cone",
        nugget_judge="gold-human",
        judge=judge,
        alias=["A=alpha-run"],
        stdout=out,
    )
    return out.getvalue()


def test_it_refuses_an_assessors_judge(collection):
    bob = AssessorJudgeFactory(user__username="bob")

    with pytest.raises(
        CommandError, match="judge 'assessor:bob' is an assessor: writing as it would replace"
    ):
        import_labels("assessor:bob")

    assert not NtrJudgment.objects.filter(judge=bob).exists()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("assessor:carol", "judge names starting with 'assessor:' are kept for assessors"),
        ("crowd/majority", "a judge name is at most .* without '/'"),
        ("=crowd", "starts with '=', which a spreadsheet reads as a formula"),
    ],
)
def test_it_refuses_a_new_name_it_may_not_create(collection, name, message):
    with pytest.raises(CommandError, match=message):
        import_labels(name)

    assert not Judge.objects.filter(name=name).exists()
