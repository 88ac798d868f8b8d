"""Which pairs the judges agree on, and with which grade, and which go to the adjudicator: pure rules
over grades, no database."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Pair = tuple[int, str]  # (turn pk, passage id)


@dataclass(frozen=True)
class DisputeRule:
    """A pair is disputed when its highest and lowest grades differ by at least `min_difference`, or,
    with `across_threshold`, when some grades are relevant (at least `relevant_from`) and some not."""

    min_difference: int = 2
    across_threshold: bool = False
    relevant_from: int = 2

    def disputed(self, grades: Sequence[int]) -> bool:
        if max(grades) - min(grades) >= self.min_difference:
            return True
        relevant = [grade >= self.relevant_from for grade in grades]
        return self.across_threshold and any(relevant) and not all(relevant)


def agreed_grade(grades: Sequence[int]) -> int:
    """The grade of a pair the judges agree on: the lower median of their grades.

    Equal grades give that grade. Grades within the dispute rule's difference (0 and 1 with
    --min-difference 2) give the lower median: with two judges the lower grade, so a pair is never
    raised above what half of its judges gave, and with three or more the middle grade, so one outlier
    does not move it.
    """
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


@dataclass(frozen=True)
class Split:
    agreed: dict[Pair, int]  # pair -> agreed grade
    disputed: list[Pair]  # in (turn pk, passage id) order
    single: int  # pairs only one of the judges graded: neither agreed nor disputed


def split_pairs(by_pair: Mapping[Pair, Sequence[int]], rule: DisputeRule) -> Split:
    """Part the pairs two or more judges graded into agreed (with their grade) and disputed ones."""
    agreed: dict[Pair, int] = {}
    disputed: list[Pair] = []
    single = 0
    for pair in sorted(by_pair):
        grades = by_pair[pair]
        if len(grades) < 2:
            single += 1
        elif rule.disputed(grades):
            disputed.append(pair)
        else:
            agreed[pair] = agreed_grade(grades)
    return Split(agreed, disputed, single)
