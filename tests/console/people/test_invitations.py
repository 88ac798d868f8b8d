"""Invitations on the People page: a pending invitation's link can be renewed (the new link works, every
earlier one stops working) or revoked (no link activates the account), and the welcome page says whose
account it is. Who may post is pinned by tests/console/test_organiser_pages.py."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from console.people.services import invitation_path
from tests.factories import OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db

NEW_PASSWORD = {"new_password1": "a-new-secret-77", "new_password2": "a-new-secret-77"}


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def _link(response) -> str:
    [message] = _messages(response)
    return message.rsplit(": ", 1)[1]


def _invite(client, username: str = "ivy") -> str:
    return _link(
        client.post(reverse("console-people"), {"username": username, "role": "assessor"}, follow=True)
    )


def _renew(client, username: str = "ivy"):
    return client.post(reverse("console-invitation-renew", args=[username]), follow=True)


def _welcome(client, link: str):
    """The page a link opens, as its owner sees it (signed out): Django moves the token into the session."""
    client.logout()
    return client.get(link, follow=True)


def test_it_renews_an_invitation_and_the_old_link_stops_working(client):
    organiser = OrganiserFactory()
    client.force_login(organiser)
    old = _invite(client)

    renewed = _renew(client)
    new = _link(renewed)
    old_page = _welcome(client, old)
    new_page = _welcome(client, new)
    done = client.post(new_page.redirect_chain[-1][0], NEW_PASSWORD)

    assert renewed.status_code == 200
    assert new != old
    assert _messages(renewed)[0].startswith("ivy is invited again. The link works once, for 3 days")
    assert old_page.status_code == 200
    assert b'id="welcome-invalid"' in old_page.content
    assert new_page.status_code == 200
    assert b'id="welcome-username">ivy<' in new_page.content
    assert done.status_code == 302
    assert (
        client.post(reverse("login"), {"username": "ivy", "password": "a-new-secret-77"}).status_code == 302
    )


def test_it_revokes_an_invitation_so_no_link_activates_the_account(client):
    client.force_login(OrganiserFactory())
    link = _invite(client)

    revoked = client.post(reverse("console-invitation-revoke", args=["ivy"]), follow=True)
    page = _welcome(client, link)
    # Even a link made now, for the inactive account, is refused.
    ivy = get_user_model().objects.get(username="ivy")
    fresh = _welcome(client, reverse("console-welcome", args=invitation_path(user=ivy)))

    assert revoked.status_code == 200
    assert _messages(revoked) == ["ivy's invitation is revoked: no link of it works any more."]
    assert b'id="welcome-invalid"' in page.content
    assert b'id="welcome-invalid"' in fresh.content
    ivy.refresh_from_db()
    assert not ivy.is_active and not ivy.has_usable_password()


def test_it_invites_a_revoked_account_again_with_a_link_that_works(client):
    client.force_login(OrganiserFactory())
    _invite(client)
    client.post(reverse("console-invitation-revoke", args=["ivy"]))

    page = client.get(reverse("console-people"))
    again = _renew(client)
    welcome = _welcome(client, _link(again))

    assert "no (invitation revoked)" in page.content.decode()
    assert "Invite again" in page.content.decode()
    assert again.status_code == 200
    assert b'id="welcome-form"' in welcome.content
    assert get_user_model().objects.get(username="ivy").is_active


def test_it_refuses_to_renew_or_revoke_an_account_that_has_a_password(client):
    client.force_login(OrganiserFactory())
    ann = UserFactory(username="ann")
    password = ann.password

    renewed = _renew(client, "ann")
    revoked = client.post(reverse("console-invitation-revoke", args=["ann"]), follow=True)

    assert renewed.status_code == 200
    assert _messages(renewed) == ["ann has chosen a password already: there is no invitation to renew"]
    assert _messages(revoked) == ["ann has chosen a password already: there is no invitation to revoke"]
    ann.refresh_from_db()
    assert ann.password == password and ann.is_active


def test_the_people_page_offers_renew_and_revoke_for_pending_invitations_only(client):
    client.force_login(OrganiserFactory(username="olga"))
    _invite(client)

    response = client.get(reverse("console-people"))

    assert response.status_code == 200
    html = response.content.decode()
    assert reverse("console-invitation-renew", args=["ivy"]) in html
    assert reverse("console-invitation-revoke", args=["ivy"]) in html
    assert reverse("console-invitation-renew", args=["olga"]) not in html
    assert "works once, for 3 days" in html


def test_renew_and_revoke_answer_only_posts(client):
    client.force_login(OrganiserFactory())
    _invite(client)
    password = get_user_model().objects.get(username="ivy").password

    assert client.get(reverse("console-invitation-renew", args=["ivy"])).status_code == 405
    assert client.get(reverse("console-invitation-revoke", args=["ivy"])).status_code == 405
    assert client.post(reverse("console-invitation-renew", args=["nobody"])).status_code == 404
    assert get_user_model().objects.get(username="ivy").password == password
