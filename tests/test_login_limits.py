"""One failed-log-in limit over every way in (site log-in, admin log-in, API token, invitation links), per
user name as Django's log-in reads it and per client address, with the address from the proxy's header
only when the request comes from a trusted proxy; a clear lockout page; organisers unlock from People."""

from __future__ import annotations

import ipaddress

import pytest
from axes.models import AccessAttempt
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.throttling import SimpleRateThrottle

from assay.env import env_networks
from console.people.services import invitation_path, person_create
from tests.factories import OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-123"  # UserFactory's
PROXY = "127.0.0.1"


@pytest.fixture
def limits(settings):
    """Small limits, so that a test reaches them in a few requests."""
    settings.LOGIN_FAILURE_LIMIT = 3
    settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS = 5
    settings.LOGIN_FAILURE_WINDOW = 900
    return settings


@pytest.fixture
def behind_proxy(settings):
    settings.TRUSTED_PROXIES = (ipaddress.ip_network(PROXY),)
    return settings


def _site_login(client, username: str, password: str, **extra):
    return client.post(reverse("login"), {"username": username, "password": password}, **extra)


def _admin_login(client, username: str, password: str, **extra):
    return client.post(
        "/admin/login/", {"username": username, "password": password, "next": "/admin/"}, **extra
    )


def _token(client, username: str, password: str, **extra):
    return client.post(
        reverse("api-token"),
        {"username": username, "password": password},
        content_type="application/json",
        **extra,
    )


