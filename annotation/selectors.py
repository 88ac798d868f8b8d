"""Reads of a test collection, shaped for exports, evaluation and pages."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple, Protocol, TypeVar

from django.apps import apps
from django.contrib.auth.models import User
from django.db.models import Count, Model, QuerySet

from annotation.models import (
    AssessorPause,
    Collection,
    Judge,
    JudgeLabels,
    NuggetTurnCount,
    PassageCount,
    Pool,
    Ranking,
    RelevanceJudgment,
    Run,
    Topic,
    Turn,
    WorkSlot,
)
from core.ordering import natural_key

# Conversations a page, wherever topics are listed with their parts (the collection page shows each with its
# turns and PTKB, the API's topic list each with its PTKB): a topic carries tens of statements and turns, so
# a page of them is a fifth of a page of single rows, and a track of hundreds of topics costs one page.
TOPICS_PER_PAGE = 20


def collection_tables() -> tuple[type[Model], ...]:
    """The tables of the collection and its labels a stored report may read, and so declares for its
    fingerprint: all of annotation's but the assessors' leases and pauses, which hold no label, and the
    judges with labels, which PostgreSQL derives from the label tables (whose revisions cover it) and which
    keeps no revision of its own."""
    skipped = {WorkSlot, AssessorPause, JudgeLabels, NuggetTurnCount}
    return tuple(m for m in annotation_tables() if m not in skipped)


def annotation_tables() -> tuple[type[Model], ...]:
    """Every table of annotation's models (many-to-many ones included): what an import may write, and
    so whose statistics it refreshes (core.bulk.statistics_refresh)."""
    return tuple(apps.get_app_config("annotation").get_models(include_auto_created=True))


class HasTurnId(Protocol):
    @property
    def turn_id(self) -> str: ...


def turn_key(item: HasTurnId) -> tuple[tuple[int, int | str], ...]:
    """The sort key of anything with a turn id, listing turns as people read them: by topic number, then
    turn number ('2_2', '2_10', '10_1'), whatever order the database returns them in."""
    return natural_key(item.turn_id)


# The kinds counted on each view; passages, of which a collection may hold millions, are read from the
# counts PostgreSQL keeps (annotation/collection/passage_count.py).
COUNTED: dict[str, type[Model]] = {
    "topics": Topic,
    "turns": Turn,
    "runs": Run,
    "pools": Pool,
}


def collection_counts(*, collection_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """How many topics, turns, passages, runs and pools each collection holds.

    One grouped query per kind, each on its own table's collection index, and the kept passage counts.
    Counting them in one query with `Count(..., distinct=True)` joins the five tables, whose product grows
    as topics x turns x passages x runs x pools: at a real campaign's size that one query took 40 s.
    """
    ids = list(collection_ids)
    counts = {pk: {"topics": 0, "turns": 0, "passages": 0, "runs": 0, "pools": 0} for pk in ids}
    for kind, model in COUNTED.items():
        grouped = (
            model._default_manager.filter(collection_id__in=ids)
            .values_list("collection_id")
            .annotate(n=Count("pk"))
            .order_by()
        )
        for collection_id, n in grouped:
            counts[collection_id][kind] = n
    for collection_id, n in PassageCount.objects.filter(collection_id__in=ids).values_list(
        "collection_id", "passages"
    ):
        counts[collection_id]["passages"] = n
    return counts


def assessor_judge(user: User) -> Judge | None:
    """The judge that records the user's labels, or None while they have given none.

    For pages and reads: looking never creates a judge (an organiser who only visits assessor pages
    gets no empty `assessor:<name>` judge); writes create it through services.judge_for_assessor.
    Read through the user's `judge` relation, so a second call in one request costs no query.
    """
    try:
        return user.judge
    except Judge.DoesNotExist:
        return None


_M = TypeVar("_M", bound=Model)


class UnknownTopics(ValueError):
    """Some topics named by number are not in the collection; the message names them."""


def topics_named(*, collection: Collection, numbers: Iterable[str] | None = None) -> list[Topic]:
    """The collection's topics named by number (all of them when `numbers` is None), by number as people
    read it (2 before 10)."""
    topics = _named(
        Topic.objects.filter(collection=collection),
        key="number",
        names=numbers,
        unknown=lambda missing: UnknownTopics(f"no topic {missing} in collection {collection.name}"),
    )
    return sorted(topics, key=lambda t: natural_key(t.number))


class UnknownTurns(ValueError):
    """Some turns named by id are not in the collection; the message names them."""


def turns_named(*, collection: Collection, turn_ids: Iterable[str] | None = None) -> list[Turn]:
    """The collection's turns named by id (all of them when `turn_ids` is None), in reading order."""
    turns = _named(
        Turn.objects.filter(collection=collection).select_related("topic"),
        key="turn_id",
        names=turn_ids,
        unknown=lambda missing: UnknownTurns(f"no turn {missing} in collection {collection.name}"),
    )
    return sorted(turns, key=turn_key)


