"""Support labels in and out: imports (all or nothing, idempotent) and exports."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypedDict

from django.db import transaction
from django.db.models.functions import Collate

from annotation.formats.base import Problems
from annotation.labels.files import Download, Export, Upload
from annotation.labels.writer import Written
from annotation.models import (
    Collection,
    Condition,
    Judge,
    ResponseSentence,
    SupportJudgment,
)
from annotation.services import ImportResult
from annotation.support.formats import SupportLabelRecord, parse_support_labels
from annotation.support.writer import SupportRow, support_judgments_upsert
from core.streaming import queryset_rows, text_chunks

_LABELS_PER_WRITE = 10_000


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
    """
    problems = Problems(str(path))
    records = parse_support_labels(path, problems=problems)
    # Plain tuples, not model instances: a run set holds tens of thousands of sentences.
    sentences: dict[tuple[str, str, int], tuple[int, list[str]]] = {
        (run, turn_id, index): (sid, citations)
        for sid, run, turn_id, index, citations in ResponseSentence.objects.filter(
            response__run__collection=collection,
            response__run__name__in={r.run_id for r in records},
            response__rank=1,
        ).values_list("id", "response__run__name", "response__turn__turn_id", "index", "citations")
    }
    resolved: list[tuple[SupportLabelRecord, int, int]] = []
    for record in records:
        found = sentences.get((record.run_id, record.topic_id, record.sentence_index))
        if found is None:
            problems.add(
                record.line,
                f"run {record.run_id} has no sentence {record.sentence_index} for topic {record.topic_id} "
                f"in collection {collection.name}",
            )
        elif record.passage_id not in found[1]:
            problems.add(
                record.line,
                f"sentence {record.sentence_index} of run {record.run_id} topic {record.topic_id} "
                f"does not cite {record.passage_id}",
            )
        else:
            resolved.append((record, found[0], found[1].index(record.passage_id)))
    problems.raise_if_any()

    if progress is not None:
        progress(0, len(records))
    condition = Condition.MACHINE if judge.kind in (Judge.Kind.LLM, Judge.Kind.NLI) else Condition.IMPORTED
    # A block of labels per writer call: the file's labels never become one list of rows at once.
    written = Written()
    for start in range(0, len(resolved), _LABELS_PER_WRITE):
        done = support_judgments_upsert(
            judge=judge,
            collection=collection,
            condition=condition,
            rows=[
                SupportRow(
                    sentence_id=sentence_id,
                    citation_index=citation_index,
                    passage_id=record.passage_id,
                    label=record.label,
                )
                for record, sentence_id, citation_index in resolved[start : start + _LABELS_PER_WRITE]
            ],
        )
        written.created += done.created
        written.updated += done.updated
        written.unchanged += done.unchanged
    if progress is not None:
        progress(len(records), len(records))
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
