"""Disagreement study: sampled human/LLM disagreements re-assessed blind by an independent assessor."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import Judge, TopicWork
from annotation.support.disagreements import support_disagreements, support_disagreements_assign
from annotation.support.services import (
    SupportConflict,
    assignment_units,
    support_judgment_submit,
)
from judging.scores.support import support_disagreement_report
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_it_finds_the_disagreements_per_topic(study):
    found = support_disagreements(
        collection=study["collection"], human_judges=study["humans"], machine_judge=study["gpt"]
    )

    summary = {
        topic.number: sorted((d.human_label, d.machine_label, d.human_condition) for d in items)
        for topic, items in found.items()
    }
    assert summary == {
        "2024-1": [("FS", "PS", "post-edit"), ("NS", "FS", "post-edit"), ("PS", "FS", "post-edit")],
        "2024-2": [("FS", "PS", "scratch"), ("NS", "FS", "scratch")],
    }


def test_it_samples_at_most_k_per_topic_the_same_way_for_the_same_seed(study):
    carol, dave = UserFactory(username="carol"), UserFactory(username="dave")
    args = {
        "collection": study["collection"],
        "human_judges": study["humans"],
        "machine_judge": study["gpt"],
        "k": 2,
    }

    first = support_disagreements_assign(**args, assessor=carol, seed=7)
    second = support_disagreements_assign(**args, assessor=dave, seed=7)

    assert [len(a.units) for a in first] == [2, 2]
    assert [a.units for a in first] == [a.units for a in second]
    disagreeing = {
        (d.sentence_id, d.citation_index)
        for items in support_disagreements(
            collection=study["collection"], human_judges=study["humans"], machine_judge=study["gpt"]
        ).values()
        for d in items
    }
    assert {tuple(u) for a in first for u in a.units} <= disagreeing
    assert set(
        TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user=carol).values_list("condition", flat=True)
    ) == {"blind"}


def test_a_human_judge_of_the_study_is_not_independent(study):
    with pytest.raises(SupportConflict, match="not independent"):
        support_disagreements_assign(
            collection=study["collection"],
            human_judges=study["humans"],
            machine_judge=study["gpt"],
            assessor=study["alice"],
        )


def test_the_blind_page_shows_neither_label(client, study):
    carol = UserFactory(username="carol")
    assignment = support_disagreements_assign(
        collection=study["collection"],
        human_judges=study["humans"],
        machine_judge=study["gpt"],
        assessor=carol,
    )[0]
    client.force_login(carol)

    response = client.get(reverse("support-unit", args=[assignment.id, 1]))

    assert response.status_code == 200
    html = response.content.decode()
    assert "LLM label" not in html
    assert " checked" not in html


def test_it_reports_agreement_and_kappa_of_the_blind_assessor_with_each_side_per_condition(study):
    carol = UserFactory(username="carol")
    assignments = support_disagreements_assign(
        collection=study["collection"],
        human_judges=study["humans"],
        machine_judge=study["gpt"],
        assessor=carol,
    )
    blind_labels = {
        ("rag-a", "2024-1", 0): "FS",  # human FS, GPT PS
        ("rag-b", "2024-1", 0): "FS",  # human NS, GPT FS
        ("rag-b", "2024-1", 1): "PS",  # human PS, GPT FS
        ("rag-a", "2024-2", 0): "FS",  # human NS, GPT FS
        ("rag-b", "2024-2", 0): "NS",  # human FS, GPT PS
    }
    for assignment in assignments:
        for unit in assignment_units(assignment):
            key = (unit.sentence.response.run.name, unit.sentence.response.turn.turn_id, unit.sentence.index)
            support_judgment_submit(
                assignment=assignment,
                user=carol,
                sentence=unit.sentence,
                citation_index=0,
                label=blind_labels[key],
            )

    report = support_disagreement_report(
        collection=study["collection"],
        human_judges=study["humans"],
        machine_judge=study["gpt"],
        blind_judge=Judge.objects.get(user=carol),
    )

    labels = ["FS", "PS", "NS"]
    post_edit = report["post-edit"].as_dict()
    assert post_edit["units"] == 3
    assert post_edit["agrees_with_human"]["agree"] == 2
    assert post_edit["agrees_with_machine"]["agree"] == 1
    assert post_edit["agrees_with_human"]["kappa"] == pytest.approx(
        cohen_kappa_score(["FS", "FS", "PS"], ["FS", "NS", "PS"], labels=labels)
    )
    assert post_edit["agrees_with_machine"]["kappa"] == pytest.approx(
        cohen_kappa_score(["FS", "FS", "PS"], ["PS", "FS", "FS"], labels=labels)
    )
    scratch = report["scratch"].as_dict()
    assert (
        scratch["units"],
        scratch["agrees_with_human"]["agree"],
        scratch["agrees_with_machine"]["agree"],
    ) == (2, 0, 1)
    assert scratch["agrees_with_neither"] == 1
    assert report["all"].units == 5


def test_the_command_samples_then_reports(study):
    UserFactory(username="carol")
    out = StringIO()
    common = {
        "collection": "rag24",
        "human": ["assessor:alice", "assessor:bob"],
        "llm": "gpt-4o",
        "assessor": "carol",
    }

    call_command("support_disagreements", k=1, seed=3, stdout=out, **common)
    assert "2 disagreements in 2 topics assigned blind to carol" in out.getvalue()

    with pytest.raises(CommandError, match="carol has not labelled anything yet"):
        call_command("support_disagreements", report=True, **common)


def test_the_command_reports_json_per_condition(study):
    carol = UserFactory(username="carol")
    assignment = support_disagreements_assign(
        collection=study["collection"],
        human_judges=study["humans"],
        machine_judge=study["gpt"],
        assessor=carol,
        k=1,
    )[0]
    unit = assignment_units(assignment)[0]
    support_judgment_submit(
        assignment=assignment, user=carol, sentence=unit.sentence, citation_index=0, label="NS"
    )
    out = StringIO()

    call_command(
        "support_disagreements",
        collection="rag24",
        human=["assessor:alice", "assessor:bob"],
        llm="gpt-4o",
        assessor="carol",
        report=True,
        format="json",
        stdout=out,
    )

    payload = json.loads(out.getvalue())
    assert set(payload) == {"scratch", "post-edit", "all"}
    assert payload["all"]["units"] == 1
    assert payload["scratch"]["units"] + payload["post-edit"]["units"] == 1
