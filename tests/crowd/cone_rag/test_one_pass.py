"""CONE-RAG crowd files name every problem in one pass: bad lines, turns the collection lacks and
unmapped runs together, in line order, nothing stored."""

from __future__ import annotations

import pytest

from annotation.formats.base import MAX_PROBLEMS, ImportFailed
from annotation.models import NtrJudgment, Response
from crowd.cone_rag.io import cone_rag_labels_import, cone_rag_responses_import
from tests.factories import JudgeFactory, RunFactory, TopicFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    topic = TopicFactory(number="3")
    TurnFactory(topic=topic, collection=topic.collection, turn_id="3_1", position=1)
    return topic.collection


def test_a_responses_file_names_unknown_turns_with_its_bad_responses(collection, tmp_path):
    path = tmp_path / "responses.json"
    path.write_text('{\n"9_9": {"A": "an answer"},\n"3_1": {"A": 7}\n}\n', encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        cone_rag_responses_import(path=path, collection=collection)

    assert [p.removeprefix(f"{path}:") for p in failed.value.problems] == [
        "2: turn 9_9 is not in collection " + collection.name + " (import its topics first)",
        "3: turn 3_1, run A: response must be a string, not int",
    ]
    assert not Response.objects.exists()


def test_a_labels_file_names_unknown_turns_and_unmapped_runs_with_its_bad_lines(collection, tmp_path):
    RunFactory(collection=collection, name="alpha")
    path = tmp_path / "labels.tsv"
    lines = ["1_3_1_1_A\t1", "1_9_9_1_A\t1", "1_3_1_2_A\tyes", "1_3_1_1_B\t0"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        cone_rag_labels_import(
            path=path,
            collection=collection,
            nugget_judge=JudgeFactory(name="gold"),
            label_judge_name="crowd",
            aliases={"A": "alpha", "C": "gamma"},
        )

    assert failed.value.problems == [
        f"{path}: --alias C=gamma: no run named 'gamma' in collection {collection.name}",
        f"{path}:1: turn 3_1 has no nugget [1] of judge gold",
        f"{path}:2: turn 9_9 is not in collection {collection.name} (import its topics first)",
        f"{path}:3: label 'yes' must be 0 or 1",
        f"{path}:4: run alias 'B' is not mapped: add --alias B=RUN",
    ]
    assert not NtrJudgment.objects.exists()


def test_a_labels_file_counts_every_bad_line(collection, tmp_path):
    path = tmp_path / "labels.tsv"
    # Each good line names an unmapped alias: 55 bad lines and 55 unmapped aliases, 110 problems.
    lines = "".join(f"1_3_1_{i}_A\t1\nbad line {i}\n" for i in range(1, MAX_PROBLEMS + 6))
    path.write_text(lines, encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        cone_rag_labels_import(
            path=path,
            collection=collection,
            nugget_judge=JudgeFactory(),
            label_judge_name="crowd",
            aliases={},
        )

    assert (len(failed.value.problems), failed.value.more) == (MAX_PROBLEMS, 60)
