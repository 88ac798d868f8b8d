"""Reads for the quality dashboard: each assessor's gold accuracy, agreement with co-assessors, speed and
drift on one collection's relevance work.

Three queries whatever the size of the campaign: every assessor grade of the collection with its gold
grade when it was given to a planted gold pair (one join), the collection's assessors, and its pauses.
The statistics are judging.measures.quality' and Cohen's kappa from the agreement measures.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime

from django.utils import timezone

from annotation.models import AssessorPause, Assignment, Collection, Judge, RelevanceGrade, RelevanceJudgment
from judging.measures.agreement import cohen_kappa
from judging.measures.quality import (
    Bin,
    bin_agreement,
    drifted,
    median,
    proportion,
    run_number,
    share_below,
    wilson_interval,
)

GRADES = [int(grade) for grade in RelevanceGrade.values]
# Relevant from grade 2 on, as the evaluation pages' default `rel=2` (ir_measures' P(rel=2)@k).
RELEVANT_FROM = 2


@dataclass(frozen=True)
class QualitySettings:
    """The organiser's bars: the relevance threshold, what counts as low gold accuracy, as too fast, as
    drift, and how many observations a flag needs."""

    rel: int = RELEVANT_FROM
    gold_bar: float = 0.6  # exact gold accuracy below this is flagged
    fast_seconds: float = 4.0  # a judgment under this many seconds is counted fast
    fast_share: float = 0.5  # flagged too fast when more than this share of judgments is fast
    min_n: int = 10  # gold grades, and comparisons per drift bin, before a flag is raised
    drift_drop: float = 0.2  # agreement falling by more than this from first to last bin is drift
    per: int = 100  # judgments per drift bin


@dataclass(frozen=True)
class Rate:
    """`agreed` of `n`, with its proportion and 95% Wilson interval."""

    n: int
    agreed: int

    @property
    def value(self) -> float | None:
        return proportion(self.agreed, self.n)

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.agreed, self.n)


@dataclass(frozen=True)
class DriftBin:
    key: date | int  # a day, or the number of the assessor's first judgment in the bin (from 1)
    gold: Rate
    coassessors: Rate


@dataclass
class AssessorQuality:
    user_pk: int
    username: str
    paused: bool = False
    judgments: int = 0  # grades of pooled pairs (gold left out)
    gold_exact: Rate = Rate(0, 0)
    gold_within_one: Rate = Rate(0, 0)
    gold_binary: Rate = Rate(0, 0)
    gold_kappa: float | None = None
    agreement: Rate = Rate(0, 0)  # exact agreement with each co-assessor's grade of the same pair
    agreement_kappa: float | None = None
    agreement_weighted_kappa: float | None = None  # linear weights
    adjudicated: Rate = Rate(0, 0)  # exact agreement with the adjudicated judge's grade of the same pair
    adjudicated_kappa: float | None = None
    median_seconds: float | None = None
    fast_share: float | None = None
    by_day: list[DriftBin] = field(default_factory=list)
    by_run: list[DriftBin] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)

    @property
    def gold_n(self) -> int:
        return self.gold_exact.n


@dataclass(frozen=True)
class _Grade:
    turn_pk: int
    passage_id: str
    grade: int
    seconds: float | None
    at: datetime
    gold: int | None  # the gold grade, for a grade of a planted gold pair


def collection_quality(
    *, collection: Collection, settings: QualitySettings | None = None, adjudicated: Judge | None = None
) -> list[AssessorQuality]:
    """Every assessor of the collection (a member of one of its assignments, or the author of one of its
    assessor grades), by username, with their quality figures and flags; with `adjudicated` (a judge
    made by adjudication, or any reference judge), each one's agreement with it on the pairs both
    graded (one more query)."""
    settings = settings or QualitySettings()
    rows = (
        RelevanceJudgment.objects.filter(
            turn__collection=collection, judge__kind=Judge.Kind.ASSESSOR, judge__user__isnull=False
        )
        .order_by("created_at", "id")
        .values_list(
            "judge__user_id",
            "judge__user__username",
            "turn_id",
            "passage_id",
            "grade",
            "time_spent_ms",
            "created_at",
            "gold_grade__pair__grade",
        )
    )
    names: dict[int, str] = {}
    grades: dict[int, list[_Grade]] = defaultdict(list)
    for user_pk, username, turn_pk, passage_id, grade, ms, at, gold in rows:
        names[user_pk] = username
        seconds = ms / 1000 if ms is not None else None
        grades[user_pk].append(_Grade(turn_pk, passage_id, grade, seconds, at, gold))
    members = (
        Assignment.assessors.through.objects.filter(assignment__pool__collection=collection)
        .values_list("user_id", "user__username")
        .distinct()
    )
    names.update(dict(members))
    paused = set(AssessorPause.objects.filter(collection=collection).values_list("user_id", flat=True))
    reference: dict[tuple[int, str], int] = {}
    if adjudicated is not None:
        reference = {
            (turn_pk, passage_id): grade
            for turn_pk, passage_id, grade in RelevanceJudgment.objects.filter(
                judge=adjudicated, turn__collection=collection
            ).values_list("turn_id", "passage_id", "grade")
        }

    # Who else graded each pooled pair: the co-assessors' grades, gold grades left out.
    by_pair: dict[tuple[int, str], dict[int, int]] = defaultdict(dict)
    for user_pk, given in grades.items():
        for g in given:
            if g.gold is None:
                by_pair[(g.turn_pk, g.passage_id)][user_pk] = g.grade

    result = []
    for user_pk, username in sorted(names.items(), key=lambda item: item[1]):
        quality = _assessor(user_pk, username, grades.get(user_pk, []), by_pair, user_pk in paused, settings)
        if adjudicated is not None:
            _compare_with_reference(quality, grades.get(user_pk, []), reference)
        result.append(quality)
    return result


def _compare_with_reference(
    quality: AssessorQuality, given: list[_Grade], reference: dict[tuple[int, str], int]
) -> None:
    """The assessor's pooled grades against the reference judge's grade of the same pairs (gold left out)."""
    pairs = [
        (g.grade, reference[(g.turn_pk, g.passage_id)])
        for g in given
        if g.gold is None and (g.turn_pk, g.passage_id) in reference
    ]
    quality.adjudicated = Rate(len(pairs), sum(a == b for a, b in pairs))
    quality.adjudicated_kappa = (
        cohen_kappa([a for a, _ in pairs], [b for _, b in pairs], labels=GRADES) if pairs else None
    )


def _assessor(
    user_pk: int,
    username: str,
    given: list[_Grade],
    by_pair: dict[tuple[int, str], dict[int, int]],
    paused: bool,
    settings: QualitySettings,
) -> AssessorQuality:
    # Every row here has a reference grade (`or 0` below only tells the type checker so).
    gold = [g for g in given if g.gold is not None]
    mine: list[int] = []
    theirs: list[int] = []
    # In time order, one entry per comparison: (judgment number from 0, day, is gold, agreed).
    timeline: list[tuple[int, date, bool, bool]] = []
    for index, g in enumerate(given):
        day = timezone.localtime(g.at).date()
        if g.gold is not None:
            timeline.append((index, day, True, g.grade == g.gold))
            continue
        for other, grade in by_pair[(g.turn_pk, g.passage_id)].items():
            if other != user_pk:
                mine.append(g.grade)
                theirs.append(grade)
                timeline.append((index, day, False, g.grade == grade))
    seconds = [g.seconds for g in given if g.seconds is not None]
    quality = AssessorQuality(
        user_pk=user_pk,
        username=username,
        paused=paused,
        judgments=len(given) - len(gold),
        gold_exact=Rate(len(gold), sum(g.grade == g.gold for g in gold)),
        gold_within_one=Rate(len(gold), sum(abs(g.grade - (g.gold or 0)) <= 1 for g in gold)),
        gold_binary=Rate(
            len(gold), sum((g.grade >= settings.rel) == ((g.gold or 0) >= settings.rel) for g in gold)
        ),
        gold_kappa=cohen_kappa([g.grade for g in gold], [g.gold or 0 for g in gold], labels=GRADES)
        if gold
        else None,
        agreement=Rate(len(mine), sum(a == b for a, b in zip(mine, theirs, strict=True))),
        agreement_kappa=cohen_kappa(mine, theirs, labels=GRADES) if mine else None,
        agreement_weighted_kappa=cohen_kappa(mine, theirs, labels=GRADES, weights="linear") if mine else None,
        median_seconds=median(seconds),
        fast_share=share_below(seconds, settings.fast_seconds),
        by_day=_drift_bins([(day, is_gold, ok) for _, day, is_gold, ok in timeline]),
        by_run=_drift_bins(
            [(run_number(i, settings.per) + 1, is_gold, ok) for i, _, is_gold, ok in timeline]
        ),
    )
    quality.flags = _flags(quality, settings)
    return quality


def _drift_bins(timeline: list[tuple[date | int, bool, bool]]) -> list[DriftBin]:
    keys = list(dict.fromkeys(key for key, _, _ in timeline))
    gold = {
        b.key: b for b in bin_agreement([k for k, g, _ in timeline if g], [ok for _, g, ok in timeline if g])
    }
    others = {
        b.key: b
        for b in bin_agreement([k for k, g, _ in timeline if not g], [ok for _, g, ok in timeline if not g])
    }

    def rate(b: Bin | None) -> Rate:
        return Rate(b.n, b.agreed) if b is not None else Rate(0, 0)

    return [DriftBin(key, rate(gold.get(key)), rate(others.get(key))) for key in keys]


def _flags(quality: AssessorQuality, settings: QualitySettings) -> list[str]:
    flags = []
    exact = quality.gold_exact.value
    if quality.gold_n >= settings.min_n and exact is not None and exact < settings.gold_bar:
        flags.append("gold-exact-low")
    if quality.fast_share is not None and quality.fast_share > settings.fast_share:
        flags.append("too-fast")
    for kind in ("gold", "coassessors"):
        bins = [Bin(b.key, getattr(b, kind).n, getattr(b, kind).agreed) for b in quality.by_run]
        if drifted(bins, min_n=settings.min_n, drop=settings.drift_drop):
            flags.append("drift")
            break
    return flags


def quality_json(
    assessors: list[AssessorQuality], *, adjudicated: Judge | None = None
) -> dict[str, dict[str, dict[str, object]]]:
    """The `quality_report --format json` shape: figures per username; with `adjudicated`, the
    agreement with that judge too (`adjudicated_n`, `adjudicated_exact`, `adjudicated_kappa`)."""

    def interval(rate: Rate) -> list[float] | None:
        found = rate.interval
        return [round(found[0], 4), round(found[1], 4)] if found else None

    def with_reference(a: AssessorQuality) -> dict[str, object]:
        if adjudicated is None:
            return {}
        return {
            "adjudicated_n": a.adjudicated.n,
            "adjudicated_exact": a.adjudicated.value,
            "adjudicated_kappa": a.adjudicated_kappa,
        }

    return {
        "assessors": {
            a.username: {
                "gold_n": a.gold_n,
                "gold_exact": a.gold_exact.value,
                "gold_exact_interval": interval(a.gold_exact),
                "gold_within_one": a.gold_within_one.value,
                "gold_within_one_interval": interval(a.gold_within_one),
                "gold_binary": a.gold_binary.value,
                "gold_binary_interval": interval(a.gold_binary),
                "gold_kappa": a.gold_kappa,
                "agreement_n": a.agreement.n,
                "agreement_exact": a.agreement.value,
                "agreement_kappa": a.agreement_kappa,
                "agreement_weighted_kappa": a.agreement_weighted_kappa,
                "judgments": a.judgments,
                "median_seconds": a.median_seconds,
                "fast_share": a.fast_share,
                "paused": a.paused,
                "flags": a.flags,
                **with_reference(a),
            }
            for a in assessors
        }
    }
