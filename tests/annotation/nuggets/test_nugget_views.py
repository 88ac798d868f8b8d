"""Span selection endpoints, duplicate marks, gold responses and counts: ownership, rejection, state."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import GoldResponse, Judge, Nugget, NuggetSetTurn
from annotation.nuggets.views import TURNS_PER_PAGE
from annotation.services import judge_for_assessor
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    OrganiserFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

TEXT = "  Knobby tyres grip mud. \r\nWide tyres \U0001f6b2 smooth rough trails.  "


@pytest.fixture
def setup():
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    passage = PassageFactory(collection=collection, text=TEXT)
    qrels = JudgeFactory(name="qrels")
    RelevanceJudgmentFactory(judge=qrels, turn=turn, passage_id=passage.passage_id, grade=3)
    return collection, turn, passage, qrels


def create_url(turn):
    return reverse("nuggets-create", args=[turn.collection.name, turn.turn_id])


def post_json(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_it_saves_a_span_trimmed_of_whitespace_with_its_grade(client, setup):
    collection, turn, passage, qrels = setup
    user = UserFactory()
    client.force_login(user)
    start = TEXT.index("Wide") - 1
    end = TEXT.index("trails.") + len("trails.") + 2

    response = post_json(
        client,
        create_url(turn),
        {
            "passage_id": passage.passage_id,
            "start": start,
            "end": end,
            "text": TEXT[start:end],
            "relevance_judge": qrels.pk,
        },
    )

    assert response.status_code == 201
    body = response.json()["nugget"]
    assert body["text"] == "Wide tyres \U0001f6b2 smooth rough trails."
    assert (body["start"], body["end"]) == (start + 1, end - 2)
    nugget = Nugget.objects.get()
    assert (nugget.judge, nugget.key, nugget.relevance) == (judge_for_assessor(user=user), "[1]", "3")
    assert TEXT[nugget.start : nugget.end] == nugget.text
    assert NuggetSetTurn.objects.filter(judge=nugget.judge, turn=turn).exists()


@pytest.mark.parametrize(
    ("start", "end", "text", "reason"),
    [
        (0, len(TEXT) + 1, TEXT + "x", "outside the passage"),
        (-1, 5, "x", "start: Ensure this value is greater than or equal to 0"),
        (10, 5, "x", "outside the passage"),
        (2, 8, "Kn0bby", "does not match the passage at 2-8"),
        (2, 8, "Knobb", "does not match the passage at 2-8"),
        (24, 27, " \r\n", "only whitespace"),
    ],
)
def test_it_rejects_spans_out_of_range_or_not_matching_and_saves_nothing(
    client, setup, start, end, text, reason
):
    _collection, turn, passage, _qrels = setup
    client.force_login(UserFactory())

    response = post_json(
        client, create_url(turn), {"passage_id": passage.passage_id, "start": start, "end": end, "text": text}
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert reason in response.json()["detail"]
    assert not Nugget.objects.exists()
    assert not NuggetSetTurn.objects.exists()


def test_it_rejects_a_passage_outside_the_collection(client, setup):
    _collection, turn, _passage, _qrels = setup
    other = PassageFactory(text="elsewhere")
    client.force_login(UserFactory())

    response = post_json(
        client, create_url(turn), {"passage_id": other.passage_id, "start": 0, "end": 9, "text": "elsewhere"}
    )

    assert response.status_code == 400
    assert "is not in collection" in response.json()["detail"]
    assert not Nugget.objects.exists()


def test_it_sends_anonymous_users_to_the_login_page_and_refuses_their_spans(client, setup):
    _collection, turn, passage, _qrels = setup
    page = client.get(reverse("nuggets-turn", args=[turn.collection.name, turn.turn_id]))
    create = post_json(
        client, create_url(turn), {"passage_id": passage.passage_id, "start": 2, "end": 8, "text": "Knobby"}
    )
    assert page.status_code == 302 and "/accounts/login/" in page["Location"]
    assert create.status_code == 403
    assert create.json()["code"] == "not_authenticated"
    assert not Nugget.objects.exists()


def test_it_hides_another_assessors_nuggets(client, setup):
    _collection, turn, passage, _qrels = setup
    owner = UserFactory()
    theirs = NuggetFactory(
        judge=judge_for_assessor(user=owner),
        turn=turn,
        passage_id=passage.passage_id,
        start=2,
        end=8,
        text="Knobby",
    )
    client.force_login(UserFactory())
    base = reverse("nuggets-update", args=[turn.collection.name, turn.turn_id, theirs.pk])

    update = post_json(client, base, {"start": 2, "end": 7, "text": "Knobb"})
    delete = client.post(base + "delete/")
    mark = post_json(client, base + "duplicate/", {"duplicate_of": None})
    page = client.get(reverse("nuggets-turn", args=[turn.collection.name, turn.turn_id]))

    assert (update.status_code, delete.status_code, mark.status_code) == (404, 404, 404)
    assert page.status_code == 200
    assert page.context["data"]["nuggets"] == []
    theirs.refresh_from_db()
    assert (theirs.start, theirs.end, theirs.text) == (2, 8, "Knobby")


def test_it_moves_boundaries_deletes_and_marks_duplicates_of_the_owners_nuggets(client, setup):
    _collection, turn, passage, _qrels = setup
    user = UserFactory()
    client.force_login(user)
    made = [
        post_json(
            client,
            create_url(turn),
            {"passage_id": passage.passage_id, "start": s, "end": e, "text": TEXT[s:e]},
        ).json()["nugget"]
        for s, e in [(2, 8), (2, 14), (27, 37)]
    ]
    base = reverse("nuggets-update", args=[turn.collection.name, turn.turn_id, 0])[:-2]

    moved = post_json(client, f"{base}{made[0]['id']}/", {"start": 2, "end": 20, "text": TEXT[2:20]})
    marked = post_json(client, f"{base}{made[1]['id']}/duplicate/", {"duplicate_of": made[0]["id"]})
    chained = post_json(client, f"{base}{made[2]['id']}/duplicate/", {"duplicate_of": made[1]["id"]})
    self_mark = post_json(client, f"{base}{made[0]['id']}/duplicate/", {"duplicate_of": made[0]["id"]})
    deleted = client.post(f"{base}{made[0]['id']}/delete/")

    assert moved.status_code == 200 and moved.json()["nugget"]["text"] == "Knobby tyres grip"
    assert marked.status_code == 200 and marked.json()["changed"][0]["duplicate_of"] == made[0]["id"]
    # a duplicate of a duplicate points at the original
    assert chained.status_code == 200 and chained.json()["changed"][0]["duplicate_of"] == made[0]["id"]
    assert self_mark.status_code == 400 and "itself" in self_mark.json()["detail"]
    assert deleted.status_code == 200
    assert [n["duplicate_of"] for n in deleted.json()["changed"]] == [None, None]
    assert list(Nugget.objects.order_by("key").values_list("key", "duplicate_of")) == [
        ("[2]", None),
        ("[3]", None),
    ]


def test_it_shows_passage_markup_as_text(client, setup):
    collection, turn, _passage, qrels = setup
    evil = PassageFactory(
        collection=collection, text='<script>window.pwned=1</script><img src=x onerror="alert(1)">'
    )
    RelevanceJudgmentFactory(judge=qrels, turn=turn, passage_id=evil.passage_id, grade=4)
    client.force_login(UserFactory())

    page = client.get(reverse("nuggets-turn", args=[collection.name, turn.turn_id]))

    assert page.status_code == 200
    html = page.content.decode()
    assert "<script>window.pwned" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html


def test_it_keeps_a_gold_response_draft_and_its_nuggets(client, setup):
    _collection, turn, _passage, _qrels = setup
    user = UserFactory()
    client.force_login(user)
    mine = NuggetFactory(judge=judge_for_assessor(user=user), turn=turn, text="Mine")
    url = reverse("nuggets-gold", args=[turn.collection.name, turn.turn_id])

    saved = client.post(
        url,
        {"text": " Draft text ", "nuggets": [mine.pk], "action": "draft"},
        headers={"Accept": "application/json"},
    )
    reloaded = client.get(url)

    assert saved.status_code == 200 and saved.json()["draft"] is True
    assert reloaded.context["form"].initial["text"] == " Draft text "
    response = GoldResponse.objects.get()
    assert (response.text, response.is_draft, list(response.nuggets.all())) == (" Draft text ", True, [mine])


def test_it_refuses_ticking_another_assessors_nugget_in_a_gold_response(client, setup):
    _collection, turn, _passage, _qrels = setup
    theirs = NuggetFactory(judge=judge_for_assessor(user=UserFactory()), turn=turn)
    client.force_login(UserFactory())

    response = client.post(
        reverse("nuggets-gold", args=[turn.collection.name, turn.turn_id]),
        {"text": "x", "nuggets": [theirs.pk], "action": "submit"},
        headers={"Accept": "application/json"},
    )

    assert response.status_code == 400
    assert "nuggets" in response.json()["detail"]
    assert not GoldResponse.objects.exists()


def test_it_counts_nuggets_per_turn_and_in_all(client, fixtures_dir):
    collection = CollectionFactory()
    for turn_id in ["8_5", "6_14", "4_3", "0_4"]:
        number, position = turn_id.split("_")
        TurnFactory(
            topic=TopicFactory(collection=collection, number=number), turn_id=turn_id, position=int(position)
        )
    folder = fixtures_dir / "nuggets"
    call_command(
        "import_nuggets",
        str(folder / "gold_nuggets.cone-rag.json"),
        "--collection",
        collection.name,
        "--judge",
        "human",
        "--format",
        "cone-rag",
    )
    call_command(
        "import_nuggets",
        str(folder / "gold_nuggets_deduplicated.cone-rag.json"),
        "--collection",
        collection.name,
        "--judge",
        "human-dedup",
        "--format",
        "cone-rag",
        "--dedup-of",
        "human",
    )
    texts = json.loads((folder / "gold_nuggets.cone-rag.json").read_text())
    words = [len(n["text"].split()) for turn in texts.values() for n in turn.values()]
    client.force_login(OrganiserFactory())

    # The original set, by name: the de-duplicated set's judge has nuggets on the same turns.
    human = Judge.objects.get(name="human")
    page = client.get(reverse("nuggets-stats", args=[collection.name]) + f"?judge={human.pk}")

    assert page.status_code == 200
    stats, turns = page.context["stats"], page.context["turns"]
    assert [(t.turn_id, t.nuggets, t.deduplicated) for t in turns] == [
        ("0_4", 0, 0),
        ("4_3", 1, 1),
        ("6_14", 2, 2),
        ("8_5", 4, 3),
    ]
    # The same counts, read straight from the two files.
    kept = json.loads((folder / "gold_nuggets_deduplicated.cone-rag.json").read_text())
    assert {(t.turn_id, t.nuggets, t.deduplicated) for t in turns} == {
        (turn_id, len(nuggets), len(kept.get(turn_id, {}))) for turn_id, nuggets in texts.items()
    }
    assert stats.mean_words == pytest.approx(sum(words) / len(words))
    from io import StringIO

    out = StringIO()
    call_command("nugget_stats", "--collection", collection.name, "--judge", "human", stdout=out)
    assert "8_5" in out.getvalue() and f"{sum(words) / len(words):.2f}" in out.getvalue()


def test_it_shows_assessors_only_their_own_counts(client, setup):
    collection, turn, _passage, _qrels = setup
    other = judge_for_assessor(user=UserFactory())
    NuggetFactory(judge=other, turn=turn)
    client.force_login(UserFactory())

    response = client.get(reverse("nuggets-stats", args=[collection.name]) + f"?judge={other.pk}")

    assert response.status_code == 404


def test_it_lists_collections_and_turns_to_work_on(client, setup):
    collection, turn, _passage, qrels = setup
    assert client.get(reverse("nuggets-index")).status_code == 302
    client.force_login(UserFactory())

    index = client.get(reverse("nuggets-index"))
    turns = client.get(reverse("nuggets-turns", args=[collection.name]) + f"?judge={qrels.pk}&min_grade=3")

    assert index.status_code == 200 and collection.name in index.content.decode()
    assert turns.status_code == 200
    assert [(r.turn.turn_id, r.n_relevant, r.n_nuggets) for r in turns.context["rows"]] == [
        (turn.turn_id, 1, 0)
    ]


def test_it_lists_turns_a_page_at_a_time_with_the_counts_of_that_page(client):
    collection = CollectionFactory(name="paged")
    topic = TopicFactory(collection=collection, number="1")
    turns = [TurnFactory(topic=topic, position=p) for p in range(TURNS_PER_PAGE + 3, 0, -1)]
    qrels = JudgeFactory(name="paged-qrels")
    last = max(turns, key=lambda t: t.position)
    RelevanceJudgmentFactory(judge=qrels, turn=last, passage_id="p1", grade=3)
    user = UserFactory()
    client.force_login(user)
    url = reverse("nuggets-turns", args=[collection.name])

    first = client.get(url, {"judge": qrels.pk, "min_grade": 2})
    second = client.get(url, {"judge": qrels.pk, "min_grade": 2, "page": 2})

    assert [r.turn.position for r in first.context["rows"]] == list(range(1, TURNS_PER_PAGE + 1))
    rows = [(r.turn.position, r.n_relevant) for r in second.context["rows"]]
    assert rows == [(TURNS_PER_PAGE + 1, 0), (TURNS_PER_PAGE + 2, 0), (TURNS_PER_PAGE + 3, 1)]
    page = first.content.decode()
    assert f"Turns 1–{TURNS_PER_PAGE} of {TURNS_PER_PAGE + 3}, page 1 of 2" in page
    assert f'href="?judge={qrels.pk}&amp;min_grade=2&amp;page=2#nugget-turns" rel="next"' in page


def test_it_shows_only_passages_at_or_above_the_threshold_of_the_chosen_judge(client, setup):
    collection, turn, passage, qrels = setup
    low = PassageFactory(collection=collection, text="Barely relevant passage.")
    RelevanceJudgmentFactory(judge=qrels, turn=turn, passage_id=low.passage_id, grade=1)
    other = JudgeFactory(name="another-assessor")
    RelevanceJudgmentFactory(judge=other, turn=turn, passage_id=low.passage_id, grade=4)
    client.force_login(UserFactory())
    url = reverse("nuggets-turn", args=[collection.name, turn.turn_id])

    strict = client.get(url, {"judge": qrels.pk, "min_grade": 2})
    loose = client.get(url, {"judge": qrels.pk, "min_grade": 1})
    by_other = client.get(url, {"judge": other.pk, "min_grade": 2})

    assert (strict.status_code, loose.status_code, by_other.status_code) == (200, 200, 200)
    assert [p.passage_id for p in strict.context["passages"]] == [passage.passage_id]
    # most relevant first
    assert [(p.passage_id, p.grade) for p in loose.context["passages"]] == [
        (passage.passage_id, 3),
        (low.passage_id, 1),
    ]
    assert [p.passage_id for p in by_other.context["passages"]] == [low.passage_id]
    assert set(strict.context["data"]["texts"]) == {passage.passage_id}


def test_it_says_what_to_do_when_a_turn_has_no_relevant_passage(client):
    turn = TurnFactory()
    client.force_login(UserFactory())

    page = client.get(reverse("nuggets-turn", args=[turn.collection.name, turn.turn_id]))

    assert page.status_code == 200
    assert "judge relevance first" in page.content.decode()


def test_nugget_stats_command_prints_turns_of_the_only_set_and_says_how_to_get_one(fixtures_dir):
    from io import StringIO

    from django.core.management.base import CommandError

    collection = CollectionFactory()
    with pytest.raises(CommandError, match="import_nuggets"):
        call_command("nugget_stats", "--collection", collection.name)
    for turn_id in ["8_5", "6_14", "4_3", "0_4"]:
        number, position = turn_id.split("_")
        TurnFactory(
            topic=TopicFactory(collection=collection, number=number), turn_id=turn_id, position=int(position)
        )
    source = fixtures_dir / "nuggets" / "gold_nuggets.cone-rag.json"
    call_command(
        "import_nuggets",
        str(source),
        "--collection",
        collection.name,
        "--judge",
        "human",
        "--format",
        "cone-rag",
    )
    out = StringIO()

    call_command("nugget_stats", "--collection", collection.name, stdout=out)

    rows = {line.split()[0]: line.split()[1:] for line in out.getvalue().splitlines() if line[:1].isdigit()}
    expected = {turn_id: len(nuggets) for turn_id, nuggets in json.loads(source.read_text()).items()}
    assert {turn_id: int(cells[0]) for turn_id, cells in rows.items()} == expected


def test_nugget_stats_page_queries_do_not_grow_with_a_sets_nuggets(client):
    """Which nuggets a de-duplicated set kept is read with the nuggets, not in batches of their ids."""
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection), collection=collection)
    judge = JudgeFactory(name="big-set")
    client.force_login(OrganiserFactory())
    url = reverse("nuggets-stats", args=[collection.name]) + f"?judge={judge.pk}"
    first = NuggetFactory(judge=judge, turn=turn, text="one two")
    dedup = JudgeFactory(name="big-set-dedup")
    NuggetFactory(judge=dedup, turn=turn, text="kept", original=first)

    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    kept = Nugget.objects.bulk_create(
        Nugget(judge=judge, turn=turn, key=f"[k{i}]", text="three words here") for i in range(2500)
    )
    Nugget.objects.bulk_create(
        Nugget(judge=dedup, turn=turn, key=f"[d{i}]", text="kept", original=kept[i]) for i in range(2100)
    )
    with CaptureQueriesContext(connection) as many:
        page = client.get(url)

    assert len(many) == len(few)
    stats = page.context["stats"]
    assert (stats.nuggets, stats.deduplicated) == (2501, 2101)
