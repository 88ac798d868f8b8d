"""What every judgment writer shares: the refusal they raise, what a bulk writer reports, how time adds up.

A `*_submit` records one judge's label of one unit: a revision replaces the label and the time spent on it
adds up. A bulk `*_upsert` restates what a file, a crowd provider or an aggregate says now, so it is
idempotent: a row that says what is stored changes nothing, and a time it gives replaces the stored one
(the same assignment synced twice must not count its time twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


class JudgmentRefused(Exception):
    """The label does not fit its unit (say, a PTKB statement of another conversation)."""


Outcome = Literal["created", "updated", "unchanged"]


@dataclass
class Written:
    """What a bulk writer did, row by row."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0


def time_added(stored: int | None, spent: int | None) -> int | None:
    return stored if spent is None else (stored or 0) + spent