def _via(forwarded_for: str) -> dict[str, str]:
    """A request as the proxy passes it on: from the proxy, the client's address in X-Forwarded-For."""
    return {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": forwarded_for}


def _from(address: str) -> dict[str, str]:
    return {"REMOTE_ADDR": address}


def test_it_locks_the_admin_login_after_the_limit(client, limits):
    UserFactory(username="root", is_staff=True, is_superuser=True)

    wrong = [_admin_login(client, "root", "guess").status_code for _ in range(2)]
    locking = _admin_login(client, "root", "guess")
    right = _admin_login(client, "root", PASSWORD)

    assert wrong == [200, 200]
    assert locking.status_code == 429
    assert right.status_code == 429
    assert 0 < int(right["Retry-After"]) <= 900
    assert b"Too many failed log-ins" in right.content
    assert "_auth_user_id" not in client.session
    assert AccessAttempt.objects.get(username="root").failures_since_start == 3


def test_it_counts_site_admin_and_api_token_failures_toward_one_limit(client, limits):
    UserFactory(username="alice", is_staff=True)

    site = _site_login(client, "alice", "guess-1")
    admin = _admin_login(client, "alice", "guess-2")
    api = _token(client, "alice", "guess-3")
    after = _token(client, "alice", PASSWORD)

    assert (site.status_code, admin.status_code) == (200, 200)
    assert api.status_code == 429
    assert after.status_code == 429
    assert 0 < int(after["Retry-After"]) <= 900
    assert "unlock" in after.json()["detail"]
    assert after.json()["code"] == "locked_out"
    assert after.json()["retry_after"] == int(after["Retry-After"])
    assert not Token.objects.filter(user__username="alice").exists()


def test_it_gives_a_token_for_a_right_password(client, limits):
    alice = UserFactory(username="alice")

    wrong = _token(client, "alice", "guess")
    right = _token(client, "alice", PASSWORD)

    assert wrong.status_code == 400
    assert "non_field_errors" in wrong.json()["fields"]
    assert right.status_code == 200
    assert right.json() == {"token": Token.objects.get(user=alice).key}


def test_it_counts_invitation_links_that_do_not_work_toward_the_same_limit(client, limits):
    ivy = person_create(username="ivy")
    uidb64, token = invitation_path(user=ivy)
    bad = [client.get(reverse("console-welcome", args=[uidb64, f"{token}x{n}"])) for n in range(2)]
    _site_login(client, "ivy", "guess")  # the third failure, on another way in

    refused = client.get(reverse("console-welcome", args=[uidb64, token]))

    assert [page.status_code for page in bad] == [200, 200]
    assert all(b'id="welcome-invalid"' in page.content for page in bad)
    assert refused.status_code == 429
    assert b"Too many failed log-ins" in refused.content
    assert "Retry-After" in refused
    assert AccessAttempt.objects.filter(username="ivy").count() == 1


def test_a_link_outside_the_links_alphabet_is_not_found_and_not_counted(client, limits):
    answer = client.get("/welcome/MQ%00/abc-123/")

    assert answer.status_code == 404
    assert not AccessAttempt.objects.exists()


def test_a_working_invitation_link_is_no_failure(client, limits):
    ivy = person_create(username="ivy")

    page = client.get(reverse("console-welcome", args=invitation_path(user=ivy)), follow=True)

    assert page.status_code == 200
    assert b'id="welcome-username">ivy<' in page.content
    assert not AccessAttempt.objects.exists()


def test_it_counts_an_nfkc_spelling_of_a_name_as_the_name(client, limits):
    UserFactory(username="alice")

    # Django's log-in form turns each of these into "alice" before it looks the account up.
    for n, spelling in enumerate(["ａlice", "ａｌｉｃｅ", " alice "]):
        _site_login(client, spelling, "guess", **_from(f"198.51.100.{n + 1}"))
    refused = _site_login(client, "alice", PASSWORD, **_from("203.0.113.7"))

    assert refused.status_code == 429
    assert "_auth_user_id" not in client.session
    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {"alice"}


def test_it_keeps_case_apart_as_the_account_lookup_does(client, limits):
    UserFactory(username="alice")

    for _ in range(3):
        _site_login(client, "ALICE", "guess", **_from("198.51.100.1"))
    ok = _site_login(client, "alice", PASSWORD, **_from("203.0.113.7"))

    assert ok.status_code == 302
    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {"ALICE"}


def test_fifty_made_up_names_behind_the_proxy_do_not_lock_out_a_real_user(client, settings, behind_proxy):
    settings.LOGIN_FAILURE_LIMIT = 10
    settings.LOGIN_FAILURE_LIMIT_PER_ADDRESS = 50
    UserFactory(username="alice")

    guesses = [_site_login(client, f"made-up-{n}", "guess", **_via("198.51.100.66")) for n in range(50)]
    attacker = _site_login(client, "alice", PASSWORD, **_via("198.51.100.66"))
    alice = _site_login(client, "alice", PASSWORD, **_via("203.0.113.7"))

    assert [g.status_code for g in guesses[:49]] == [200] * 49
    assert guesses[49].status_code == 429  # the attacker's own address reached its limit
    assert attacker.status_code == 429
    assert alice.status_code == 302
    assert not AccessAttempt.objects.filter(username="alice").exists()
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.66"}


def test_it_reads_the_address_the_proxy_appended_not_the_one_the_client_wrote(client, limits, behind_proxy):
    UserFactory(username="alice")

    # The client sends its own X-Forwarded-For; the proxy appends the address it saw.
    for n in range(5):
        _site_login(client, f"made-up-{n}", "guess", **_via(f"10.9.9.{n}, 198.51.100.66"))
    ok = _site_login(client, "alice", PASSWORD, **_via("10.9.9.9, 203.0.113.7"))

    assert ok.status_code == 302
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.66"}


def test_it_ignores_a_forwarded_for_from_an_address_that_is_no_proxy(client, limits, behind_proxy):
    UserFactory(username="alice")
    outsider = "203.0.113.5"

    guesses = [
        _site_login(
            client, f"made-up-{n}", "guess", REMOTE_ADDR=outsider, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}"
        )
        for n in range(5)
    ]
    fresh_header = _site_login(
        client, "alice", PASSWORD, REMOTE_ADDR=outsider, HTTP_X_FORWARDED_FOR="198.51.100.200"
    )

    assert [g.status_code for g in guesses] == [200, 200, 200, 200, 429]
    assert fresh_header.status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {outsider}


def test_the_api_counts_signed_out_clients_by_address_whatever_header_they_forge(client, monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "100/minute", "anon": "2/minute"})

    answers = [
        client.post(
            reverse("api-token"), {}, REMOTE_ADDR="203.0.113.5", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}"
        )
        for n in range(3)
    ]

    assert [a.status_code for a in answers] == [400, 400, 429]


