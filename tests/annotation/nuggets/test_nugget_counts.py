"""The nugget sets' counts per judge and turn, kept by PostgreSQL with the nuggets and the sets' turns: true
after every kind of write, words counted as Python counts them, rebuilt when the triggers are (re)installed,
and what the counts page shows a page of turns at a time."""

from __future__ import annotations

import sys

import pytest
from django.db import connection
from django.urls import reverse

from annotation.models import Nugget, NuggetSetTurn, NuggetTurnCount
from annotation.nuggets.counts import PREFIX, nugget_counts_install
from annotation.nuggets.views import TURNS_PER_PAGE
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    OrganiserFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db

FIGURES = ("covered", "nuggets", "words", "unmarked", "derived", "derived_unmarked")


def _kept() -> dict[tuple[int, int], tuple]:
    """The kept rows that count something (a row at zero stays and counts for nothing)."""
    return {
        (row[0], row[1]): row[2:]
        for row in NuggetTurnCount.objects.values_list("judge_id", "turn_id", *FIGURES)
        if row[2] or row[3]
    }


def _counted() -> dict[tuple[int, int], tuple]:
    """The same figures counted in Python from the nuggets and the sets' turns."""
    derived = set(Nugget.objects.filter(original__isnull=False).values_list("original_id", flat=True))
    counts: dict[tuple[int, int], list] = {}
    for judge_id, turn_id in NuggetSetTurn.objects.values_list("judge_id", "turn_id"):
        counts[(judge_id, turn_id)] = [True, 0, 0, 0, 0, 0]
    for pk, judge_id, turn_id, text, duplicate_of in Nugget.objects.values_list(
        "pk", "judge_id", "turn_id", "text", "duplicate_of_id"
    ):
        row = counts.setdefault((judge_id, turn_id), [False, 0, 0, 0, 0, 0])
        row[1] += 1
        row[2] += len(text.split())
        row[3] += duplicate_of is None
        row[4] += pk in derived
        row[5] += pk in derived and duplicate_of is None
    return {pair: tuple(row) for pair, row in counts.items()}


@pytest.fixture
def turns():
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection)
    return [TurnFactory(topic=topic, position=p) for p in (1, 2)]


def test_it_follows_every_writer_of_nuggets_and_set_turns(turns):
    first, second = turns
    human, dedup = JudgeFactory(name="human"), JudgeFactory(name="human-dedup")
    a = NuggetFactory(judge=human, turn=first, text="one two three")
    b = NuggetFactory(judge=human, turn=first, text="four")
    Nugget.objects.bulk_create(
        [Nugget(judge=human, turn=second, key=f"[b{k}]", text="bulk words") for k in range(3)]
    )
    NuggetSetTurn.objects.create(judge=human, turn=second, position=1)
    assert _kept() == _counted()

    # Marked a duplicate; then a de-duplicated set derived from the set keeps one nugget.
    b.duplicate_of = a
    b.save()
    kept = NuggetFactory(judge=dedup, turn=first, text="one two three", original=a)
    assert _kept() == _counted()
    assert _kept()[(human.pk, first.pk)] == (False, 2, 4, 1, 1, 1)

    # A text edited (rag lists' bulk_update), a derived nugget gone, a nugget deleted with its mark.
    b.text = "four five six"
    Nugget.objects.bulk_update([b], ["text"])
    kept.delete()
    assert _kept()[(human.pk, first.pk)] == (False, 2, 6, 1, 0, 0)
    a.delete()
    Nugget.objects.filter(turn=second).update(turn=first)
    NuggetSetTurn.objects.filter(judge=human).delete()

    assert _kept() == _counted()
    assert _kept() == {(human.pk, first.pk): (False, 4, 9, 4, 0, 0)}


def test_it_counts_words_as_python_splits_them(turns):
    spaces = "".join(chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace())
    text = " a" + "b".join(spaces) + "\u200b c "  # a zero-width space is no whitespace to Python
    judge = JudgeFactory()

    NuggetFactory(judge=judge, turn=turns[0], text=text)

    assert NuggetTurnCount.objects.get(judge=judge).words == len(text.split())


def test_installing_the_triggers_again_counts_every_set_afresh(turns):
    judge = JudgeFactory()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER {PREFIX}_nugget_insert ON {Nugget._meta.db_table}")
    NuggetFactory(judge=judge, turn=turns[0], text="two words")
    assert _kept() == {}

    assert nugget_counts_install() is True

    assert _kept() == _counted() == {(judge.pk, turns[0].pk): (False, 1, 2, 1, 0, 0)}
    assert nugget_counts_install() is False  # in place: nothing to do
    NuggetFactory(judge=judge, turn=turns[1], text="three more words")
    assert _kept() == _counted()


def test_the_counts_page_shows_a_set_in_all_and_a_page_of_its_turns(client):
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection, number="1")
    judge = JudgeFactory(name="paged-set")
    for position in range(TURNS_PER_PAGE + 2, 0, -1):
        NuggetFactory(judge=judge, turn=TurnFactory(topic=topic, position=position), text="a b")
    client.force_login(OrganiserFactory())
    url = reverse("nuggets-stats", args=[collection.name])

    first = client.get(url, {"judge": judge.pk})
    second = client.get(url, {"judge": judge.pk, "page": 2})

    assert (first.status_code, second.status_code) == (200, 200)
    assert [t.turn_id for t in second.context["turns"]] == [
        f"1_{TURNS_PER_PAGE + 1}",
        f"1_{TURNS_PER_PAGE + 2}",
    ]
    assert [t.turn_id for t in first.context["turns"]][:3] == ["1_1", "1_2", "1_3"]
    stats = first.context["stats"]
    assert (stats.n_turns, stats.nuggets, stats.mean_words) == (TURNS_PER_PAGE + 2, TURNS_PER_PAGE + 2, 2.0)
    page = first.content.decode()
    assert f"Turns 1–{TURNS_PER_PAGE} of {TURNS_PER_PAGE + 2}, page 1 of 2" in page
    assert f'href="?judge={judge.pk}&amp;page=2#nugget-stats" rel="next"' in page
