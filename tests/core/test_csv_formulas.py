"""CSV downloads and `--format csv` write names a spreadsheet would run as formulas as plain text."""

from __future__ import annotations

import csv
import io
from io import StringIO

import pytest
from django.core.management import call_command

from core.csv_safe import SafeDictWriter, csv_cell, csv_writer
from judging.agreement.reports import rank_csv
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
)

EVIL_RUN = "=1+2+cmd|' /C calc'!A0"
EVIL_JUDGE = '=HYPERLINK("http://evil.example","x")'


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (EVIL_RUN, "'" + EVIL_RUN),
        ("+1+cmd", "'+1+cmd"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-0.25", "-0.25"),
        ("+3", "+3"),
        ("1e-5", "1e-5"),
        ("bm25", "bm25"),
        ("", ""),
        (-0.5, -0.5),
        (None, None),
    ],
)
def test_a_cell_a_spreadsheet_would_run_is_written_as_text(value, written):
    assert csv_cell(value) == written


def test_both_writers_neutralise_every_cell_header_included():
    rows, dicts = io.StringIO(), io.StringIO()
    csv_writer(rows).writerow([EVIL_RUN, -0.5, "ok"])
    writer = SafeDictWriter(dicts, fieldnames=["=a", "b"], lineterminator="\n")
    writer.writeheader()
    writer.writerow({"=a": "@x", "b": "-1"})

    assert list(csv.reader(io.StringIO(rows.getvalue()))) == [["'" + EVIL_RUN, "-0.5", "ok"]]
    assert list(csv.reader(io.StringIO(dicts.getvalue()))) == [["'=a", "b"], ["'@x", "-1"]]


def test_the_ranking_csv_writes_a_formula_run_name_as_text():
    report = {
        "judges": [EVIL_JUDGE, "b"],
        "runs": [{"run": EVIL_RUN, "score_a": -0.25, "score_b": 0.5, "rank_a": 1, "rank_b": 2}],
    }

    rows = list(csv.reader(io.StringIO(rank_csv(report))))

    assert rows[1] == ["'" + EVIL_RUN, "-0.25", "0.5", "1", "2"]
    assert rows[0][1] == f"score_{EVIL_JUDGE}"  # not at the start of the cell: harmless


@pytest.mark.django_db
def test_agreement_format_csv_writes_formula_judge_names_as_text():
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    a, b = JudgeFactory(name=EVIL_JUDGE), JudgeFactory(name="@SUM(A1)")
    for i, (ga, gb) in enumerate([(0, 0), (1, 2), (3, 3), (4, 2)]):
        RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=f"p{i}", grade=ga)
        RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=f"p{i}", grade=gb)
    out = StringIO()

    call_command(
        "agreement",
        "--collection",
        collection.name,
        "--task",
        "relevance",
        "--judges",
        a.name,
        b.name,
        "--format",
        "csv",
        stdout=out,
    )

    row = list(csv.reader(io.StringIO(out.getvalue())))[1]
    assert row[1:4] == ["'" + EVIL_JUDGE, "'@SUM(A1)", "all"]


@pytest.mark.django_db
def test_the_judgment_log_writes_a_formula_judge_name_as_text():
    turn = TurnFactory()
    RelevanceJudgmentFactory(judge=JudgeFactory(name=EVIL_JUDGE), turn=turn, passage_id="-p1", grade=2)
    out = StringIO()

    call_command("export_judgment_log", "--collection", turn.collection.name, stdout=out)

    [row] = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert (row["judge"], row["unit"]) == ("'" + EVIL_JUDGE, "'-p1")
