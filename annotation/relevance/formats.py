"""TREC qrels: passage qrels `qid 0 docid grade` (text only; annotation/relevance/io.py takes them in and
out of the database)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from annotation.formats.base import MAX_PASSAGE_ID, MAX_TURN_ID, Problems, excerpt, read_lines

# --- Qrels -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class QrelRecord:
    turn_id: str
    passage_id: str
    grade: int
    line: int


def qrels_records(
    path: str | Path, *, problems: Problems, min_grade: int = 0, max_grade: int = 4
) -> Iterator[QrelRecord]:
    """The well-formed lines of TREC qrels `qid 0 docid grade` (any whitespace), read one at a time; each
    bad line's problem goes to `problems`. A pair judged twice is not looked for here: that needs the
    whole file, which an import checks where it holds it (annotation/relevance/io.py)."""
    for number, line in read_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            problems.add(number, f"expected 4 columns 'qid 0 docid grade', found {len(parts)}")
            continue
        qid, _iteration, docid, grade_s = parts
        if problems.bad_id(number, qid, "turn id", MAX_TURN_ID) or problems.bad_id(
            number, docid, "passage id", MAX_PASSAGE_ID
        ):
            continue
        try:
            grade = int(grade_s) if len(grade_s) <= 12 else None
        except ValueError:
            grade = None
        if grade is None:
            problems.add(number, f"grade {excerpt(grade_s, 20)} is not an integer")
            continue
        if not min_grade <= grade <= max_grade:
            problems.add(number, f"grade {grade} is outside the scale {min_grade}-{max_grade}")
            continue
        yield QrelRecord(qid, docid, grade, number)
