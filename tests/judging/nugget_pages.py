"""What every nugget page test checks the same way: organisers only, and the form alone until the choices
are made."""

from __future__ import annotations

from django.urls import reverse

from tests.factories import UserFactory


def assert_organisers_only(client, url: str, query: dict[str, str]) -> None:
    """An anonymous user is sent to log in and an assessor is refused, with a query that would show data."""
    anonymous = client.get(url, query)
    client.force_login(UserFactory())
    assessor = client.get(url, query)

    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    assert assessor.status_code == 403


def assert_form_only(response, *, result: str, judge_name: str) -> None:
    """The page shows its form, whose menu offers the judge, and no `result` yet."""
    assert response.status_code == 200
    assert result not in response.context
    assert f'<option value="{judge_name}">' in response.content.decode()
