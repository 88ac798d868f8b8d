"""PTKB qrels: export in a stable order, import all-or-nothing with file:line errors, idempotent."""

from io import StringIO

import factory
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.formats.base import ImportFailed
from annotation.models import Judge, PtkbJudgment
from annotation.ptkb.io import ptkb_qrels_import, ptkb_qrels_lines
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    PtkbStatementFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


class PtkbJudgmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PtkbJudgment

    judge = factory.SubFactory(JudgeFactory)
    turn = factory.SubFactory(TurnFactory)
    statement = factory.SubFactory(PtkbStatementFactory, topic=factory.SelfAttribute("..turn.topic"))
    relevant = True


@pytest.fixture
def world():
    """Two conversations, '9' and '10', with turns 9_2, 9_12, 10_1 and PTKB statements 1, 2, 10 each."""
    collection = CollectionFactory(name="ptkb")
    topics = {n: TopicFactory(collection=collection, number=n) for n in ("9", "10")}
    turns = {
        tid: TurnFactory(topic=topics[tid.split("_")[0]], turn_id=tid, position=int(tid.split("_")[1]))
        for tid in ("9_2", "9_12", "10_1")
    }
    statements = {
        (n, sid): PtkbStatementFactory(topic=topic, statement_id=sid)
        for n, topic in topics.items()
        for sid in ("1", "2", "10")
    }
    return collection, turns, statements


def labels(judge):
    return {
        (j.turn.turn_id, j.statement.statement_id): j.relevant
        for j in PtkbJudgment.objects.filter(judge=judge).select_related("turn", "statement")
    }


def test_it_exports_turns_and_statements_in_natural_order(world):
    collection, turns, statements = world
    judge = JudgeFactory()
    for tid, sid, relevant in [
        ("10_1", "1", True),
        ("9_12", "2", False),
        ("9_2", "10", True),
        ("9_2", "2", False),
    ]:
        PtkbJudgmentFactory(
            judge=judge, turn=turns[tid], statement=statements[tid.split("_")[0], sid], relevant=relevant
        )
    PtkbJudgmentFactory(turn=turns["9_2"], statement=statements["9", "1"])  # another judge

    lines = list(ptkb_qrels_lines(collection=collection, judge=judge))

    assert lines == ["9_2 0 2 0\n", "9_2 0 10 1\n", "9_12 0 2 0\n", "10_1 0 1 1\n"]


def test_it_round_trips_through_a_file_and_a_second_import_changes_nothing(world, tmp_path):
    collection, _, _ = world
    path = tmp_path / "ptkb.qrels"
    path.write_text("9_2 0 1 1\n9_2 0 2 0\n\n10_1   0 10  1\n")
    judge = JudgeFactory()

    first = ptkb_qrels_import(path=path, collection=collection, judge=judge)
    second = ptkb_qrels_import(path=path, collection=collection, judge=judge)

    assert (first.created, first.updated, first.unchanged) == (3, 0, 0)
    assert (second.created, second.updated, second.unchanged) == (0, 0, 3)
    assert labels(judge) == {("9_2", "1"): True, ("9_2", "2"): False, ("10_1", "10"): True}
    assert (
        "".join(ptkb_qrels_lines(collection=collection, judge=judge)) == "9_2 0 1 1\n9_2 0 2 0\n10_1 0 10 1\n"
    )


def test_it_updates_changed_labels_and_with_replace_deletes_the_rest(world, tmp_path):
    collection, _, _ = world
    judge = JudgeFactory()
    path = tmp_path / "ptkb.qrels"
    path.write_text("9_2 0 1 1\n9_2 0 2 0\n")
    ptkb_qrels_import(path=path, collection=collection, judge=judge)
    path.write_text("9_2 0 1 0\n")

    kept = ptkb_qrels_import(path=path, collection=collection, judge=judge)
    replaced = ptkb_qrels_import(path=path, collection=collection, judge=judge, replace=True)

    assert (kept.updated, kept.deleted) == (1, 0)
    assert (replaced.unchanged, replaced.deleted) == (1, 1)
    assert labels(judge) == {("9_2", "1"): False}