def _named(
    queryset: QuerySet[_M], *, key: str, names: Iterable[str] | None, unknown: Callable[[str], Exception]
) -> list[_M]:
    """The rows of `queryset` whose field `key` is one of `names` (typed: spaces stripped, blanks and
    repeats dropped), or every row when `names` is None; `unknown` of the first 20 names not found is
    raised when any is missing."""
    if names is None:
        return list(queryset)
    wanted = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    found = {getattr(row, key): row for row in queryset.filter(**{f"{key}__in": wanted})}
    missing = [n for n in wanted if n not in found]
    if missing:
        raise unknown(", ".join(missing[:20]))
    return list(found.values())


class TurnPlaces(NamedTuple):
    """The collection's turns in reading order, as arrays a query joins on (`unnest(...) WITH ORDINALITY`
    would lose the ties): turn pks, their ids, and each one's place, equal for ids that read the same."""

    pks: list[int]
    turn_ids: list[str]
    places: list[int]


def turns_in_reading_order(*, collection: Collection) -> QuerySet[Turn]:
    """The collection's turns as people read them (`natural_key` of their ids: '2_2', '2_10', '10_1'),
    ordered by the database on the kept reading order, so that a page of them reads only its slice. Ids
    that read the same ('1-2' and '1_2') keep the order they were made in."""
    return Turn.objects.filter(collection=collection).order_by("reading_order", "id")


def turn_places(*, collection: Collection) -> TurnPlaces:
    """Every turn of the collection with its place in reading order, so that an export orders its rows by
    turn in the database and streams them instead of sorting them all in Python."""
    turns = turns_in_reading_order(collection=collection).values_list("pk", "turn_id", "reading_order")
    pks: list[int] = []
    turn_ids: list[str] = []
    places: list[int] = []
    previous: bytes | None = None
    for index, (pk, turn_id, order) in enumerate(turns):
        order = bytes(order)
        places.append(places[-1] if order == previous else index)
        pks.append(pk)
        turn_ids.append(turn_id)
        previous = order
    return TurnPlaces(pks, turn_ids, places)


def qrels_dict(*, collection: Collection, judge: Judge) -> dict[str, dict[str, int]]:
    """{turn id: {passage id: grade}}, the shape ir_measures and pytrec_eval take."""
    qrels: dict[str, dict[str, int]] = {}
    for turn_id, passage_id, grade in RelevanceJudgment.objects.filter(
        judge=judge, turn__collection=collection
    ).values_list("turn__turn_id", "passage_id", "grade"):
        qrels.setdefault(turn_id, {})[passage_id] = grade
    return qrels


def qrels_by_judge(
    *, collection: Collection, judges: Iterable[Judge]
) -> dict[int, dict[str, dict[str, int]]]:
    """{judge id: `qrels_dict`} of several judges in one query (empty for a judge without labels)."""
    judges = list(judges)
    qrels: dict[int, dict[str, dict[str, int]]] = {judge.id: {} for judge in judges}
    for judge_id, turn_id, passage_id, grade in (
        RelevanceJudgment.objects.filter(judge__in=judges, turn__collection=collection)
        .values_list("judge_id", "turn__turn_id", "passage_id", "grade")
        .iterator(chunk_size=5000)
    ):
        qrels[judge_id].setdefault(turn_id, {})[passage_id] = grade
    return qrels


def runs_dict(
    *, runs: Iterable[Run], depth: int | None = None, turn_ids: Iterable[str] | None = None
) -> dict[int, dict[str, dict[str, float]]]:
    """{run pk: {turn id: {passage id: score}}} of several runs in one query (a query per run made the
    pages that score every run grow with the number of runs)."""
    result: dict[int, dict[str, dict[str, float]]] = {}
    rankings = Ranking.objects.filter(run__in=[run.pk for run in runs])
    if turn_ids is not None:
        rankings = rankings.filter(turn__turn_id__in=list(turn_ids))
    for run_pk, turn_id, passage_ids, scores in rankings.values_list(
        "run_id", "turn__turn_id", "passage_ids", "scores"
    ).iterator(chunk_size=2000):
        if depth is not None:
            passage_ids, scores = passage_ids[:depth], scores[:depth]
        result.setdefault(run_pk, {})[turn_id] = dict(
            zip(passage_ids, (float(s) for s in scores), strict=True)
        )
    return result
