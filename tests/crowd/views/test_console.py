"""The organiser's crowd pages: who may open them, composing a campaign, links, actions, and the fixes to
the campaign page (median time, fee, judge name, escaped names)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.urls import resolve, reverse

from annotation.models import Judge
from crowd.campaigns.services import campaign_create
from crowd.errors import CrowdError
from crowd.models import CrowdAssignment, CrowdCampaign
from crowd.providers.links.selectors import link_from_token
from tests.crowd.crowd_helpers import build_campaign, compose_collection
from tests.factories import (
    OrganiserFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def platform_campaign():
    return build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=2)


def _pages(campaign: CrowdCampaign) -> list[str]:
    return [
        reverse("crowd:campaigns"),
        reverse("crowd:campaign-new"),
        reverse("crowd:campaign", args=[campaign.name]),
        reverse("crowd:campaign-links", args=[campaign.name]),
    ]


ACTIONS = ["aggregate", "studies", "qualification", "publish", "sync", "review", "bonus", "extend", "expire"]


def _action_url(campaign: CrowdCampaign, action: str) -> str:
    name = "crowd:campaign-study" if action == "studies" else f"crowd:campaign-{action}"
    return reverse(name, args=[campaign.name])


# --- who may open them -----------------------------------------------------------------------------


def test_anonymous_users_are_sent_to_the_login_page_not_the_admin(client, platform_campaign):
    for url in _pages(platform_campaign):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url
    for action in ACTIONS:
        assert client.post(_action_url(platform_campaign, action), {}).status_code == 302


def test_assessors_get_the_403_page_with_the_site_navigation(client, platform_campaign):
    client.force_login(UserFactory())
    for url in _pages(platform_campaign):
        response = client.get(url)
        assert response.status_code == 403, url
        assert 'id="nav-assessor"' in response.content.decode()
    for action in ACTIONS:
        assert client.post(_action_url(platform_campaign, action), {"confirm": "on"}).status_code == 403
    assert not platform_campaign.studies.exists()


def test_organisers_open_every_crowd_page(client, platform_campaign):
    client.force_login(OrganiserFactory())
    for url in _pages(platform_campaign):
        assert client.get(url).status_code == 200, url


def test_actions_take_only_posts(client, platform_campaign):
    client.force_login(OrganiserFactory())
    for action in ACTIONS:
        assert client.get(_action_url(platform_campaign, action)).status_code == 405


# --- the campaign list and names ----------------------------------------------------------------------


def test_the_campaign_list_shows_every_campaign_with_its_counts(client, platform_campaign):
    mturk = build_campaign()
    client.force_login(OrganiserFactory())
    response = client.get("/crowd/campaigns/")
    assert response.status_code == 200
    html = response.content.decode()
    assert reverse("crowd:campaign", args=[platform_campaign.name]) in html
    assert reverse("crowd:campaign", args=[mturk.name]) in html
    assert "crowd-majority" in html and "mturk-majority" in html


def test_a_campaign_named_like_markup_does_not_break_the_pages(client, platform_campaign):
    # Stored before names were checked (or through the admin): the pages still work and escape it.
    CrowdCampaign.objects.filter(pk=platform_campaign.pk).update(name="<svg onload=alert(1)>")
    client.force_login(OrganiserFactory())
    for url in ["/crowd/", "/crowd/campaigns/", reverse("crowd:campaign", args=["<svg onload=alert(1)>"])]:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "<svg" not in html and "&lt;svg onload=alert(1)&gt;" in html


def test_compose_refuses_a_name_that_is_not_a_slug():
    campaign = build_campaign()
    for name in ("<svg onload=alert(1)>", "a b", "a/b", "new", "x" * 101):
        with pytest.raises(CrowdError):
            campaign_create(
                collection=campaign.collection,
                name=name,
                nugget_judge=campaign.nugget_judge,
                turns=[],
                runs=[],
            )
    assert CrowdCampaign.objects.count() == 1


# --- composing from the page -------------------------------------------------------------------------


def test_the_compose_form_offers_only_judges_with_nuggets_in_the_collection(client):
    compose_collection()
    client.force_login(OrganiserFactory())
    response = client.get(reverse("crowd:campaign-new"), {"collection": "demo"})
    assert response.status_code == 200
    choices = [str(j) for j in response.context["form"].fields["nugget_judge"].queryset]
    assert choices == ["demo-gold"]


def test_organisers_compose_an_in_platform_campaign_from_the_page(client):
    collection, gold = compose_collection()
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("crowd:campaign-new"),
        {
            "collection": "demo",
            "name": "web-crowd",
            "provider": "platform",
            "nugget_judge": "demo-gold",
            "seed": 1,
            "batch_size": 3,
            "tests_per_batch": 1,
            "assignments": 2,
            "generate_tests": 4,
            "reward": "0.50",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("crowd:campaign", args=["web-crowd"])
    campaign = CrowdCampaign.objects.get(name="web-crowd")
    assert (campaign.collection, campaign.nugget_judge, campaign.label_judge.name) == (
        collection,
        gold,
        "crowd-majority",
    )
    assert campaign.label_judge.kind == Judge.Kind.CROWD
    assert campaign.turns.count() == 2 and campaign.runs.count() == 2
    assert campaign.batches.count() == 3  # 2 turns x 2 runs x 2 nuggets = 8 pairs, 3 per batch


def test_organisers_compose_over_the_turns_they_name_and_an_unknown_turn_is_refused(client):
    collection, _gold = compose_collection()
    first = collection.turns.order_by("pk").first()
    client.force_login(OrganiserFactory())
    post = {
        "collection": "demo",
        "provider": "platform",
        "nugget_judge": "demo-gold",
        "seed": 1,
        "batch_size": 3,
        "tests_per_batch": 0,
        "assignments": 2,
        "generate_tests": 0,
        "reward": "0.50",
    }

    page = client.get(reverse("crowd:campaign-new"), {"collection": "demo"}).content.decode()
    refused = client.post(
        reverse("crowd:campaign-new"), {**post, "name": "bad", "turns": f"{first.turn_id} 99_9"}
    )
    named = client.post(reverse("crowd:campaign-new"), {**post, "name": "one-turn", "turns": first.turn_id})

    nul = client.post(reverse("crowd:campaign-new"), {**post, "name": "nul", "turns": "1_1\x00"})
    assert nul.status_code == 400 and "Null characters are not allowed" in nul.content.decode()
    # A box to type turn ids in, not a choice of every turn of the collection.
    assert '<textarea name="turns"' in page and "<option" not in page.split('name="turns"')[1][:200]
    assert refused.status_code == 400
    assert "no turn 99_9 in collection demo" in refused.content.decode()
    assert named.status_code == 302
    assert list(CrowdCampaign.objects.get(name="one-turn").turns.all()) == [first]


def test_a_bad_compose_answers_400_with_the_reason_and_creates_nothing(client):
    compose_collection()
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("crowd:campaign-new"),
        {
            "collection": "demo",
            "name": "<svg onload=alert(1)>",
            "provider": "platform",
            "nugget_judge": "demo-gold",
            "seed": 1,
            "batch_size": 3,
            "tests_per_batch": 1,
            "assignments": 2,
            "generate_tests": 0,
            "reward": "0.50",
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "<svg" not in html
    assert "letters, numbers, underscores or hyphens" in html
    assert not CrowdCampaign.objects.exists()

    # A test question pool without yes and no answers is the service's refusal, shown on the page.
    response = client.post(
        reverse("crowd:campaign-new"),
        {
            "collection": "demo",
            "name": "no-tests",
            "provider": "platform",
            "nugget_judge": "demo-gold",
            "seed": 1,
            "batch_size": 3,
            "tests_per_batch": 1,
            "assignments": 2,
            "generate_tests": 0,
            "reward": "0.50",
        },
    )
    assert response.status_code == 400
    assert "needs at least one yes and one no question" in response.content.decode()
    assert not CrowdCampaign.objects.exists()


def test_the_command_names_the_crowd_judge_by_provider():
    campaign = build_campaign()
    call_command(
        "crowd_compose",
        campaign="cmd-platform",
        collection=campaign.collection.name,
        nugget_judge=campaign.nugget_judge.name,
        provider="platform",
        tests_per_batch=0,
    )
    assert CrowdCampaign.objects.get(name="cmd-platform").label_judge.name == "crowd-majority"
    assert campaign.label_judge.name == "mturk-majority"


# --- the campaign page --------------------------------------------------------------------------------


def _answer_by_link(client, campaign, *, seconds_each: float):
    links = client.get(reverse("crowd:campaign-links", args=[campaign.name])).context["links"]
    worker = type(client)()
    for _index, _label, url in links[:2]:
        page = worker.get(url)
        assert page.status_code == 200
        total = page.context["total"]
        fields = {f"q{n}": "yes" for n in range(1, total + 1)}
        fields.update({f"ms{n}": str(int(seconds_each * 1000)) for n in range(1, total + 1)})
        assert worker.post(url, fields).status_code == 200


def test_an_in_platform_campaign_shows_its_median_seconds_and_no_mturk_fee(client, platform_campaign):
    client.force_login(OrganiserFactory())
    _answer_by_link(client, platform_campaign, seconds_each=1.5)
    response = client.get(reverse("crowd:campaign", args=[platform_campaign.name]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "MTurk fee" not in html
    workers = response.context["report"].workers
    assert [w.median_seconds for w in workers] == [9.0, 9.0]  # 6 questions x 1.5 s
    assert "<td>9.0</td>" in html


def test_the_links_page_gives_working_links_at_the_served_address_and_a_tsv(client, platform_campaign):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("crowd:campaign-links", args=[platform_campaign.name]))
    assert response.status_code == 200
    links = response.context["links"]
    assert len(links) == 2 * 2  # two batches, two places each
    assert all(url.startswith("http://testserver/crowd/take/") for _, _, url in links)
    tsv = client.get(reverse("crowd:campaign-links", args=[platform_campaign.name]), {"format": "tsv"})
    assert tsv.status_code == 200
    assert tsv["Content-Type"].startswith("text/tab-separated-values")
    assert tsv.content.decode().splitlines()[0] == "batch\tworker\turl"
    assert (
        client.get(
            reverse("crowd:campaign-links", args=[platform_campaign.name]), {"prefix": "=x"}
        ).status_code
        == 400
    )


def test_the_links_page_shows_a_page_of_batches_and_the_tsv_every_link(
    client, platform_campaign, monkeypatch
):
    monkeypatch.setattr("crowd.views.console.LINK_BATCHES_PER_PAGE", 1)
    client.force_login(OrganiserFactory())
    url = reverse("crowd:campaign-links", args=[platform_campaign.name])

    second = client.get(url, {"page": 2})
    tsv = client.get(url, {"format": "tsv"}).content.decode().splitlines()

    indexes = sorted({index for index, _label, _url in second.context["links"]})
    assert len(second.context["links"]) == 2 and indexes == [
        platform_campaign.batches.order_by("index")[1].index
    ]
    assert 'id="links-pages"' in second.content.decode()
    assert len(tsv) == 1 + 2 * 2
    # Each address is the link-take route of a token naming its batch and place.
    for index, label, address in second.context["links"]:
        match = resolve(urlsplit(address).path)
        batch, taken = link_from_token(match.kwargs["token"])
        assert (match.view_name, batch.index, taken) == ("crowd:link-take", index, label)


def test_aggregating_from_the_page_stores_labels_of_the_crowd_judge(client, platform_campaign):
    client.force_login(OrganiserFactory())
    _answer_by_link(client, platform_campaign, seconds_each=1)
    response = client.post(_action_url(platform_campaign, "aggregate"), {"min_votes": 1}, follow=True)
    assert response.status_code == 200
    assert "labels as crowd-majority" in response.content.decode()
    assert platform_campaign.label_judge.name == "crowd-majority"
    assert platform_campaign.label_judge.ntrjudgments.count() > 0


def test_an_mturk_action_on_an_in_platform_campaign_is_refused_with_the_reason(client, platform_campaign):
    client.force_login(OrganiserFactory())
    response = client.post(_action_url(platform_campaign, "publish"), {"publish-confirm": "on"}, follow=True)
    assert response.status_code == 200
    assert "is in the platform, not on MTurk" in response.content.decode()
    assert not platform_campaign.batches.exclude(hit_id="").exists()


# --- MTurk from the page, against the local fake ----------------------------------------------------


def test_organisers_run_an_mturk_campaign_from_its_page(client, fake_mturk):
    from urllib.parse import parse_qs, urlsplit

    campaign = build_campaign(assignments=1)
    client.force_login(OrganiserFactory())
    page = client.get(reverse("crowd:campaign", args=[campaign.name]))
    assert 'id="mturk-target">MTurk: <strong>local</strong>' in page.content.decode()

    # Destructive actions need the box ticked.
    refused = client.post(_action_url(campaign, "publish"), {})
    assert refused.status_code == 400
    assert not fake_mturk.state.hits

    response = client.post(_action_url(campaign, "publish"), {"publish-confirm": "on"})
    assert response.status_code == 302
    batches = list(campaign.batches.order_by("index"))
    for batch in batches:
        batch.refresh_from_db()
        assert batch.hit_id in fake_mturk.state.hits
    page = client.get(reverse("crowd:campaign", args=[campaign.name])).content.decode()
    assert f"/worker/frame?hitId={batches[0].hit_id}&amp;workerId=DEMO1" in page

    # One worker per HIT answers on MTurk (the fake), everything right.
    for batch in batches:
        framed = urlsplit(fake_mturk.fake.worker_accept(batch.hit_id, "W1"))
        assignment_id = parse_qs(framed.query)["assignmentId"][0]
        answers = {
            f"q{item.position + 1}": "yes" if (not item.is_test or item.test_question.answer) else "no"
            for item in batch.items.select_related("test_question")
        }
        fake_mturk.fake.external_submit({"assignmentId": assignment_id, **answers})

    response = client.post(_action_url(campaign, "sync"), {}, follow=True)
    assert "2 assignments seen on MTurk, 2 stored" in response.content.decode()
    assert CrowdAssignment.objects.filter(batch__campaign=campaign).count() == 2

    response = client.post(_action_url(campaign, "review"), {"review-confirm": "on"}, follow=True)
    assert "2 approved, 0 rejected" in response.content.decode()
    assert {a["AssignmentStatus"] for a in fake_mturk.state.assignments.values()} == {"Approved"}

    response = client.post(
        _action_url(campaign, "bonus"),
        {"bonus-amount": "0.10", "bonus-reason": "Careful work", "bonus-confirm": "on"},
        follow=True,
    )
    assert "2 bonuses paid, 0.20 USD" in response.content.decode()
    assert len(fake_mturk.state.bonuses) == 2

    response = client.post(_action_url(campaign, "expire"), {"expire-confirm": "on"}, follow=True)
    assert "2 HITs expired" in response.content.decode()
    assert set(campaign.batches.values_list("status", flat=True)) == {"expired"}
    report = client.get(reverse("crowd:campaign", args=[campaign.name]))
    assert "MTurk fee" in report.content.decode()
