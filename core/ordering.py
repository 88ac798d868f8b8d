"""Ordering ids the way people read them, shared by the apps and by the pure statistics."""

from __future__ import annotations

import re

_DIGIT_RUNS = re.compile(r"([0-9]+)")


def natural_key(value: str) -> tuple[tuple[int, int | str], ...]:
    """Sort ids the way people read them: '10_2' after '9_12', '[10]' after '[9]', 'p3:120' after 'p3:9'.

    Runs of digits compare as numbers and the text between them as text; each part is tagged so a
    number is never compared with text. '-' reads as '_', as in iKAT turn ids written either way.
    """
    return tuple(
        # The runs split out are ASCII digits; '²' alone passes isdigit() but is no number int() reads.
        (0, int(part)) if _DIGIT_RUNS.fullmatch(part) else (1, part)
        for part in _DIGIT_RUNS.split(value.replace("-", "_"))
        if part
    )
