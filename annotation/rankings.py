"""Rankings of runs in: a run's ranked lists stored by turn, and TREC run files streamed through a stage.

A TREC run is the largest file a collection takes in (1000 lines per turn, tens of turns, tens of runs in
a campaign), so it is read a line at a time into a stage in the database (core/staging.py), checked
there (a document ranked twice for a turn), and read back a turn at a time to be stored as one Ranking
row per turn: a file of any size takes the same memory, and the caller's transaction keeps the import
all or nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from django.db import router

from annotation.formats.base import MAX_PROBLEMS, Problems
from annotation.formats.runs import TrecRunLines, ranked
from annotation.models import Collection, Ranking, Run
from annotation.services import RANKINGS, ImportResult, TurnPks
from core.staging import Stage, staged

# Rankings are written this many at a time, and an import's progress is told after each chunk.
RANKING_CHUNK = 200
# Rows fetched from the stage at a time while its rankings are read back.
_FETCH = 10_000


def trec_run_import(
    *,
    path: str | Path,
    collection: Collection,
    name: str | None,
    run_for: Callable[[str], Run],
    progress: Callable[[int, int], None] | None,
) -> tuple[Run, ImportResult]:
    """Load a TREC run file (inside the caller's transaction); `run_for(name)` gives the run to fill.

    Every problem of the file, its syntax, its turns the collection lacks and its documents ranked twice
    alike, is reported in one pass. `progress(done, total)` counts the file's rankings (turns) stored.
    """
    problems = Problems(str(path))
    lines = TrecRunLines(path, name, problems)
    turns = TurnPks(collection, problems)
    # Each turn's first line: its rankings are stored in the order the file first names the turns.
    firsts: dict[int, int] = {}

    def staged_rows() -> Iterator[tuple[int, int, str, int, float]]:
        known = turns.pks
        for number, turn_id, passage_id, rank, score in lines:
            pk = known.get(turn_id) or turns.get(turn_id, number)
            if pk is not None:
                firsts.setdefault(pk, number)
                yield number, pk, passage_id, rank, score

    columns = [
        ("turn_id", "bigint NOT NULL"),
        ("passage_id", "varchar(255) NOT NULL"),
        ("rank_no", "bigint NOT NULL"),
        ("score", "double precision NOT NULL"),
    ]
    stage = Stage(router.db_for_write(Ranking), "run_stage", columns, key=("turn_id", "passage_id"))
    with staged(stage):
        stage.fill(staged_rows())
        stage.seal()
        count, repeated = stage.repeated(limit=MAX_PROBLEMS)
        for line, turn_pk, passage_id, _first in repeated:
            problems.add(line, f"document {passage_id} ranked twice for {turns.name(turn_pk)}")
        problems.more += count - len(repeated)
        problems.raise_if_any()

        run = run_for(lines.name)
        order = sorted(firsts, key=firsts.__getitem__)
        done = 0

        def step(count: int) -> None:
            nonlocal done
            done += count
            if progress is not None and count:
                progress(done, len(order))

        result = ImportResult()
        for start in range(0, len(order), RANKING_CHUNK):
            rankings_store(run, _staged_rankings(stage, order[start : start + RANKING_CHUNK]), result, step)
    return run, result


def _staged_rankings(stage: Stage, turn_pks: list[int]) -> dict[int, tuple[list[str], list[float]]]:
    """The rankings of the stage's turns `turn_pks`, read through the stage's (turn, passage) index."""
    rows: dict[int, list[tuple[int, float, str]]] = {pk: [] for pk in turn_pks}
    marks = ", ".join(["%s"] * len(turn_pks))
    # A server-side cursor on PostgreSQL: the rows come a batch at a time, not all at once.
    cursor = stage.connection.chunked_cursor()
    try:
        cursor.execute(
            f"SELECT turn_id, rank_no, score, passage_id FROM {stage.table} WHERE turn_id IN ({marks})",
            turn_pks,
        )
        while batch := cursor.fetchmany(_FETCH):
            for turn_pk, rank, score, passage_id in batch:
                rows[turn_pk].append((rank, -score, passage_id))
    finally:
        cursor.close()
    return {pk: ranked(turn_rows) for pk, turn_rows in rows.items()}


def rankings_store(
    run: Run,
    rankings: dict[int, tuple[list[str], list[float]]],
    result: ImportResult,
    step: Callable[[int], None],
) -> None:
    """Store `rankings` (turn pk: passage ids and scores) as the run's: new turns created, changed ones
    updated, equal ones left alone; `step(count)` told after the unchanged ones and each chunk written."""
    existing = {
        r.turn_id: r
        for r in Ranking.objects.filter(run=run, turn_id__in=list(rankings)).only(
            "id", "turn_id", "passage_ids", "scores"
        )
    }
    to_create: list[Ranking] = []
    to_update: list[Ranking] = []
    for turn_pk, (passage_ids, scores) in rankings.items():
        current = existing.get(turn_pk)
        if current is None:
            to_create.append(Ranking(run=run, turn_id=turn_pk, passage_ids=passage_ids, scores=scores))
        elif current.passage_ids != passage_ids or current.scores != scores:
            current.passage_ids, current.scores = passage_ids, scores
            to_update.append(current)
        else:
            result.count(RANKINGS, "unchanged")
    step(len(rankings) - len(to_create) - len(to_update))
    for start in range(0, len(to_create), RANKING_CHUNK):
        chunk = to_create[start : start + RANKING_CHUNK]
        Ranking.objects.bulk_create(chunk)
        step(len(chunk))
    for start in range(0, len(to_update), RANKING_CHUNK):
        chunk = to_update[start : start + RANKING_CHUNK]
        Ranking.objects.bulk_update(chunk, ["passage_ids", "scores"])
        step(len(chunk))
    result.count(RANKINGS, "created", len(to_create))
    result.count(RANKINGS, "updated", len(to_update))
