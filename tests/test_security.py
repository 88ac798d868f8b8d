"""Production safety: no start on a public key, a Content-Security-Policy, throttles on login and the API,
health probes, and a database outage answered as 503 instead of a 500 page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import OperationalError
from rest_framework.throttling import SimpleRateThrottle

from tests.factories import UserFactory

REPO = Path(__file__).resolve().parent.parent
DEVELOPMENT_KEY = "django-insecure-assay-development-key-" + "x" * 30


def _settings_import(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; print('up')",
        ],
        cwd=REPO,
        env=clean | {"DJANGO_SETTINGS_MODULE": "assay.settings"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("key", [None, "", DEVELOPMENT_KEY])
def test_it_refuses_to_start_with_debug_off_and_no_real_key(key):
    result = _settings_import(**({} if key is None else {"SECRET_KEY": key}), DEBUG="0")
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set" in result.stderr
    assert "up" not in result.stdout


STRONG_KEY = "a-strong-test-key-" + "0123456789abcdefghijklmnopqrstuvwxyz"


def test_it_starts_with_debug_on_and_no_key_or_with_a_real_key():
    assert _settings_import(DEBUG="1").stdout.strip() == "up"
    assert _settings_import(DEBUG="0", SECRET_KEY=STRONG_KEY).stdout.strip() == "up"


@pytest.mark.parametrize(
    "key", ["a", "k" * 60, "short-but-varied-0123456789", "django-insecure-" + "x1y2z3" * 10]
)
def test_it_refuses_to_start_with_debug_off_on_a_weak_key(key):
    result = _settings_import(DEBUG="0", SECRET_KEY=key)
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is weak" in result.stderr


@pytest.mark.parametrize("debug", ["0", "1"])
def test_it_refuses_the_development_key_among_the_fallbacks(debug):
    result = _settings_import(DEBUG=debug, SECRET_KEY=STRONG_KEY, SECRET_KEY_FALLBACKS=DEVELOPMENT_KEY)
    assert result.returncode != 0
    assert "SECRET_KEY_FALLBACKS holds the public development key" in result.stderr


def test_it_refuses_a_weak_fallback_with_debug_off_and_takes_a_strong_one():
    weak = _settings_import(DEBUG="0", SECRET_KEY=STRONG_KEY, SECRET_KEY_FALLBACKS="old")
    assert weak.returncode != 0
    assert "SECRET_KEY_FALLBACKS holds a weak key" in weak.stderr
    strong = _settings_import(DEBUG="0", SECRET_KEY=STRONG_KEY, SECRET_KEY_FALLBACKS=STRONG_KEY[::-1])
    assert strong.stdout.strip() == "up"


# --- Content-Security-Policy ------------------------------------------------------------------------


def test_pages_carry_a_policy_that_allows_only_our_own_scripts(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    policy = dict(
        part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";") if part.strip()
    )
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["default-src"] == "'self'"
    assert policy["object-src"] == "'none'"


@pytest.mark.django_db
def test_it_sends_no_policy_with_the_assessor_json_but_a_report_only_one_when_configured(client, settings):
    from rest_framework.authtoken.models import Token

    from tests.factories import relevance_campaign

    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    headers = {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=alice).key}"}
    url = f"/relevance/api/{assignment.pk}/next/"

    plain = client.post(url, content_type="application/json", **headers)
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"default-src": ["'self'"]}}
    reported = client.post(url, content_type="application/json", **headers)

    assert (plain.status_code, reported.status_code) == (200, 200)
    assert plain.json()["passage_id"] == reported.json()["passage_id"]
    assert "Content-Security-Policy" not in plain
    assert "Content-Security-Policy-Report-Only" not in plain
    assert "Content-Security-Policy" not in reported
    assert reported["Content-Security-Policy-Report-Only"] == "default-src 'self'"


def test_no_template_carries_an_inline_script_or_event_handler():
    """The policy refuses inline scripts; a template that has one would silently stop working."""
    offenders = []
    for template in (REPO / "templates").rglob("*.html"):
        text = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and "application/json" not in tag:
                offenders.append(f"{template.relative_to(REPO)}: {tag}")
        offenders += [
            f"{template.relative_to(REPO)}: {m}" for m in re.findall(r"<[^>]*\son[a-z]+\s*=[^>]*>", text)
        ]
    assert offenders == []


def test_no_template_carries_an_inline_style():
    """style-src refuses inline styles: a <style> block or style= attribute in any template, the crowd worker
    page and the jobs list included, would silently stop applying. Styles live in static/ sheets."""
    offenders = []
    for template in sorted((REPO / "templates").rglob("*.html")):
        text = template.read_text()
        offenders += [f"{template.relative_to(REPO)}: {m}" for m in re.findall(r"<style\b[^>]*>", text)]
        offenders += [
            f"{template.relative_to(REPO)}: {m}" for m in re.findall(r"<[^>]*\sstyle\s*=[^>]*>", text)
        ]
    assert offenders == []


@pytest.mark.django_db
def test_the_api_docs_load_their_script_from_our_origin(client):
    client.force_login(UserFactory(is_staff=True))
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert re.search(r"<script>\s*\S", page.content.decode()) is None  # no inline script body
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert "SwaggerUIBundle" in script.content.decode()


# --- Throttles --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_login_answers_429_after_too_many_wrong_passwords(client, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    UserFactory(username="alice")
    for _ in range(2):
        wrong = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
        assert wrong.status_code == 200
    # The failure that reaches the limit is answered with the lockout page, and so is the right password.
    assert client.post("/accounts/login/", {"username": "alice", "password": "nope"}).status_code == 429
    refused = client.post("/accounts/login/", {"username": "alice", "password": "pw-for-tests-123"})
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= settings.LOGIN_FAILURE_WINDOW
    assert b"Too many failed log-ins" in refused.content
    assert "_auth_user_id" not in client.session
    # Another user name from the same address is not locked out by alice's failures.
    UserFactory(username="bob")
    ok = client.post("/accounts/login/", {"username": "bob", "password": "pw-for-tests-123"})
    assert ok.status_code == 302


@pytest.mark.django_db
def test_login_succeeds_below_the_limit(client, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    UserFactory(username="carol")
    client.post("/accounts/login/", {"username": "carol", "password": "nope"})
    ok = client.post("/accounts/login/", {"username": "carol", "password": "pw-for-tests-123"})
    assert ok.status_code == 302
    assert client.session["_auth_user_id"]


@pytest.mark.django_db
def test_the_token_api_answers_429_past_the_rate(monkeypatch):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "2/minute"})
    token = Token.objects.create(user=UserFactory())
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert [api.get("/api/collections/").status_code for _ in range(3)] == [200, 200, 200]
    limited = api.get("/api/collections/")
    assert limited.status_code == 429
    assert int(limited["Retry-After"]) > 0
    assert "throttled" in limited.json()["detail"].lower()


# --- Probes and a database outage -------------------------------------------------------------------


@pytest.mark.django_db
def test_health_and_readiness(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"database": "ok", "tasks": "ok"}


@pytest.mark.django_db
def test_liveness_does_not_touch_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert client.get("/healthz").status_code == 200


@pytest.mark.django_db
def test_readiness_says_the_database_is_down(client, monkeypatch):
    from assay import health

    def refused(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(health.connection, "cursor", refused)
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["checks"]["database"].startswith("error: OperationalError")
    assert ready["Retry-After"]


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


OUTAGE_SCRIPT = """
import django, json
django.setup()
from django.test import Client
client = Client(raise_request_exception=False)
# A signed-in browser: reading its session needs the database.
client.cookies["sessionid"] = "s" * 32
token = {"Authorization": "Token " + "0" * 40}
out = {}
for name, path, headers in [
    ("api", "/api/collections/", token),
    ("grade", "/relevance/api/work/1/grade/", token),
    ("progress", "/judging/jobs/1/progress.json", {}),
    ("page", "/", {}),
]:
    r = client.post(path, headers=headers) if name == "grade" else client.get(path, headers=headers)
    out[name] = [r.status_code, r.get("Content-Type"), r.get("Retry-After"), r.content.decode()[:2000]]
print(json.dumps(out))
"""


def test_a_database_that_is_down_answers_503_json_to_the_api_and_a_retry_page_to_people():
    import json

    env = {k: v for k, v in os.environ.items()} | {
        "DJANGO_SETTINGS_MODULE": "assay.settings",
        "DATABASE_URL": f"postgres://assay@127.0.0.1:{_closed_port()}/assay",
        "DB_POOL_TIMEOUT": "1",
        "LOG_LEVEL": "CRITICAL",
    }
    result = subprocess.run(
        [sys.executable, "-c", OUTAGE_SCRIPT], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    for name in ("api", "grade", "progress"):
        status, content_type, retry_after, body = out[name]
        assert (status, content_type, retry_after) == (503, "application/json", "5"), (name, out[name])
        assert json.loads(body)["retry_after"] == 5
        assert json.loads(body)["code"] == "database_unavailable"
    status, content_type, retry_after, body = out["page"]
    assert (status, retry_after) == (503, "5")
    assert content_type.startswith("text/html")
    assert "back in a moment" in body
