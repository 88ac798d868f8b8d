"""PTKB qrels `turn 0 statement_id 0|1` (text only; annotation/ptkb/io.py takes them in and out of the
database)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from annotation.formats.base import Problems, read_lines


@dataclass(slots=True)
class PtkbQrelRecord:
    turn_id: str
    statement_id: str
    relevant: bool
    line: int


def ptkb_qrels_records(path: str | Path, *, problems: Problems) -> Iterator[PtkbQrelRecord]:
    """The well-formed lines of PTKB qrels `turn 0 statement_id 0|1` (any whitespace), read one at a time;
    each bad line's problem goes to `problems`. A pair labelled twice is looked for by the caller."""
    for number, line in read_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            problems.add(number, f"expected 4 columns 'turn 0 statement_id 0|1', found {len(parts)}")
        elif parts[3] not in {"0", "1"}:
            problems.add(number, f"label {parts[3]!r} is not 0 or 1")
        else:
            yield PtkbQrelRecord(parts[0], parts[2], parts[3] == "1", number)
