import pytest

from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_logs_in_and_out_through_the_real_form(page, login):
    UserFactory(username="carol")
    login("carol")
    assert page.locator(".who").inner_text() == "carol"
    page.click("#logout")
    page.wait_for_url("**/accounts/login/")
