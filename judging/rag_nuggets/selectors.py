"""The tables of the nugget score pages: the four scores of every run ranked by one of them, and one run's
scores topic by topic, drawn from one evaluation of `nugget_scores` (the pages' stored reports,
`judging.rag_nuggets.reports`)."""

from __future__ import annotations

from dataclasses import dataclass

from judging.measures.rag_nuggets import SCORE_NAMES, NuggetScores, Scores, vital_unlabelled

# TREC 2024 RAG's nugget evaluation reports the strict vital score first: the pages and the calibration
# rank by it unless told otherwise.
DEFAULT_SCORE = "strict_vital_score"


@dataclass(frozen=True)
class RunRow:
    run: str
    rank: int
    scores: Scores
    topics: int
    answered: int

    @property
    def values(self) -> list[float]:
        """The four scores in SCORE_NAMES order, as a table's columns."""
        return [self.scores[name] for name in SCORE_NAMES]  # type: ignore[literal-required]


@dataclass(frozen=True)
class ScoreTable:
    order: str
    rows: list[RunRow]
    scores: NuggetScores

    @property
    def vital_unlabelled(self) -> bool:
        """No scored nugget has a vital/okay label from the importance judge: the vital scores are 0 for
        want of labels, not of support."""
        return vital_unlabelled(self.scores)


def ranks(values: list[float]) -> list[int]:
    """Competition ranks, highest first: tied values share the best rank (1, 2, 2, 4)."""
    return [1 + sum(other > value for other in values) for value in values]


def run_topic_counts(scores: NuggetScores) -> dict[str, tuple[int, int]]:
    """{run: (topics scored, topics answered)} of an evaluation."""
    counts: dict[str, tuple[int, int]] = {}
    for answer in scores["answers"]:
        topics, answered = counts.get(answer["run_id"], (0, 0))
        counts[answer["run_id"]] = (topics + 1, answered + answer.get("answered", True))
    return counts


def score_table(*, scores: NuggetScores, topics: dict[str, tuple[int, int]], order: str) -> ScoreTable:
    """The table of `scores` ranked by `order` (ties by run name); `topics` gives each run's topics scored
    and answered (`run_topic_counts`), so that a stored table needs not keep every answer."""
    if order not in SCORE_NAMES:
        raise ValueError(f"unknown score {order!r}; choose one of {', '.join(SCORE_NAMES)}")
    runs = sorted(scores["runs"])
    values = [scores["runs"][run][order] for run in runs]  # type: ignore[literal-required]
    rows = [
        RunRow(
            run=run,
            rank=rank,
            scores=scores["runs"][run],
            topics=topics.get(run, (0, 0))[0],
            answered=topics.get(run, (0, 0))[1],
        )
        for run, rank in zip(runs, ranks(values), strict=True)
    ]
    rows.sort(key=lambda row: (row.rank, row.run))
    return ScoreTable(order=order, rows=rows, scores=scores)


@dataclass(frozen=True)
class TopicRow:
    qid: str
    values: list[float]
    # False: the run gave no answer to the topic, which scores 0 (nuggetizer's all-not_support record).
    answered: bool
    nuggets: int | None


def run_topics(table: ScoreTable, run: str) -> list[TopicRow]:
    """The run's per-topic rows of a table, in the scores' topic order."""
    return [
        TopicRow(
            qid=answer["qid"],
            values=[answer[name] for name in SCORE_NAMES],  # type: ignore[literal-required]
            answered=answer.get("answered", True),
            nuggets=answer.get("nuggets"),
        )
        for answer in table.scores["answers"]
        if answer["run_id"] == run
    ]
