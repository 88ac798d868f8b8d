"""CSV that a spreadsheet opens as data: every CSV Assay writes goes through these writers.

Run, judge, topic and passage names come from imported files and people. A cell that starts with '=',
'+', '-', '@', a tab or a carriage return is read as a formula by Excel, LibreOffice and Google Sheets
(`=1+2+cmd|' /C calc'!A0` in a run name would run in the organiser's spreadsheet), so such a cell gets a
leading apostrophe, as OWASP recommends for CSV injection; spreadsheets show it as text. Numbers are left
as they are: '-0.25' is a negative kappa, not a formula.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any, Literal

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: object) -> object:
    """`value`, or `'value` when a spreadsheet would read the text as a formula."""
    if isinstance(value, str) and value[:1] in FORMULA_PREFIXES and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


class SafeWriter:
    """csv.writer whose rows are written through `csv_cell`."""

    def __init__(self, handle: IO[str], **options: Any):
        self._writer = csv.writer(handle, **options)

    def writerow(self, row: Iterable[object]) -> object:
        return self._writer.writerow([csv_cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for row in rows:
            self.writerow(row)


# csv.DictWriter is generic in typeshed only: subscripted at run time it raises TypeError.
if TYPE_CHECKING:
    _DictWriter = csv.DictWriter[str]
else:
    _DictWriter = csv.DictWriter


class SafeDictWriter(_DictWriter):
    """csv.DictWriter whose header and rows are written through `csv_cell`."""

    def __init__(
        self,
        handle: IO[str],
        fieldnames: Iterable[str],
        *,
        restval: object = "",
        extrasaction: Literal["raise", "ignore"] = "raise",
        **options: Any,
    ):
        super().__init__(handle, list(fieldnames), restval=restval, extrasaction=extrasaction, **options)
        self.writer = SafeWriter(handle, **options)  # type: ignore[assignment]


def csv_writer(handle: IO[str], **options: Any) -> SafeWriter:
    return SafeWriter(handle, **options)
