"""Page fixes a new organiser asked for: styles from static sheets, honest queue and support states, the
nugget page naming the judge its counts use, no raw Python structures on pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.urls import reverse

from annotation.collection.io import passages_import, run_import
from annotation.models import (
    Collection,
    PoolEntry,
    SupportJudgment,
    Topic,
    TopicWork,
    Turn,
    WorkSlot,
)
from annotation.relevance.services import work_lease
from annotation.services import judge_for_assessor
from annotation.support.services import support_assignment_set
from judging.agreement.reports.charts import ranking_scatter
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    TurnFactory,
    UserFactory,
    relevance_campaign,
)


@pytest.fixture
def two_judges():
    collection = CollectionFactory()
    turn = TurnFactory(topic__collection=collection)
    a, b = JudgeFactory(), JudgeFactory()
    for i, (ga, gb) in enumerate([(0, 0), (1, 2), (3, 3), (4, 2)]):
        RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=f"p{i}", grade=ga)
        RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=f"p{i}", grade=gb)
    return collection


@pytest.mark.django_db
def test_the_served_campaign_report_links_its_style_sheet_and_the_file_carries_a_copy(
    client, two_judges, tmp_path
):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:agreement-campaign", args=[two_judges.name]))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'href="/static/css/report.css"' in page and "<style" not in page
    assert "javascript:" not in page
    target = tmp_path / "report.html"
    call_command(
        "campaign_report", "--collection", two_judges.name, "--output", str(target), "--resamples", "20"
    )
    written = target.read_text()
    assert "<style>" in written and "section.wide { grid-column: 1 / -1; }" in written
    assert "/static/" not in written


# --- Relevance queue ------------------------------------------------------------------------------


def _grade_unit(client, slot, grade=2):
    """Grade every pooled passage of the held copy through the passage page, as the assessor would."""
    for turn_pk in slot.unit.turn_pks:
        for index in range(PoolEntry.objects.filter(pool=slot.unit.assignment.pool, turn_id=turn_pk).count()):
            url = reverse("relevance-passage", args=[slot.pk, turn_pk, index])
            assert client.post(url, {"grade": grade, "time_spent_ms": 900}).status_code == 302


@pytest.mark.django_db
def test_the_queue_says_not_started_with_the_unit_count_before_a_unit_is_taken(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=3, n_passages=2, n_ptkb=0)
    client.force_login(alice)

    response = client.get(reverse("relevance-queue"))

    assert response.status_code == 200
    page = response.content.decode()
    assert "Not started: 3 units to take" in page
    assert "0 judged / 0 to judge" not in page
    assert f'action="{reverse("relevance-next", args=[assignment.pk])}"' in page
    assert "Take the first unit" in page
    assert not WorkSlot.objects.filter(assessor=alice).exists()


@pytest.mark.django_db
def test_the_queue_says_finished_and_offers_no_next_unit_once_every_unit_is_done(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=2, n_ptkb=0)
    client.force_login(alice)
    for _ in range(2):
        _grade_unit(client, work_lease(assignment=assignment, user=alice))
    assert WorkSlot.objects.filter(assessor=alice, completed_at__isnull=False).count() == 2

    response = client.get(reverse("relevance-queue"))

    assert response.status_code == 200
    page = response.content.decode()
    assert "<strong>Finished</strong>: you completed 2 units (4 passages judged)" in page
    assert "Get next unit" not in page
    assert reverse("relevance-next", args=[assignment.pk]) not in page


@pytest.mark.django_db
def test_the_queue_counts_the_units_left_between_units_and_waits_when_others_hold_them(client):
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=2, n_passages=1, n_ptkb=0)
    client.force_login(alice)
    _grade_unit(client, work_lease(assignment=assignment, user=alice))

    between = client.get(reverse("relevance-queue")).content.decode()
    assert "<strong>1</strong> judged / 1 to judge in your units; 1 more unit to take." in between
    assert "Get next unit" in between

    work_lease(assignment=assignment, user=bob)
    waiting = client.get(reverse("relevance-queue"))
    assert waiting.status_code == 200
    assert "No unit is free for you now" in waiting.content.decode()
    assert "Get next unit" not in waiting.content.decode()


# --- Support and PTKB -----------------------------------------------------------------------------


@pytest.fixture
def scratch(fixtures_dir):
    collection = CollectionFactory(name="rag24")
    run_import(path=fixtures_dir / "support" / "answers.jsonl", collection=collection)
    passages_import(path=fixtures_dir / "support" / "passages.jsonl", collection=collection)
    topic = Topic.objects.get(collection=collection, number="2024-1")
    return support_assignment_set(topic=topic, user=UserFactory(), condition="scratch")


def _label(client, assignment, position, label="FS"):
    url = reverse("support-unit", args=[assignment.id, position])
    assert client.post(url, {"label": label, "time_spent_ms": 800}).status_code == 302


@pytest.mark.django_db
def test_the_support_list_opens_a_partly_labelled_assignment_at_its_first_unlabelled_unit(client, scratch):
    client.force_login(scratch.user)
    assert (
        client.get(reverse("support-assignments"))
        .content.decode()
        .count(f'href="{reverse("support-unit", args=[scratch.id, 1])}"')
        == 1
    )  # Start
    _label(client, scratch, 1)
    _label(client, scratch, 3)

    response = client.get(reverse("support-assignments"))

    assert response.status_code == 200
    page = response.content.decode()
    assert f'href="{reverse("support-unit", args=[scratch.id, 2])}"' in page
    assert "Continue at unit 2" in page and "Review" not in page
    assert SupportJudgment.objects.filter(judge__user=scratch.user).count() == 2


@pytest.mark.django_db
def test_the_support_list_reviews_a_finished_assignment_from_unit_1(client, scratch):
    client.force_login(scratch.user)
    for position in range(1, 5):
        _label(client, scratch, position, "NS")

    response = client.get(reverse("support-assignments"))

    assert response.status_code == 200
    page = response.content.decode()
    assert (
        f'href="{reverse("support-unit", args=[scratch.id, 1])}" id="support-open-{scratch.id}">Review<'
        in page
    )


@pytest.mark.django_db
def test_the_ptkb_key_help_says_an_answer_moves_to_the_next_statement(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=2)
    slot = work_lease(assignment=assignment, user=alice)
    client.force_login(alice)

    response = client.get(reverse("relevance-ptkb", args=[slot.pk, slot.unit.turn_pks[0]]))

    assert response.status_code == 200
    assert "answers the highlighted statement and moves to the next one" in response.content.decode()


# --- Nugget pages ---------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("query", [{}, {"min_grade": "3"}])
def test_the_nugget_judge_selector_shows_the_judge_its_counts_use(client, query):
    alice = UserFactory(username="alice")
    turn = TurnFactory(utterance="Which tyres grip in mud?")
    own = judge_for_assessor(user=alice)  # "assessor:alice" sorts before "nist-qrels": the default
    nist = JudgeFactory(name="nist-qrels")
    for i, (own_grade, nist_grade) in enumerate([(4, 0), (3, 0), (1, 4)]):
        RelevanceJudgmentFactory(judge=own, turn=turn, passage_id=f"p{i}", grade=own_grade)
        RelevanceJudgmentFactory(judge=nist, turn=turn, passage_id=f"p{i}", grade=nist_grade)
    client.force_login(alice)

    turns = client.get(reverse("nuggets-turns", args=[turn.collection.name]), query)
    one = client.get(reverse("nuggets-turn", args=[turn.collection.name, turn.turn_id]), query)

    assert turns.status_code == 200 and one.status_code == 200
    min_grade = int(query.get("min_grade", 1))
    for page in (turns.content.decode(), one.content.decode()):
        assert f'<option value="{own.pk}" selected>{own.name}</option>' in page
        assert f'<option value="{nist.pk}">{nist.name}</option>' in page
        assert '<option value="" selected>' not in page
        assert f'name="min_grade" value="{min_grade}"' in page
    assert f"those <strong>{own.name}</strong> graded {min_grade} or higher" in turns.content.decode()
    expected = sum(1 for g in (4, 3, 1) if g >= min_grade)
    assert f"<td>{turn.utterance}</td>\n    <td>{expected}</td>" in turns.content.decode()


# --- Ranking scatter ------------------------------------------------------------------------------


def test_the_ranking_scatter_names_each_run_and_keeps_dollar_signs_as_text():
    report = {
        "runs": [
            {"run": "ikat24-bm25-monot5-gpt4o-rag-rewrite-final", "score_a": 0.31, "score_b": 0.42},
            {"run": "rag$cheap$", "score_a": 0.52, "score_b": 0.21},
        ],
        "judges": ["nist $qrels", "gpt-4o"],
        "measure": "ndcg@5",
        "kendall_tau_b": -1.0,
        "spearman_rho": -1.0,
        "n_runs": 2,
    }

    svg = ranking_scatter(report, "svg").decode()

    # matplotlib draws text as paths and keeps each string in a comment beside them.
    texts = re.findall(r"<!-- (.*?) -->", svg)
    assert "ikat24-bm25-monot5-gpt4o-ra…" in texts
    assert "rag$cheap$" in texts
    assert "ndcg@5 under nist $qrels" in texts


# --- Favicon --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_page_names_the_favicon_and_it_is_an_svg(client):
    response = client.get(reverse("login"))

    assert response.status_code == 200
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in response.content.decode()
    found = finders.find("favicon.svg")
    assert isinstance(found, str)
    assert Path(found).read_text().startswith("<svg xmlns=")


# --- No Python structures on pages ----------------------------------------------------------------

# What str() of a dict, list or model instance looks like once the template escaped it.
PYTHON_REPR = re.compile(r"\{&#x27;|\[&#x27;|&#x27;: |\{\d+: |&lt;[A-Z]\w+: [^&]*&gt;|object at 0x|QuerySet")


@pytest.mark.django_db
def test_the_demo_pages_show_no_raw_python_structures(client):
    from annotation.judge_menus import judges_with_labels

    call_command("load_demo")
    organiser = User.objects.get(username="organiser")
    demo = Collection.objects.get(name="demo")
    judges = [j.name for j in judges_with_labels(collection=demo, task="relevance")][:2]
    turn = Turn.objects.filter(collection=demo).order_by("pk").first()
    assignment = TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, topic__collection=demo).first()
    urls = [
        reverse("relevance-queue"),
        reverse("console-work", args=[demo.name]),
        reverse("support-assignments"),
        reverse("support-organise", args=[demo.name]),
        reverse("support-leaderboard", args=[demo.name]),
        reverse("support-disagreements", args=[demo.name]),
        reverse("nuggets-turns", args=[demo.name]),
        reverse("nuggets-stats", args=[demo.name]),
        reverse("nuggets-turn", args=[demo.name, turn.turn_id]),
        reverse("nuggets-gold", args=[demo.name, turn.turn_id]),
        reverse("judging:evaluation-runs", args=[demo.name]),
        reverse("judging:agreement-campaign", args=[demo.name]),
        reverse("judging:agreement-live", args=[demo.name]),
        f"{reverse('judging:agreement-report', args=[demo.name])}?task=relevance&a={judges[0]}&b={judges[1]}",
        f"{reverse('judging:agreement-ranking', args=[demo.name])}?measure=ndcg@5&a={judges[0]}&b={judges[1]}",
    ]
    pages = [(organiser, url) for url in urls]
    if assignment is not None:
        pages.append((assignment.user, reverse("support-unit", args=[assignment.id, 1])))
    for user, url in pages:
        client.force_login(user)
        response = client.get(url)
        assert response.status_code == 200, url
        # JSON handed to the page's script is data, not text on the page.
        text = re.sub(r"<script[^>]*>.*?</script>", "", response.content.decode(), flags=re.S)
        assert PYTHON_REPR.findall(text) == [], url
