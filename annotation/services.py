"""Writes to a test collection. Each service is one transaction: it changes everything or nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from rest_framework.authtoken.models import Token

from annotation.formats.base import Problems
from annotation.judge_access import (
    AssessorJudgeTaken,
    ImportJudgeRefused,
    assessor_judge_refusal,
    file_judge_refusal,
    judge_name_refusal,
)
from annotation.models import (
    Collection,
    Judge,
    Turn,
)
from core.names import assessor_judge_name, collection_name_problem

# The kinds of record an import counts apart (ImportResult.kinds); pages show them by these names.
TOPICS, TURNS, PTKB_STATEMENTS = "topics", "turns", "PTKB statements"
PASSAGES, RANKINGS, RESPONSES, JUDGMENTS = "passages", "rankings", "responses", "judgments"


OUTCOMES = ("created", "updated", "unchanged", "deleted")


@dataclass
class KindCounts:
    """What an import did to the records of one kind (topics, turns, PTKB statements, ...)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged" + (
            f", {self.deleted} deleted" if self.deleted else ""
        )


@dataclass
class ImportResult(KindCounts):
    """What an import changed; an import of a file already loaded reports zeros.

    The fields are totals over every kind of record the file holds. A service whose file holds several
    kinds counts each with `count`, so a topics file reports its topics, turns and PTKB statements apart
    instead of one sum that reads as a number of topics.
    """

    kinds: dict[str, KindCounts] = field(default_factory=dict)

    def count(self, kind: str, outcome: str, n: int = 1) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r}")
        setattr(self, outcome, getattr(self, outcome) + n)
        counts = self.kinds.setdefault(kind, KindCounts())
        setattr(counts, outcome, getattr(counts, outcome) + n)

    def by_kind(self, default: str = "records") -> dict[str, KindCounts]:
        """Counts per kind; what was counted only in the totals is reported under `default`."""
        rows = {kind: KindCounts(**vars(counts)) for kind, counts in self.kinds.items()}
        rest = KindCounts(
            *(getattr(self, o) - sum(getattr(c, o) for c in self.kinds.values()) for o in OUTCOMES)
        )
        if any(vars(rest).values()) or not rows:
            rows.setdefault(default, KindCounts())
            for outcome in OUTCOMES:
                setattr(rows[default], outcome, getattr(rows[default], outcome) + getattr(rest, outcome))
        return rows

    def __str__(self) -> str:
        if not self.kinds:
            return super().__str__()
        return "; ".join(f"{kind}: {counts}" for kind, counts in self.by_kind().items())


class CollectionNameRefused(ValueError):
    """A new collection may not have the name asked for; the message says why (core.names)."""


def collection_get_or_create(*, name: str, description: str = "") -> Collection:
    """The collection named `name`, created if new; a new one's name must pass
    core.names.collection_name_problem, whichever command, page or script asks."""
    existing = Collection.objects.filter(name=name).first()
    if existing is not None:
        return existing
    problem = collection_name_problem(name)
    if problem:
        raise CollectionNameRefused(problem)
    collection, _ = Collection.objects.get_or_create(name=name, defaults={"description": description})
    return collection


def judge_get_or_create(
    *,
    name: str,
    kind: str = Judge.Kind.IMPORTED,
    model: str = "",
    prompt_version: str = "",
    description: str = "",
    user: User | None = None,
) -> Judge:
    """The judge named `name`, created as `kind` if new. Every judge made from a name someone gave (an
    import, a job, a crowd campaign or label file) comes here, so the rule of
    annotation.judge_access.judge_name_refusal holds on every path: ImportJudgeRefused says why not."""
    existing = Judge.objects.filter(name=name).first()
    refusal = judge_name_refusal(name, kind=kind, existing=existing)
    if refusal:
        raise ImportJudgeRefused(refusal)
    if existing is not None:
        return existing
    judge, _ = Judge.objects.get_or_create(
        name=name,
        defaults={
            "kind": kind,
            "model": model,
            "prompt_version": prompt_version,
            "description": description,
            "user": user,
        },
    )
    return judge


