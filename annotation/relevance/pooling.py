"""Relevance pooling: which (turn, passage) pairs of the runs people will assess.

Plain pooling is the union of every run's top K per turn. Adaptive pooling is the iKAT 2024 method:
every passage some run ranks 1..5 enters, and a passage ranked 6..30 enters unless a filter judge
(an LLM's labels, imported or produced by the judging app) graded it below G. Each pooled pair keeps
why it entered, and the report says how many assessments the filter saved and which turns it could
not filter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, F, Q

from annotation.models import Collection, Judge, Pool, PoolEntry, Ranking, RelevanceJudgment, Turn
from annotation.selectors import UnknownTurns, turns_named
from core.bulk import model_rows_copy
from core.wording import plural


class PoolingFailed(Exception):
    """The pool cannot be built as asked (bad depths, unknown turns, a pool already handed out)."""


class PoolExists(PoolingFailed):
    """A pool of that name is already in the collection; each caller says how its user rebuilds one."""


def turns_listed(turn_ids: Sequence[str], *, limit: int = 10) -> str:
    """Turn ids for a sentence: the first `limit` of them, then how many more (a real campaign has
    hundreds of turns, and a page or a terminal line must stay readable)."""
    shown = ", ".join(turn_ids[:limit])
    return f"{shown} and {len(turn_ids) - limit} more" if len(turn_ids) > limit else shown


def unfiltered_text(pairs: int, turn_ids: Sequence[str]) -> str:
    """The sentence the pool's report, page and command give for what the filter judge did not grade."""
    return (
        f"{plural(pairs, 'deeper pair')} in {plural(len(turn_ids), 'turn')} entered unfiltered (the filter "
        f"judge has not graded "
        f"them): {turns_listed(turn_ids)}"
    )


@dataclass
class PoolTurn:
    """One turn of a pool: what entered from the runs' heads, through the filter's grade, and unfiltered
    (deeper, with no grade of the filter judge); what the filter's grades kept out (`saved`); and what is
    missing though the filter did not grade it below the minimum (`left_out`: a pool built by an older
    Assay, which dropped ungraded pairs, or runs ranking more since it was built)."""

    turn_id: str
    pooled: int = 0
    from_head: int = 0
    from_filter: int = 0
    unfiltered: int = 0
    candidates: int = 0
    saved: int = 0

    @property
    def left_out(self) -> int:
        return max(self.candidates - self.pooled - self.saved, 0)


@dataclass
class PoolSummary:
    """A pool's size per turn and in all, as `pool_build` made it and as the pool page reads it back.

    `saved` counts passages within `depth` the filter kept out, all graded below the minimum by the
    filter judge; `unfiltered_turns` are the turns with deeper passages the filter judge never graded,
    pooled without its say."""

    pool: Pool
    turns: list[PoolTurn] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(t.pooled for t in self.turns)

    @property
    def saved(self) -> int:
        return sum(t.saved for t in self.turns)

    @property
    def candidates(self) -> int:
        return sum(t.candidates for t in self.turns)

    @property
    def saved_share(self) -> float | None:
        return self.saved / self.candidates if self.candidates else None

    @property
    def unfiltered(self) -> int:
        return sum(t.unfiltered for t in self.turns)

    @property
    def unfiltered_turns(self) -> list[str]:
        return [t.turn_id for t in self.turns if t.unfiltered]

    @property
    def unfiltered_text(self) -> str:
        return unfiltered_text(self.unfiltered, self.unfiltered_turns)

    @property
    def left_out(self) -> int:
        return sum(t.left_out for t in self.turns)

    @property
    def left_out_turns(self) -> str:
        return turns_listed([t.turn_id for t in self.turns if t.left_out])


# Pool entries are written this many at a time, as the turns are pooled: rows of these columns, in one COPY
# (core/bulk.py) each, without a model instance per entry (a TREC-sized pool has hundreds of thousands).
ENTRY_BATCH = 2000
ENTRY_COLUMNS = (
    "pool_id",
    "turn_id",
    "passage_id",
    "best_rank",
    "best_run_id",
    "filter_grade",
    "via_filter",
    "order",
)


@dataclass
class _Candidate:
    best_rank: int
    best_run_id: int
    run_name: str


def _presentation_order(pool_name: str, turn_id: str, passage_id: str) -> str:
    # Assessors see a turn's passages in a fixed order unrelated to any run's ranking, so the
    # position on screen does not hint at a system's confidence.
    return hashlib.sha256(f"{pool_name}\x00{turn_id}\x00{passage_id}".encode()).hexdigest()


def turns_resolve(*, collection: Collection, turn_ids: Iterable[str] | None) -> list[Turn]:
    """The collection's turns named by id (all of them when `turn_ids` is None), in conversation order."""
    try:
        return turns_named(collection=collection, turn_ids=turn_ids)
    except UnknownTurns as exc:
        raise PoolingFailed(str(exc)) from None


