"""Support labels in and out: imports (all or nothing, idempotent) and exports."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypedDict

from django.db import transaction
from django.db.models.functions import Collate

from annotation.formats.base import MAX_PROBLEMS, Problems
from annotation.labels.files import Download, Export, Upload
from annotation.models import (
    Collection,
    Condition,
    Judge,
    SupportJudgment,
)
from annotation.services import ImportResult
from annotation.support.formats import REPEATED, support_label_records
from annotation.support.writer import support_judgments_upsert_stage, support_stage
from core.streaming import queryset_rows, text_chunks


@transaction.atomic
def support_labels_import(
    *,
    path: str | Path,
    collection: Collection,
    judge: Judge,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Load support labels of `judge` (e.g. GPT-4o's, to post-edit); all or nothing, idempotent.

    Each line names its unit by run, topic, 0-based sentence index and the cited passage id; the passage
    must be one the sentence cites, and its first position among the citations is the citation index.
    The file's syntax and its units are checked in one pass, so every problem is reported at once.
    `progress(done, total)` counts the file's labels stored: none once the file is checked, all once
    they are written (one upsert).

    The file is read a line at a time into a stage in the database (SupportStage), in batches, and checked
    and written there, so a file of any size takes the same memory; the transaction keeps the import all
    or nothing.
    """
    problems = Problems(str(path))
    with support_stage() as stage:
        stage.fill(
            (r.line, r.run_id, r.topic_id, r.sentence_index, r.passage_id, r.label, None, None)
            for r in support_label_records(path, problems=problems)
        )
        if not stage.rows and not problems.items:
            problems.add(None, "no labels in the file")
        stage.seal(("run_id", "topic_id", "sentence_index"))
        count, repeated = stage.repeated(limit=MAX_PROBLEMS)
        for line, *_unit, first in repeated:
            problems.add(line, f"{REPEATED} (first on line {first})")
        problems.more += count - len(repeated)
        stage.resolve(collection=collection)
        count, unresolved = stage.unresolved(limit=MAX_PROBLEMS)
        for line, run_id, topic_id, index, passage_id, has_sentence in unresolved:
            problems.add(
                line,
                f"sentence {index} of run {run_id} topic {topic_id} does not cite {passage_id}"
                if has_sentence
                else f"run {run_id} has no sentence {index} for topic {topic_id} in collection {collection.name}",
            )
        problems.more += count - len(unresolved)
        problems.raise_if_any()

        if progress is not None:
            progress(0, stage.rows)
        condition = (
            Condition.MACHINE if judge.kind in (Judge.Kind.LLM, Judge.Kind.NLI) else Condition.IMPORTED
        )
        written = support_judgments_upsert_stage(judge=judge, stage=stage, condition=condition)
        if progress is not None:
            progress(stage.rows, stage.rows)
    return ImportResult(created=written.created, updated=written.updated, unchanged=written.unchanged)


class SupportLabelLine(TypedDict):
    run_id: str
    topic_id: str
    sentence_index: int
    passage_id: str
    label: str


def support_labels_export(*, collection: Collection, judge: Judge) -> Iterator[SupportLabelLine]:
    """A judge's support labels in the import shape, ordered by run, topic, sentence, citation (run and topic
    by code point, as Python compares strings), streamed from the database."""
    rows = (
        SupportJudgment.objects.filter(judge=judge, sentence__response__run__collection=collection)
        .order_by(
            Collate("sentence__response__run__name", "C"),
            Collate("sentence__response__turn__turn_id", "C"),
            "sentence__index",
            "citation_index",
        )
        .values_list(
            "sentence__response__run__name",
            "sentence__response__turn__turn_id",
            "sentence__index",
            "passage_id",
            "label",
        )
    )
    for run, topic, index, pid, label in queryset_rows(rows):
        yield {"run_id": run, "topic_id": topic, "sentence_index": index, "passage_id": pid, "label": label}


def support_labels_lines(*, collection: Collection, judge: Judge) -> Iterator[str]:
    """The export as JSONL, a label a line."""
    for row in support_labels_export(collection=collection, judge=judge):
        yield json.dumps(row) + "\n"


# --- The console's upload and download ------------------------------------------------------------


def support_labels_upload(upload: Upload) -> ImportResult:
    return support_labels_import(
        path=upload.path, collection=upload.collection, judge=upload.judge(), progress=upload.progress
    )


def support_labels_download(download: Download) -> Export:
    lines = support_labels_lines(collection=download.collection, judge=download.judge)
    return Export(text_chunks(lines), "-support.jsonl")