def test_it_rejects_a_bad_file_whole_with_every_line_named(world, tmp_path):
    collection, _, _ = world
    judge = JudgeFactory()
    path = tmp_path / "bad.qrels"
    path.write_text(
        "9_2 0 1 1\n"  # fine
        "9_2 0 2 yes\n"  # not 0/1
        "9_99 0 1 1\n"  # unknown turn
        "10_1 0 7 1\n"  # no such statement in conversation 10
        "9_2 0 1 0\n"  # duplicate
        "9_2 0 1\n"  # 3 columns
    )

    with pytest.raises(ImportFailed) as raised:
        ptkb_qrels_import(path=path, collection=collection, judge=judge)

    message = str(raised.value)
    assert f"{path}:2: label 'yes' is not 0 or 1" in message
    assert f"{path}:5: 9_2 1 is labelled twice (first on line 1)" in message
    assert f"{path}:6: expected 4 columns" in message
    assert PtkbJudgment.objects.count() == 0


def test_it_rejects_unknown_turns_and_statements_of_another_conversation(world, tmp_path):
    collection, _, _ = world
    path = tmp_path / "bad.qrels"
    path.write_text("9_2 0 1 1\n9_99 0 1 1\n10_1 0 7 1\n")

    with pytest.raises(ImportFailed) as raised:
        ptkb_qrels_import(path=path, collection=collection, judge=JudgeFactory())

    message = str(raised.value)
    assert f"{path}:2: turn 9_99 is not in collection ptkb" in message
    assert f"{path}:3: conversation of turn 10_1 has no PTKB statement 7" in message
    assert PtkbJudgment.objects.count() == 0


def test_import_command_creates_the_judge_and_export_command_writes_the_same_lines(world, tmp_path):
    collection, _, _ = world
    path = tmp_path / "ptkb.qrels"
    path.write_text("9_12 0 10 1\n9_12 0 2 0\n")
    out = StringIO()

    call_command("import_ptkb_qrels", str(path), collection=collection.name, judge="nist-ptkb", stdout=out)
    call_command("import_ptkb_qrels", str(path), collection=collection.name, judge="nist-ptkb", stdout=out)
    exported = StringIO()
    call_command("export_ptkb_qrels", collection=collection.name, judge="nist-ptkb", stdout=exported)
    written = tmp_path / "out.qrels"
    call_command("export_ptkb_qrels", collection=collection.name, judge="nist-ptkb", output=str(written))

    assert out.getvalue().splitlines() == [
        f"{path}: 2 created, 0 updated, 0 unchanged",
        f"{path}: 0 created, 0 updated, 2 unchanged",
    ]
    assert exported.getvalue() == "9_12 0 2 0\n9_12 0 10 1\n"
    assert written.read_text() == exported.getvalue()
    assert Judge.objects.get(name="nist-ptkb").kind == Judge.Kind.IMPORTED


def test_import_command_turns_a_bad_file_into_a_command_error(world, tmp_path):
    collection, _, _ = world
    path = tmp_path / "bad.qrels"
    path.write_text("9_2 0 1 1\n9_2 0 2 2\n")

    with pytest.raises(CommandError, match=r"nothing was imported:\n.*bad.qrels:2: label '2' is not 0 or 1"):
        call_command("import_ptkb_qrels", str(path), collection=collection.name, judge="nist-ptkb")

    assert PtkbJudgment.objects.count() == 0
    assert not Judge.objects.filter(name="nist-ptkb").exists()


def test_export_command_rejects_an_unknown_judge(world):
    collection, _, _ = world
    with pytest.raises(CommandError, match="no judge named 'nobody'"):
        call_command("export_ptkb_qrels", collection=collection.name, judge="nobody")
