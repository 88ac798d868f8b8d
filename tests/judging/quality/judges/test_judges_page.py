"""The judges page: who labelled a collection, with what provenance, how much of each pool, and how far
each agrees with a reference judge; organisers only, and a query count that does not grow with the data."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import Judge, PtkbJudgment, RelevanceJudgment
from crowd.models import CrowdCampaign
from judging.models import JudgeJob
from judging.quality.judges.stored import JUDGES_PER_PAGE
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    OrganiserFactory,
    PoolEntryFactory,
    PoolFactory,
    PtkbStatementFactory,
    RelevanceJudgmentFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("reports_in_request")]


def _url(collection, **query) -> str:
    base = reverse("judging:quality-judges", args=[collection.name])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def _build(collection, *, judges: int, turns: int, pools: int) -> dict[str, Judge]:
    """`judges` judges of each kind grading `turns` turns, and `pools` pools over their pairs."""
    turn_rows = [TurnFactory(topic__collection=collection) for _ in range(turns)]
    built: dict[str, Judge] = {}
    for i in range(judges):
        assessor = AssessorJudgeFactory(user=UserFactory(username=f"{collection.name}-a{i}"))
        llm = JudgeFactory(
            name=f"{collection.name}-llm{i}", kind=Judge.Kind.LLM, model="gpt-4o", prompt_version="v2"
        )
        JudgeJob.objects.create(
            collection=collection,
            judge=llm,
            task=JudgeJob.Task.RELEVANCE,
            model="gpt-4o",
            prompt_version="v2",
            cost_usd=Decimal("0.125"),
            calls_made=3,
        )
        imported = JudgeFactory(
            name=f"{collection.name}-qrels{i}",
            kind=Judge.Kind.IMPORTED,
            description="imported from nist.qrels",
        )
        crowd = JudgeFactory(
            name=f"{collection.name}-crowd{i}", kind=Judge.Kind.CROWD, description="Dawid-Skene aggregate"
        )
        CrowdCampaign.objects.create(
            collection=collection,
            name=f"{collection.name}-campaign{i}",
            nugget_judge=imported,
            label_judge=crowd,
        )
        for turn in turn_rows:
            for judge in (assessor, llm, imported):
                RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="p1", grade=2)
            NuggetFactory(judge=crowd, turn=turn)
            statement = PtkbStatementFactory(topic=turn.topic)
            PtkbJudgment.objects.create(judge=assessor, turn=turn, statement=statement, relevant=True)
        built.update({f"assessor{i}": assessor, f"llm{i}": llm, f"imported{i}": imported, f"crowd{i}": crowd})
    for p in range(pools):
        pool = PoolFactory(collection=collection, name=f"pool{p}")
        for turn in turn_rows:
            PoolEntryFactory(pool=pool, turn=turn, passage_id="p1")
            PoolEntryFactory(pool=pool, turn=turn, passage_id="p2")
    return built


def test_it_sends_anonymous_visitors_to_the_login_page(client):
    collection = CollectionFactory()

    response = client.get(_url(collection))

    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_it_refuses_assessors(client):
    collection = CollectionFactory()
    judge = AssessorJudgeFactory()
    RelevanceJudgmentFactory(judge=judge, turn=TurnFactory(topic__collection=collection))
    client.force_login(judge.user)

    response = client.get(_url(collection))

    assert response.status_code == 403
    assert judge.name.encode() not in response.content


def test_it_shows_an_organiser_only_the_judges_of_the_collection_asked_for(client):
    # Organisers are site-wide (staff), so another collection's organiser sees this page too; what the
    # page must never do is mix in another collection's judges.
    here, elsewhere = CollectionFactory(), CollectionFactory()
    mine = JudgeFactory(name="mine")
    theirs = JudgeFactory(name="theirs")
    RelevanceJudgmentFactory(judge=mine, turn=TurnFactory(topic__collection=here))
    RelevanceJudgmentFactory(judge=theirs, turn=TurnFactory(topic__collection=elsewhere))
    client.force_login(OrganiserFactory())

    response = client.get(_url(here))
    missing = client.get(reverse("judging:quality-judges", args=["no-such-collection"]))

    assert response.status_code == 200
    assert b'data-judge="mine"' in response.content
    assert b'data-judge="theirs"' not in response.content
    assert missing.status_code == 404


def test_it_gives_each_judge_its_provenance_labels_coverage_and_downloads(client):
    collection = CollectionFactory()
    built = _build(collection, judges=1, turns=2, pools=1)
    client.force_login(OrganiserFactory())

    response = client.get(_url(collection))

    assert response.status_code == 200
    lines = {line["row"].judge.name: line for line in response.context["lines"]}
    assessor, llm = lines[built["assessor0"].name], lines[built["llm0"].name]
    imported, crowd = lines[built["imported0"].name], lines[built["crowd0"].name]
    assert assessor["row"].labels == {"relevance": 2, "ptkb": 2}
    assert imported["row"].labels == {"relevance": 2} and imported["row"].jobs is None
    assert crowd["row"].labels == {"nuggets": 2}
    assert llm["row"].jobs.models == ["gpt-4o"] and llm["row"].jobs.prompt_versions == ["v2"]
    assert llm["row"].jobs.cost_usd == Decimal("0.125")
    assert crowd["row"].campaigns == [f"{collection.name}-campaign0"]
    # Each judge graded p1 of both turns: 2 of the pool's 4 pairs.
    assert [(c.graded, c.size, c.share) for c in assessor["row"].coverage] == [(2, 4, 0.5)]
    assert [label for label, _url in assessor["downloads"]] == ["qrels", "PTKB qrels", "judgment log"]
    html = response.content.decode()
    qrels = reverse("console-export", args=[collection.name, "qrels"]) + f"?judge={built['imported0'].name}"
    assert f'href="{qrels}"' in html
    assert "cost $0.1250" in html
    assert "imported from nist.qrels" in html
    assert "Dawid-Skene aggregate" in html
    assert f"account <strong>{built['assessor0'].user.username}</strong>" in html


def test_it_measures_agreement_with_the_reference_judge_as_scikit_learn_does(client):
    collection = CollectionFactory()
    reference, other = JudgeFactory(name="nist"), JudgeFactory(name="llm")
    turn = TurnFactory(topic__collection=collection)
    ours, theirs = [0, 1, 2, 3, 4, 2, 2, 0], [0, 1, 1, 3, 4, 2, 3, 0]
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        RelevanceJudgmentFactory(judge=reference, turn=turn, passage_id=f"d{i}", grade=b)
        RelevanceJudgmentFactory(judge=other, turn=turn, passage_id=f"d{i}", grade=a)
    RelevanceJudgmentFactory(judge=other, turn=turn, passage_id="only-llm", grade=1)
    client.force_login(OrganiserFactory())

    response = client.get(_url(collection, reference="nist"))

    assert response.status_code == 200
    rows = {line["row"].judge.name: line["row"] for line in response.context["lines"]}
    agreement = rows["llm"].agreement
    assert agreement.n == 8
    assert agreement.exact == pytest.approx(6 / 8)
    assert agreement.kappa == pytest.approx(cohen_kappa_score(ours, theirs))
    assert agreement.weighted_kappa == pytest.approx(cohen_kappa_score(ours, theirs, weights="linear"))
    assert rows["nist"].agreement is None
    compare = (
        reverse("judging:agreement-report", args=[collection.name]) + "?task=relevance&amp;a=llm&amp;b=nist"
    )
    assert f'href="{compare}"' in response.content.decode()


def test_it_refuses_a_reference_without_relevance_grades_here(client):
    collection = CollectionFactory()
    RelevanceJudgmentFactory(judge=JudgeFactory(name="nist"), turn=TurnFactory(topic__collection=collection))
    JudgeFactory(name="elsewhere")
    client.force_login(OrganiserFactory())

    response = client.get(_url(collection, reference="elsewhere"))

    assert response.status_code == 400
    assert response.context["form"].errors["reference"]


def test_it_escapes_the_collections_and_judges_text(client):
    collection = CollectionFactory()
    judge = JudgeFactory(name="qrels", description="<script>alert(1)</script>")
    RelevanceJudgmentFactory(judge=judge, turn=TurnFactory(topic__collection=collection))
    client.force_login(OrganiserFactory())

    response = client.get(_url(collection))

    assert response.status_code == 200
    assert b"<script>alert(1)</script>" not in response.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in response.content


@pytest.mark.parametrize(("judges", "turns", "pools"), [(1, 1, 1), (3, 4, 3)])
def test_its_query_count_does_not_grow_with_judges_labels_or_pools(
    client, django_assert_num_queries, judges, turns, pools
):
    collection = CollectionFactory()
    built = _build(collection, judges=judges, turns=turns, pools=pools)
    client.force_login(OrganiserFactory())
    url = _url(collection, reference=built["imported0"].name)
    client.get(url)  # computes the stored report

    # Session and user, the collection, the reference menu, the revisions, the stored report, its number
    # of judges and columns, its page of judges, those judges.
    with django_assert_num_queries(9):
        response = client.get(url)

    assert response.status_code == 200
    assert len(response.context["lines"]) == 4 * judges
    assert RelevanceJudgment.objects.filter(turn__collection=collection).count() == 3 * judges * turns


def test_it_shows_the_judges_a_page_at_a_time_with_every_column_and_the_json_every_judge(client):
    collection = CollectionFactory()
    turn = TurnFactory(topic__collection=collection)
    names = [f"judge-{i:02d}" for i in range(JUDGES_PER_PAGE + 3)]
    for name in names:
        RelevanceJudgmentFactory(judge=JudgeFactory(name=name), turn=turn, passage_id="p1", grade=2)
    # Only the last judge by name has a PTKB label: its column is on every page all the same.
    last = Judge.objects.get(name=names[-1])
    PtkbJudgment.objects.create(
        judge=last, turn=turn, statement=PtkbStatementFactory(topic=turn.topic), relevant=True
    )
    client.force_login(OrganiserFactory())

    first = client.get(_url(collection))
    second = client.get(_url(collection, page=2))
    data = client.get(_url(collection, format="json")).json()

    assert [line["row"].judge.name for line in first.context["lines"]] == names[:JUDGES_PER_PAGE]
    assert [line["row"].judge.name for line in second.context["lines"]] == names[JUDGES_PER_PAGE:]
    assert [task.key for task in first.context["tasks"]] == ["relevance", "ptkb"]
    html = first.content.decode()
    assert f"{len(names)} judges with labels here" in html
    assert f"Judges 1–{JUDGES_PER_PAGE} of {len(names)}, page 1 of 2" in html
    assert 'href="?page=2#judges-table"' in html
    assert [row["id"] for row in data["judges"]] == [Judge.objects.get(name=name).pk for name in names]
    assert data["tasks"] == ["relevance", "ptkb"]