def test_the_lockout_page_says_when_to_try_again_and_who_can_unlock(client, limits):
    UserFactory(username="alice")
    for _ in range(3):
        _site_login(client, "alice", "guess")

    page = _site_login(client, "alice", PASSWORD)
    again = _site_login(client, "alice", "guess")

    assert page.status_code == 429
    html = page.content.decode()
    assert 840 < int(page["Retry-After"]) <= 900
    assert 'id="login-locked-until"' in html and " UTC" in html
    assert "in about 15 minutes" in html
    assert "An organiser can unlock it sooner, from the People page" in html
    assert 'class="topbar"' in html  # the site's own page, not axes' bare text
    # Tries while locked do not push the end further away.
    assert int(again["Retry-After"]) <= int(page["Retry-After"])
    assert AccessAttempt.objects.get(username="alice").failures_since_start == 3


def _lock_alice(client) -> None:
    UserFactory(username="alice")
    for _ in range(3):
        _site_login(client, "alice", "guess", **_from("198.51.100.1"))
    for n in range(5):
        _site_login(client, f"made-up-{n}", "guess", **_from("198.51.100.2"))


def test_an_organiser_sees_the_locks_on_the_people_page_and_unlocks_a_name(client, limits):
    _lock_alice(client)
    client.force_login(OrganiserFactory())

    page = client.get(reverse("console-people"))
    unlocked = client.post(reverse("console-login-unlock"), {"kind": "name", "value": "alice"}, follow=True)
    client.logout()
    login = _site_login(client, "alice", PASSWORD, **_from("203.0.113.7"))

    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-lock="name:alice"' in html
    assert 'data-lock="address:198.51.100.2"' in html
    assert 'data-lock="name:made-up-0"' not in html  # one failure is no lock
    assert unlocked.status_code == 200
    assert [str(m) for m in unlocked.context["messages"]] == [
        "User name alice is unlocked: its failed log-ins are forgotten."
    ]
    assert 'data-lock="name:alice"' not in unlocked.content.decode()
    assert login.status_code == 302
    assert not AccessAttempt.objects.filter(username="alice").exists()


def test_an_organiser_unlocks_an_address(client, limits):
    _lock_alice(client)
    client.force_login(OrganiserFactory())

    unlocked = client.post(reverse("console-login-unlock"), {"kind": "address", "value": "198.51.100.2"})

    assert unlocked.status_code == 302
    assert not AccessAttempt.objects.filter(ip_address="198.51.100.2").exists()
    assert AccessAttempt.objects.filter(username="alice").exists()


def test_an_unlock_with_no_value_forgets_nothing(client, limits):
    _lock_alice(client)
    client.force_login(OrganiserFactory())

    empty = client.post(reverse("console-login-unlock"), {"kind": "name", "value": "  "}, follow=True)
    not_an_address = client.post(
        reverse("console-login-unlock"), {"kind": "address", "value": "x"}, follow=True
    )

    assert (empty.status_code, not_an_address.status_code) == (200, 200)
    assert "Nothing unlocked" in str(list(empty.context["messages"])[0])
    assert "not an IP address" in str(list(not_an_address.context["messages"])[0])
    assert AccessAttempt.objects.count() == 6


def test_only_organisers_unlock(client, limits):
    _lock_alice(client)

    anonymous = client.post(reverse("console-login-unlock"), {"kind": "name", "value": "alice"})
    client.force_login(UserFactory(username="bob"))
    assessor = client.post(reverse("console-login-unlock"), {"kind": "name", "value": "alice"})

    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("login"))
    assert assessor.status_code == 403
    assert AccessAttempt.objects.filter(username="alice").exists()


def test_an_unlock_needs_the_csrf_token(client, limits):
    _lock_alice(client)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(OrganiserFactory())

    refused = strict.post(reverse("console-login-unlock"), {"kind": "name", "value": "alice"})

    assert refused.status_code == 403
    assert AccessAttempt.objects.filter(username="alice").exists()


def test_it_reads_trusted_proxies_as_addresses_or_networks_and_refuses_anything_else(monkeypatch):
    monkeypatch.setenv("TRUSTED_PROXIES", "127.0.0.1, 10.0.0.0/8,::1")
    read = env_networks("TRUSTED_PROXIES")
    monkeypatch.setenv("TRUSTED_PROXIES", "127.0.0.1,proxy.example.org")

    assert read == (
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
    )
    with pytest.raises(ImproperlyConfigured, match="TRUSTED_PROXIES must list IP addresses or networks"):
        env_networks("TRUSTED_PROXIES")
    monkeypatch.delenv("TRUSTED_PROXIES")
    assert env_networks("TRUSTED_PROXIES") == ()
