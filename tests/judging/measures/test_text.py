"""The measures' own copies of `plural` and `natural_key` say and sort as the originals do."""

from __future__ import annotations

import pytest

from annotation.selectors import natural_key as annotation_natural_key
from core.wording import plural as core_plural
from judging.measures.text import natural_key, plural

NOUNS = ["unit", "batch", "query", "HIT", "day", "box", "wish", "analysis"]


@pytest.mark.parametrize("noun", NOUNS)
@pytest.mark.parametrize("count", [0, 1, 2, 11])
def test_plural_says_what_core_wording_says(count, noun):
    assert plural(count, noun) == core_plural(count, noun)
    assert plural(count, noun, "analyses") == core_plural(count, noun, "analyses")


IDS = [
    "10_2",
    "9_12",
    "[10]",
    "[9]",
    "p3:120",
    "p3:9",
    "2-1",
    "2_10",
    "a",
    "",
    "x²",
    "007",
    "12-3-4",
    "ab10cd2",
]


def test_natural_key_sorts_as_annotation_selectors_does():
    assert [natural_key(value) for value in IDS] == [annotation_natural_key(value) for value in IDS]
    assert sorted(IDS, key=natural_key) == sorted(IDS, key=annotation_natural_key)
