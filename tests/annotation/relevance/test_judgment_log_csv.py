"""export_judgment_log: CSV of relevance and PTKB labels with assessor, time spent and timestamps."""

import csv
from datetime import datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.relevance.io import LOG_COLUMNS, judgment_log_lines, judgment_log_rows
from annotation.relevance.writer import relevance_judgment_submit
from annotation.services import judge_for_assessor
from core.csv_safe import SafeWriter, csv_cell
from core.ordering import natural_key
from tests.annotation.ptkb.test_ptkb_qrels_io import PtkbJudgmentFactory
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    PtkbStatementFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection, number="3")
    early, late = (
        TurnFactory(topic=topic, turn_id="3_2", position=2),
        TurnFactory(topic=topic, turn_id="3_10", position=10),
    )
    statement = PtkbStatementFactory(topic=topic, statement_id="4")
    alice = judge_for_assessor(user=UserFactory(username="alice"))
    machine = JudgeFactory(name="gpt-4o-rel")
    relevance_judgment_submit(judge=alice, turn=late, passage_id="p1", grade=3, time_spent_ms=1200)
    relevance_judgment_submit(judge=alice, turn=late, passage_id="p1", grade=4, time_spent_ms=800)  # revised
    relevance_judgment_submit(judge=alice, turn=early, passage_id="p9", grade=0, time_spent_ms=450)
    RelevanceJudgmentFactory(judge=machine, turn=early, passage_id="p9", grade=2)
    PtkbJudgmentFactory(judge=alice, turn=early, statement=statement, relevant=True, time_spent_ms=3000)
    RelevanceJudgmentFactory(judge=alice, grade=1)  # another collection
    return collection, alice, machine


def export(**options):
    out = StringIO()
    call_command("export_judgment_log", stdout=out, **options)
    return list(csv.DictReader(StringIO(out.getvalue())))


def test_it_writes_every_label_with_assessor_effort_and_timestamps(world):
    collection, alice, machine = world

    rows = export(collection=collection.name)

    assert list(rows[0]) == LOG_COLUMNS
    assert [
        (r["task"], r["judge"], r["username"], r["turn"], r["unit"], r["label"], r["time_spent_ms"])
        for r in rows
    ] == [
        ("relevance", "assessor:alice", "alice", "3_2", "p9", "0", "450"),
        ("relevance", "assessor:alice", "alice", "3_10", "p1", "4", "2000"),
        ("relevance", "gpt-4o-rel", "", "3_2", "p9", "2", ""),
        ("ptkb", "assessor:alice", "alice", "3_2", "4", "1", "3000"),
    ]
    revised = rows[1]
    assert datetime.fromisoformat(revised["updated_at"]) >= datetime.fromisoformat(revised["created_at"])
    stored = alice.relevancejudgments.get(passage_id="p1")
    assert revised["created_at"] == stored.created_at.isoformat()
    assert revised["updated_at"] == stored.updated_at.isoformat()


def test_it_filters_by_judge_and_task(world):
    collection, alice, machine = world

    only_alice_ptkb = export(collection=collection.name, judge=alice.name, task="ptkb")
    only_machine = export(collection=collection.name, judge=machine.name)

    assert [(r["task"], r["unit"]) for r in only_alice_ptkb] == [("ptkb", "4")]
    assert [(r["judge"], r["label"]) for r in only_machine] == [("gpt-4o-rel", "2")]


def test_it_writes_the_file_given_by_output(world, tmp_path):
    collection, _, _ = world
    path = tmp_path / "log.csv"
    err = StringIO()

    call_command("export_judgment_log", collection=collection.name, output=str(path), stderr=err)

    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 4
    assert err.getvalue().strip() == f"{path}: 4 judgments"


def test_it_rejects_an_unknown_judge_or_task(world):
    collection, _, _ = world
    with pytest.raises(CommandError, match="no judge named 'nobody'"):
        export(collection=collection.name, judge="nobody")
    with pytest.raises(CommandError, match="invalid choice: 'nuggets'"):
        call_command("export_judgment_log", "--collection", collection.name, "--task", "nuggets")
    with pytest.raises(ValueError, match="unknown task nuggets"):
        judgment_log_rows(collection=collection, tasks=["nuggets"])


def test_the_database_writes_and_orders_the_lines_as_python_would(world):
    # The log's lines are made by PostgreSQL: each must be what csv.writer writes of csv_cell's cells, and
    # the units of a turn must follow natural_key, whatever the ids hold.
    collection, _, _ = world
    turn = TurnFactory(topic=TopicFactory(collection=collection, number="1"), turn_id="1_1", position=1)
    odd = JudgeFactory(name='=odd, "judge"')
    units = [
        "p10", "p9", "p9a", "p", "p-2", "p_10", "doc:007", "doc:7b", "doc:8", "a.1", "a1", "a 1", "a/1", "10",
        "9", "x" + "9" * 30, "x" + "1" * 31, "=SUM(A1)", "-3", "+4.5e3", "@home", "\tt", "q,1", 'q"1', "q\n1",
        "é2", "e10", "Z1", "",
    ]  # fmt: skip
    for grade, unit in enumerate(units):
        RelevanceJudgmentFactory(judge=odd, turn=turn, passage_id=unit, grade=grade % 5)

    text = "".join(judgment_log_lines(collection=collection, judge=odd, tasks=["relevance"]))

    rows = list(csv.reader(StringIO(text)))[1:]
    assert [row[5] for row in rows] == [csv_cell(unit) for unit in sorted(units, key=natural_key)]
    # Each row written again by Python's writers from the unit as stored gives the same text.
    written = StringIO()
    ordered = sorted(units, key=natural_key)
    SafeWriter(written, lineterminator="\n").writerows(
        [*row[:5], unit, *row[6:]] for row, unit in zip(rows, ordered, strict=True)
    )
    assert text.split("\n", 1)[1] == written.getvalue()
    assert {row[0] for row in rows} == {"'" + odd.name}
