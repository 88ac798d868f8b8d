"""Rankings of runs in: a run's ranked lists stored by turn, and TREC run files streamed through a stage.

A TREC run is the largest file a collection takes in (1000 lines per turn, tens of turns, tens of runs in
a campaign), so it is read a line at a time into a stage in the database (core/staging.py), a group of a
turn's consecutive lines per row, and read back a chunk of turns at a time to be stored as one Ranking row
per turn: a file of any size takes the same memory, and the caller's transaction keeps the import all or
nothing. A document ranked twice for a turn is found in its group while the file is read, and across the
groups of a turn the file names more than once (rare: runs are written turn by turn) once it is staged.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

from django.db import connections, router

from annotation.formats.base import Problems
from annotation.formats.runs import TrecRunLines, ranked
from annotation.models import Collection, Ranking, Run
from annotation.services import RANKINGS, ImportResult, TurnPks
from core.bulk import model_rows_copy
from core.staging import Stage, staged

# Rankings are written this many at a time, and an import's progress is told after each chunk.
RANKING_CHUNK = 200
# A turn's lines that follow one another are staged as one group of at most _GROUP lines (a JSON row), so a
# run file, grouped by turn as runs are written, is a few rows per turn; groups come back from the stage
# _GROUP_BATCH at a time.
_GROUP = 10_000
_GROUP_BATCH = 20


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
    # Per turn: its first line (rankings are stored in the order the file first names turns) and its
    # number of groups (a turn of several groups is looked at whole for documents ranked twice).
    firsts: dict[int, int] = {}
    groups: dict[int, int] = {}

    def staged_groups() -> Iterator[tuple[int, int, bytes, bytes, bytes, str]]:
        known = turns.pks
        turn_pk: int | None = None
        group: tuple[list[int], list[int], list[float], list[str]] = ([], [], [], [])
        seen: set[str] = set()
        for number, turn_id, passage_id, rank, score in lines:
            pk = known.get(turn_id) or turns.get(turn_id, number)
            if pk is None:
                continue
            if pk != turn_pk or len(seen) == _GROUP:
                if turn_pk is not None:
                    yield _packed(turn_pk, group)
                turn_pk, group, seen = pk, ([], [], [], []), set()
                firsts.setdefault(pk, number)
                groups[pk] = groups.get(pk, 0) + 1
            if passage_id in seen:
                problems.add(number, f"document {passage_id} ranked twice for {turn_id}")
                continue
            seen.add(passage_id)
            group[0].append(number)
            group[1].append(rank)
            group[2].append(score)
            group[3].append(passage_id)
        if turn_pk is not None and group[0]:
            yield _packed(turn_pk, group)

    db = router.db_for_write(Ranking)
    blob = connections[db].data_types["BinaryField"]
    columns = [("turn_id", "bigint NOT NULL"), ("lines", blob), ("ranks", blob), ("scores", blob)]
    stage = Stage(db, "run_stage", [*columns, ("passage_ids", "text NOT NULL")])
    with staged(stage):
        stage.fill(staged_groups())
        stage.seal(("turn_id",))
        for turn_pk in (pk for pk, count in groups.items() if count > 1):
            seen_at: dict[str, int] = {}
            for number, _rank, _score, passage_id in _staged_rows(stage, [turn_pk]):
                if passage_id in seen_at:
                    problems.add(number, f"document {passage_id} ranked twice for {turns.name(turn_pk)}")
                else:
                    seen_at[passage_id] = number
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
            chunk = order[start : start + RANKING_CHUNK]
            rows: dict[int, list[tuple[int, float, str]]] = {pk: [] for pk in chunk}
            for turn_pk, rank, score, passage_id in _staged_rows(stage, chunk, by_turn=True):
                rows[turn_pk].append((rank, -score, passage_id))
            rankings_store(run, {pk: ranked(turn_rows) for pk, turn_rows in rows.items()}, result, step)
    return run, result


def _staged_rows(
    stage: Stage, turn_pks: list[int], *, by_turn: bool = False
) -> Iterator[tuple[int, int, float, str]]:
    """The staged rows of the turns `turn_pks` in line order, each as (line, rank, score, passage id), or
    with `by_turn` as (turn pk, rank, score, passage id)."""
    marks = ", ".join(["%s"] * len(turn_pks))
    # A server-side cursor on PostgreSQL: the groups come a batch at a time, not all at once.
    cursor = stage.connection.chunked_cursor()
    try:
        cursor.execute(
            f"SELECT turn_id, lines, ranks, scores, passage_ids FROM {stage.table} "
            f"WHERE turn_id IN ({marks}) ORDER BY line",
            turn_pks,
        )
        while batch := cursor.fetchmany(_GROUP_BATCH):
            for turn_pk, lines, ranks, scores, passage_ids in batch:
                numbers = array("q", lines).tolist()
                keys = [turn_pk] * len(numbers) if by_turn else numbers
                yield from zip(
                    keys, array("q", ranks), array("d", scores), passage_ids.split("\t"), strict=True
                )
    finally:
        cursor.close()


def _packed(
    turn_pk: int, group: tuple[list[int], list[int], list[float], list[str]]
) -> tuple[int, int, bytes, bytes, bytes, str]:
    """A group as a stage row: its first line, its turn, its lines, ranks and scores as machine numbers
    (exact, and quicker to write and read than text), its passage ids tab-separated (ids hold no
    whitespace: the columns of a run line are split at it)."""
    lines, ranks, scores, passage_ids = group
    packed = array("q", lines).tobytes(), array("q", ranks).tobytes(), array("d", scores).tobytes()
    return lines[0], turn_pk, *packed, "\t".join(passage_ids)


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
    # New rankings as rows of (run, turn, passage ids, scores), the lists as JSON text, written by COPY
    # (core/bulk.py): a run set's hundreds of thousands of lists without a model instance and a prepared
    # parameter each.
    to_create: list[tuple[int, int, str, str]] = []
    to_update: list[Ranking] = []
    for turn_pk, (passage_ids, scores) in rankings.items():
        current = existing.get(turn_pk)
        if current is None:
            to_create.append((run.pk, turn_pk, json.dumps(passage_ids), json.dumps(scores)))
        elif current.passage_ids != passage_ids or current.scores != scores:
            current.passage_ids, current.scores = passage_ids, scores
            to_update.append(current)
        else:
            result.count(RANKINGS, "unchanged")
    step(len(rankings) - len(to_create) - len(to_update))
    for start in range(0, len(to_create), RANKING_CHUNK):
        rows = to_create[start : start + RANKING_CHUNK]
        model_rows_copy(Ranking, columns=("run_id", "turn_id", "passage_ids", "scores"), rows=rows)
        step(len(rows))
    for start in range(0, len(to_update), RANKING_CHUNK):
        chunk = to_update[start : start + RANKING_CHUNK]
        Ranking.objects.bulk_update(chunk, ["passage_ids", "scores"])
        step(len(chunk))
    result.count(RANKINGS, "created", len(to_create))
    result.count(RANKINGS, "updated", len(to_update))
