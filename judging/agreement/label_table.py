"""Labels of several judges on one task, coded once so that comparing any two of them is a mask.

The campaign report compares every pair of some fifteen judges on tens of thousands of units; the
dicts `labels_by_judge` reads are intersected and sorted once here instead of once per pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from judging.agreement.selectors import LabelsByJudge, Unit, task_spec
from judging.measures.agreement import Pairs


@dataclass(frozen=True)
class LabelTable:
    """The labels several judges gave on one task, coded once so that any two judges' pairs are a mask.

    `codes[row, unit]` is the position on the task's scale of the label the judge of `rows` gave the unit,
    -1 where it gave none. Units are in the order `pairs_from_labels` uses, so `pairs(a, b)` equals
    `pairs_from_labels(task, by_judge[a], by_judge[b])`.
    """

    labels: tuple[Any, ...]
    rows: dict[int, int]
    codes: np.ndarray
    unit_topic: np.ndarray
    topics: tuple[str, ...]

    @classmethod
    def of(cls, task: str, by_judge: LabelsByJudge) -> LabelTable:
        """The table of `labels_by_judge`'s answer."""
        labels = task_spec(task).labels
        position = {label: i for i, label in enumerate(labels)}
        topic_of: dict[Unit, str] = {}
        for units_labelled in by_judge.values():
            topic_of.update(
                zip(units_labelled.keys(), map(itemgetter(0), units_labelled.values()), strict=True)
            )
        units = list(topic_of)
        # numpy sorts the unit ids as text as Python does, in a fraction of the time.
        order = np.lexsort(
            (np.array([str(u[1]) for u in units], dtype=str), np.array([str(u[0]) for u in units], dtype=str))
        )
        column = dict(zip(units, np.argsort(order).tolist(), strict=True))
        codes = np.full((len(by_judge), len(units)), -1, dtype=np.int64)
        for row, units_labelled in enumerate(by_judge.values()):
            try:
                coded = list(map(position.__getitem__, map(itemgetter(1), units_labelled.values())))
            except KeyError as exc:
                raise ValueError(f"label {exc.args[0]!r} is not one of {list(labels)}") from None
            codes[row, list(map(column.__getitem__, units_labelled.keys()))] = coded
        topics, unit_topic = np.unique(
            np.array(list(topic_of.values()), dtype=str)[order], return_inverse=True
        )
        return cls(
            labels=labels,
            rows={judge_id: row for row, judge_id in enumerate(by_judge)},
            codes=codes,
            unit_topic=unit_topic.reshape(-1).astype(np.int64),
            topics=tuple(str(t) for t in topics.tolist()),
        )

    def pairs(self, judge_a: int, judge_b: int) -> Pairs:
        """The units both judges labelled, as coded pairs."""
        a, b = self.codes[self.rows[judge_a]], self.codes[self.rows[judge_b]]
        shared = (a >= 0) & (b >= 0)
        # Topic codes are positions in the sorted topic names, so the topics these units fall in keep
        # that order and are numbered as encode_pairs numbers them.
        present, topic = np.unique(self.unit_topic[shared], return_inverse=True)
        return Pairs(
            a=a[shared],
            b=b[shared],
            topic=topic.reshape(-1).astype(np.int64),
            labels=self.labels,
            topics=tuple(self.topics[i] for i in present.tolist()),
        )
