"""Counts in messages that agree with their nouns.

Templates say "1 unit" through Django's `pluralize`; commands, flash messages and job notes are built in
Python and say it through `plural`, so that no message reads "1 units" or "over 1 turns".
"""

from __future__ import annotations

_SIBILANT = ("s", "x", "z", "ch", "sh")


def plural_of(noun: str) -> str:
    """The regular English plural of `noun` (of its last word): unit -> units, batch -> batches,
    query -> queries, HIT -> HITs. Irregular nouns are given to `plural` instead."""
    if noun.endswith(_SIBILANT):
        return noun + "es"
    if len(noun) > 1 and noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun` agreeing: plural(1, "unit") is "1 unit", plural(0, "unit") "0 units";
    `many` gives an irregular plural (plural(2, "analysis", "analyses"))."""
    return f"{count} {noun if count == 1 else (many or plural_of(noun))}"
