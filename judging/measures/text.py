"""Wording and ordering the measures share with the rest of Assay.

The measures import nothing of Assay's, so they carry their own copies of two small helpers:
`core.wording.plural` and `annotation.selectors.natural_key`. tests/judging/measures/test_text.py keeps
each equal to its original.
"""

from __future__ import annotations

import re

_SIBILANT = ("s", "x", "z", "ch", "sh")
_DIGIT_RUNS = re.compile(r"([0-9]+)")


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun` agreeing: plural(1, "unit") is "1 unit", plural(0, "unit") "0 units"."""
    if count == 1:
        return f"{count} {noun}"
    if many:
        return f"{count} {many}"
    if noun.endswith(_SIBILANT):
        return f"{count} {noun}es"
    if len(noun) > 1 and noun.endswith("y") and noun[-2] not in "aeiou":
        return f"{count} {noun[:-1]}ies"
    return f"{count} {noun}s"


def natural_key(value: str) -> tuple[tuple[int, int | str], ...]:
    """Sort ids the way people read them: '10_2' after '9_12', '[10]' after '[9]', 'p3:120' after 'p3:9'."""
    return tuple(
        (0, int(part)) if _DIGIT_RUNS.fullmatch(part) else (1, part)
        for part in _DIGIT_RUNS.split(value.replace("-", "_"))
        if part
    )