@transaction.atomic
def pool_build(
    *,
    collection: Collection,
    name: str,
    depth: int,
    turns: list[Turn] | None = None,
    adaptive: bool = False,
    filter_judge: Judge | None = None,
    min_grade: int | None = None,
    always_depth: int = 5,
    replace: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> PoolSummary:
    """Build (or, with `replace`, rebuild) a pool from every run's rankings of the chosen turns.

    Plain: each run's top `depth`. Adaptive: ranks 1..`always_depth` always, ranks up to `depth` unless
    `filter_judge` graded the passage below `min_grade`. A pool already handed out to assessors is
    never rebuilt, since their leases and progress point at its entries. `progress(done, total)` is told
    after each turn is pooled.

    A deeper passage the filter judge has not graded (a turn its job did not reach, a passage it skipped
    for want of text) enters the pool: only a grade may keep a pair from the assessors, so a filter run
    over part of the turns never drops the rest unseen and the saving counts only pairs it graded. The
    report names those turns, so the organiser can run the filter over them and rebuild, or accept
    assessing them in full.
    """
    if depth < 1:
        raise PoolingFailed("depth must be at least 1")
    if adaptive:
        if filter_judge is None or min_grade is None:
            raise PoolingFailed("adaptive pooling needs a filter judge and a minimum grade")
        if not 0 <= always_depth <= depth:
            raise PoolingFailed(
                f"the always-pooled depth ({always_depth}) must lie between 0 and depth ({depth})"
            )
    head = always_depth if adaptive else depth

    pool = Pool.objects.filter(collection=collection, name=name).first()
    if pool is not None:
        if not replace:
            raise PoolExists(f"pool {name!r} already exists in {collection.name}")
        if pool.assignments.exists():
            raise PoolingFailed(f"pool {name!r} is already assigned to assessors and cannot be rebuilt")
        pool.entries.all().delete()
        pool.depth, pool.adaptive = depth, adaptive
        pool.always_depth = always_depth if adaptive else None
        pool.filter_judge, pool.min_grade = (filter_judge, min_grade) if adaptive else (None, None)
        pool.save()
    else:
        pool = Pool.objects.create(
            collection=collection,
            name=name,
            depth=depth,
            adaptive=adaptive,
            always_depth=always_depth if adaptive else None,
            filter_judge=filter_judge if adaptive else None,
            min_grade=min_grade if adaptive else None,
        )

    if turns is None:
        turns = turns_resolve(collection=collection, turn_ids=None)
    turn_pks = [t.pk for t in turns]
    grades: dict[tuple[int, str], int] = {}
    if filter_judge is not None:
        grades = {
            (turn_pk, pid): grade
            for turn_pk, pid, grade in RelevanceJudgment.objects.filter(
                judge=filter_judge, turn_id__in=turn_pks
            ).values_list("turn_id", "passage_id", "grade")
        }

    # Best (lowest) rank of each passage within `depth` over all runs; ties go to the run named first.
    candidates: dict[int, dict[str, _Candidate]] = {pk: {} for pk in turn_pks}
    rankings = (
        Ranking.objects.filter(turn_id__in=turn_pks, run__collection=collection)
        .values_list("turn_id", "run_id", "run__name", "passage_ids")
        .order_by("run__name")
    )
    for turn_pk, run_id, run_name, passage_ids in rankings.iterator(chunk_size=200):
        per_turn = candidates[turn_pk]
        for rank, passage_id in enumerate(passage_ids[:depth], start=1):
            current = per_turn.get(passage_id)
            if current is None or rank < current.best_rank:
                per_turn[passage_id] = _Candidate(rank, run_id, run_name)

    report = PoolSummary(pool=pool)
    # (pool, turn, passage, best rank, best run, filter grade, via filter, order): ENTRY_COLUMNS's values.
    entries: list[tuple[int, int, str, int, int, int | None, bool, int]] = []
    for turn in turns:
        line = PoolTurn(turn_id=turn.turn_id)
        chosen: list[tuple[str, int, int, int | None, bool]] = []
        for passage_id, candidate in candidates[turn.pk].items():
            grade = grades.get((turn.pk, passage_id))
            via_filter = False
            if candidate.best_rank <= head:
                line.from_head += 1
            elif grade is None:
                line.unfiltered += 1
            elif min_grade is not None and grade >= min_grade:
                line.from_filter += 1
                via_filter = True
            else:
                line.saved += 1
                continue
            chosen.append((passage_id, candidate.best_rank, candidate.best_run_id, grade, via_filter))
        chosen.sort(key=lambda e: _presentation_order(pool.name, turn.turn_id, e[0]))
        entries += [(pool.pk, turn.pk, *entry, order) for order, entry in enumerate(chosen)]
        line.pooled = len(chosen)
        line.candidates = line.pooled + line.saved
        report.turns.append(line)
        if len(entries) >= ENTRY_BATCH:
            model_rows_copy(PoolEntry, columns=ENTRY_COLUMNS, rows=entries)
            entries = []
        if progress is not None:
            progress(len(report.turns), len(turns))
    model_rows_copy(PoolEntry, columns=ENTRY_COLUMNS, rows=entries)
    pool_counts_store(pool=pool)
    return report


def pool_counts_store(*, pool: Pool) -> Pool:
    """Count the pool's entries once, as they are written, into its kept counts (pairs, turns, turns with
    unfiltered pairs). Every writer of a pool's entries calls it in its transaction, after writing them."""
    unfiltered = Q(
        adaptive=True, entries__filter_grade__isnull=True, entries__best_rank__gt=F("always_depth")
    )
    counts = Pool.objects.filter(pk=pool.pk).aggregate(
        pairs=Count("entries"),
        turns=Count("entries__turn", distinct=True),
        unfiltered_turns=Count("entries__turn", distinct=True, filter=unfiltered),
    )
    pool.pair_count, pool.turn_count = counts["pairs"], counts["turns"]
    pool.unfiltered_turn_count = counts["unfiltered_turns"]
    Pool.objects.filter(pk=pool.pk).update(
        pair_count=pool.pair_count,
        turn_count=pool.turn_count,
        unfiltered_turn_count=pool.unfiltered_turn_count,
    )
    return pool
