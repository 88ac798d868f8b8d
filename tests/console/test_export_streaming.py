"""The console's label downloads stream: the response is a StreamingHttpResponse whose first block is sent
while the database cursor still holds rows not yet read (nothing was read whole first), and the file read
back by its reference reader (ir_measures for qrels, the import's own parser for support labels) equals
what the database holds, in the order the commands have always written it."""

from __future__ import annotations

import json

import ir_measures
import pytest
from django.db import connection
from django.urls import reverse

from annotation.formats.base import Problems
from annotation.models import RelevanceJudgment, SupportJudgment
from annotation.relevance.io import judgment_log_lines
from annotation.selectors import qrels_dict
from annotation.support.formats import parse_support_labels
from core.ordering import natural_key
from core.streaming import CHUNK_ROWS
from tests.factories import (
    JudgeFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db

# Grades per turn: two cursor fetches, and over a block of text in all.
PER_TURN = 2 * CHUNK_ROWS


def _open_cursors() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_cursors WHERE name LIKE '_django_curs_%%'")
        return cursor.fetchone()[0]


@pytest.fixture
def graded(collection):
    """More grades than a cursor fetch, over turns whose ids sort differently as text and as people read
    them, with passage ids that sort differently by code point and by a language's collation."""
    judge = JudgeFactory(name="nist")
    turns = [
        TurnFactory(topic=TopicFactory(collection=collection, number=number), turn_id=f"{number}_1")
        for number in ("10", "9", "2")
    ]
    RelevanceJudgment.objects.bulk_create(
        RelevanceJudgment(judge=judge, turn=turn, passage_id=f"{prefix}{p:05d}", grade=p % 5)
        for turn in turns
        for p in range(PER_TURN // 2)
        for prefix in ("a-", "B-")
    )
    return judge


def test_the_qrels_download_streams_while_the_cursor_still_holds_rows(client, organiser, collection, graded):
    response = client.get(reverse("console-export", args=[collection.name, "qrels"]), {"judge": "nist"})

    assert response.status_code == 200
    assert response.streaming
    blocks = iter(response.streaming_content)
    first = next(blocks)
    assert first.startswith(b"2_1 0 B-00000 ")
    assert _open_cursors() == 1
    rest = b"".join(blocks)
    assert _open_cursors() == 0
    assert len((first + rest).splitlines()) == 3 * PER_TURN


def test_the_qrels_download_reads_back_in_ir_measures_as_stored_in_reading_order(
    client, organiser, collection, graded, tmp_path
):
    response = client.get(reverse("console-export", args=[collection.name, "qrels"]), {"judge": "nist"})
    path = tmp_path / "nist.qrels"
    path.write_bytes(response.getvalue())

    read: dict[str, dict[str, int]] = {}
    for qrel in ir_measures.read_trec_qrels(str(path)):
        read.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    assert read == qrels_dict(collection=collection, judge=graded)
    keys = [(line.split()[0], line.split()[2]) for line in path.read_text().splitlines()]
    assert keys == sorted(keys, key=lambda key: (natural_key(key[0]), key[1]))
    assert [turn for turn, _ in keys[::PER_TURN]] == ["2_1", "9_1", "10_1"]


def test_a_download_left_unread_closes_its_cursor(collection, graded):
    # What a response's close does to its body when the client leaves half way (Django closes the body).
    lines = judgment_log_lines(collection=collection, judge=graded)
    next(lines)  # the header
    next(lines)
    assert _open_cursors() == 1

    lines.close()

    assert _open_cursors() == 0


def test_the_support_labels_download_streams_and_reads_back_as_stored(
    client, organiser, collection, tmp_path
):
    judge = JudgeFactory(name="gpt-4o")
    labels = []
    for run_name in ("run-a", "Run-b"):
        run = RunFactory(collection=collection, name=run_name)
        for number in ("10", "9"):
            turn = TurnFactory(topic=TopicFactory(collection=collection, number=f"{number}{run_name}"))
            response = ResponseFactory(run=run, turn=turn)
            for index in range(3):
                sentence = ResponseSentenceFactory(response=response, index=index, citations=["p:1", "p:0"])
                for citation, passage in enumerate(sentence.citations):
                    labels.append(
                        SupportJudgment(
                            judge=judge,
                            sentence=sentence,
                            citation_index=citation,
                            passage_id=passage,
                            label=("FS", "PS", "NS")[(index + citation) % 3],
                        )
                    )
    SupportJudgment.objects.bulk_create(labels)

    response = client.get(
        reverse("console-export", args=[collection.name, "support-labels"]), {"judge": "gpt-4o"}
    )

    assert response.status_code == 200
    assert response.streaming
    path = tmp_path / "support.jsonl"
    path.write_bytes(response.getvalue())
    problems = Problems(str(path))
    read = parse_support_labels(path, problems=problems)
    assert problems.items == []
    stored = {
        (label.sentence.response.run.name, label.sentence.response.turn.turn_id, label.sentence.index)
        + (label.passage_id,): label.label
        for label in labels
    }
    assert {(r.run_id, r.topic_id, r.sentence_index, r.passage_id): r.label for r in read} == stored
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    order = [(row["run_id"], row["topic_id"], row["sentence_index"]) for row in rows]
    assert order == sorted(order)
    assert [row["passage_id"] for row in rows[:2]] == ["p:1", "p:0"]