def import_judge_get_or_create(
    *, name: str, kind: str | None = None, model: str = "", prompt_version: str = "", source: str = ""
) -> Judge:
    """The judge a file's labels are imported as (every import command and console upload comes here):
    created if new, as an imported file unless `kind` names a machine or crowd; refused with
    ImportJudgeRefused by the rule of annotation.judge_access.file_judge_refusal."""
    refusal = file_judge_refusal(name, kind=kind, model=model, prompt_version=prompt_version)
    if refusal:
        raise ImportJudgeRefused(refusal)
    return judge_get_or_create(
        name=name,
        kind=kind or Judge.Kind.IMPORTED,
        model=model,
        prompt_version=prompt_version,
        description=f"imported from {source}" if source else "",
    )


def judge_for_assessor(*, user: User) -> Judge:
    """The judge that records an assessor's labels, created on first use.

    Read through the user's `judge` relation, so a user loaded with `select_related("judge")` (the
    assessor API's token authentication does that) or asked twice in one request costs no query.
    """
    try:
        return user.judge
    except Judge.DoesNotExist:
        pass
    refusal = assessor_judge_refusal(username=user.get_username(), user_id=user.pk)
    if refusal:
        raise AssessorJudgeTaken(refusal)
    return Judge.objects.create(
        name=assessor_judge_name(user.get_username()), kind=Judge.Kind.ASSESSOR, user=user
    )


def sync_fields(obj: object, values: dict[str, object]) -> bool:
    changed = False
    for field_name, value in values.items():
        if getattr(obj, field_name) != value:
            setattr(obj, field_name, value)
            changed = True
    return changed


# --- Shared by the imports -------------------------------------------------------------------------


def turns_for(
    collection: Collection, path: str, wanted: dict[str, int], *, problems: Problems | None = None
) -> dict[str, Turn]:
    """The collection's turns of `wanted` (turn id: first line naming it); each unknown one is a
    problem at its first line, added to `problems` when given (the caller raises), else raised."""
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=collection, turn_id__in=list(wanted))}
    found = Problems(path) if problems is None else problems
    for turn_id, line in sorted(wanted.items(), key=lambda item: item[1]):
        if turn_id not in turns:
            found.add(
                line, f"turn {turn_id} is not in collection {collection.name} (import its topics first)"
            )
    if problems is None:
        found.raise_if_any()
    return turns


# --- Judgments -------------------------------------------------------------------------------------


# Unknown turn ids remembered while a file streams (each reported at its first line), at most.
UNKNOWN_TURNS = 10_000


class TurnPks:
    """The collection's turn pks by turn id, for a file read a line at a time: a turn the collection lacks
    is a problem at its first line and gets a stand-in (negative) pk, so that the checks made on the
    staged rows (a pair given twice) still see its rows; beyond UNKNOWN_TURNS of them, their rows are
    only reported."""

    def __init__(self, collection: Collection, problems: Problems) -> None:
        self.collection = collection
        self.problems = problems
        self.pks: dict[str, int] = dict(
            Turn.objects.filter(collection=collection).values_list("turn_id", "id")
        )
        self.unknown: dict[str, int] = {}

    def get(self, turn_id: str, line: int) -> int | None:
        """The pk (or stand-in) of `turn_id`, named at `line`; None for a row that cannot be staged."""
        pk = self.pks.get(turn_id) or self.unknown.get(turn_id)
        if pk is not None:
            return pk
        self.problems.add(
            line, f"turn {turn_id} is not in collection {self.collection.name} (import its topics first)"
        )
        if len(self.unknown) >= UNKNOWN_TURNS:
            return None
        pk = self.unknown[turn_id] = -1 - len(self.unknown)
        return pk

    def name(self, pk: int) -> str:
        """The turn id of a pk or stand-in; a scan, made only for the few rows a problem names."""
        names = self.unknown if pk < 0 else self.pks
        return next(turn_id for turn_id, turn_pk in names.items() if turn_pk == pk)


def api_token_get(*, user: User) -> Token:
    token, _ = Token.objects.get_or_create(user=user)
    return token


@transaction.atomic
def api_token_reset(*, user: User) -> Token:
    """A new API token for the user; scripts holding the old one are refused from now on."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)
