"""Support label files (JSONL)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from annotation.formats.base import (
    MAX_PASSAGE_ID,
    MAX_RUN_NAME,
    MAX_TURN_ID,
    Problems,
    excerpt,
    read_jsonl,
)
from annotation.models import SupportLabel

# --- Import and export of labels -------------------------------------------------------------------


# Slots, and the names a file repeats on every line held once (sys.intern): a million labels' records.
@dataclass(slots=True)
class SupportLabelRecord:
    run_id: str
    topic_id: str
    sentence_index: int
    passage_id: str
    label: str
    line: int


def parse_support_labels(path: str | Path, *, problems: Problems | None = None) -> list[SupportLabelRecord]:
    """JSONL `{"run_id", "topic_id", "sentence_index" (0-based), "passage_id", "label": FS|PS|NS}`.

    Given `problems`, the file's problems are added there and its good lines returned (the caller
    checks those against the database and raises everything at once); otherwise they are raised here.
    """
    name = str(path)
    own = problems is None
    problems = Problems(name) if problems is None else problems
    records: list[SupportLabelRecord] = []
    seen: dict[tuple[str, str, int, str], int] = {}
    for record in support_label_records(path, problems=problems):
        key = (record.run_id, record.topic_id, record.sentence_index, record.passage_id)
        if key in seen:
            problems.add(record.line, f"{REPEATED} (first on line {seen[key]})")
            continue
        seen[key] = record.line
        records.append(record)
    if not records and not problems.items:
        problems.add(None, "no labels in the file")
    if own:
        problems.raise_if_any()
    return records


# What a file saying the same unit twice is told (the second line's problem).
REPEATED = "the same unit is labelled twice"


def support_label_records(path: str | Path, *, problems: Problems) -> Iterator[SupportLabelRecord]:
    """The file's well-formed lines as records, read as they are needed; each bad line's problem is added
    to `problems`. A unit given twice is the caller's to find (`parse_support_labels`, or a stage)."""
    # Read a block of lines at a time: a million labels' file is never held whole beside its records.
    for line, obj in read_jsonl(path, problems):
        missing = [
            k
            for k in ("run_id", "topic_id", "sentence_index", "passage_id", "label")
            if obj.get(k) in (None, "")
        ]
        if missing:
            problems.add(line, f"missing {', '.join(missing)}")
            continue
        index = obj["sentence_index"]
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            problems.add(line, f"sentence_index {excerpt(index, 20)} is not a 0-based integer")
            continue
        label = str(obj["label"]).strip().upper()
        if label not in SupportLabel.values:
            problems.add(line, f"label {excerpt(obj['label'], 20)} is not FS, PS or NS")
            continue
        record = SupportLabelRecord(
            run_id=sys.intern(str(obj["run_id"]).strip()),
            topic_id=sys.intern(str(obj["topic_id"]).strip()),
            sentence_index=index,
            passage_id=str(obj["passage_id"]).strip(),
            label=sys.intern(label),
            line=line,
        )
        if (
            problems.bad_id(line, record.run_id, "run name", MAX_RUN_NAME)
            or problems.bad_id(line, record.topic_id, "topic id", MAX_TURN_ID)
            or problems.bad_id(line, record.passage_id, "passage id", MAX_PASSAGE_ID)
        ):
            continue
        yield record
