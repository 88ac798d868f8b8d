"""Gold response drafts in real Chromium: autosaved while typing, still there after a reload."""

from __future__ import annotations

import pytest

from annotation.models import GoldResponse
from annotation.services import judge_for_assessor
from tests.factories import NuggetFactory, TurnFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_autosaves_a_draft_that_survives_a_reload(page, login):
    user = UserFactory(username="gia")
    turn = TurnFactory()
    nugget = NuggetFactory(judge=judge_for_assessor(user=user), turn=turn, text="UVB rays burn the skin.")
    login("gia")
    page.goto(f"/nuggets/{turn.collection.name}/{turn.turn_id}/gold/")

    page.check(f"input[name=nuggets][value='{nugget.pk}']")
    page.fill("#id_text", "UVB rays burn <b>the</b> skin.")
    page.wait_for_function(
        "() => document.getElementById('gold-status').textContent.startsWith('Draft saved')"
    )
    page.reload()

    assert page.input_value("#id_text") == "UVB rays burn <b>the</b> skin."
    assert page.is_checked(f"input[name=nuggets][value='{nugget.pk}']")
    response = GoldResponse.objects.get()
    assert (response.is_draft, list(response.nuggets.all())) == (True, [nugget])
